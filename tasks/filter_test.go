package tasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filter:file takes its paths as the shell that typed them sees them:
// relative to the current directory.
func TestFilterFileTargetReadsPathsFromTheCurrentDirectory(t *testing.T) {
	w, log := newWorkspace(t, "FILTER_MIN_CHARS=10\nFILTER_MIN_WORDS=2\n")
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.WriteFile("in.jsonl", []byte(`{"text":"hello there, world"}`+"\n"+`{"text":"hi"}`+"\n"), 0o644))

	require.NoError(t, w.FilterFileTarget(context.Background(), "in.jsonl", filepath.Join("out", "kept.jsonl")))
	kept, err := os.ReadFile(filepath.Join(dir, "out", "kept.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, `{"text":"hello there, world"}`+"\n", string(kept))
	assert.Contains(t, log.String(), "kept 1 of 2 documents; dropped 1 under the character minimum")
}
