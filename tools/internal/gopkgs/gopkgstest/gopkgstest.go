// Package gopkgstest makes the small made-up modules that the tests of the commands under tools
// read with go list.
package gopkgstest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Module returns a new temporary folder holding the go.mod of module example.com/m.
func Module(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	Write(t, dir, "go.mod", "module example.com/m\n\ngo 1.26\n")
	return dir
}

// Write writes src to the file name (slash-separated, relative to dir), making its folders.
func Write(t testing.TB, dir, name, src string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
}
