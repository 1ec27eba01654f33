package tasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mainIn runs fn as a target through Main in a workspace at root, as `go run
// mage.go` does, and returns what it wrote on standard error.
func mainIn(t *testing.T, root string, fn func(ctx context.Context, w *Workspace) error) string {
	t.Helper()
	t.Chdir(root)
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	defer f.Close()
	old := os.Stderr
	os.Stderr = f
	err = Main(context.Background(), fn)
	os.Stderr = old
	require.NoError(t, err)
	out, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	return string(out)
}

// Every target creates OUTPUT_DIR before it runs, purge included: on a
// workspace that has none, purge must not claim it removed a folder.
func TestPurgeTargetSaysOnlyWhatThePurgeRemoved(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), nil, 0o644))
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("RIVAL_CONFIG", "")
	purge := func(ctx context.Context, w *Workspace) error { return w.Purge(false) }
	output := filepath.Join(root, "output")

	out := mainIn(t, root, purge)
	assert.Contains(t, out, "purge: OUTPUT_DIR ("+output+") does not exist; nothing to remove")
	assert.NotContains(t, out, "removed the empty folder")
	assert.NoDirExists(t, output, "the folder the invocation made for itself goes too")

	// A folder an earlier target left empty was there before the purge: saying it went is true.
	mainIn(t, root, func(context.Context, *Workspace) error { return nil })
	require.DirExists(t, output)
	out = mainIn(t, root, purge)
	assert.Contains(t, out, "held nothing to remove; removed the empty folder")
	assert.NoDirExists(t, output)

	// A folder with results lists them.
	mainIn(t, root, func(context.Context, *Workspace) error { return nil })
	require.NoError(t, os.WriteFile(filepath.Join(output, "train_x.json"), []byte("{}"), 0o644))
	out = mainIn(t, root, purge)
	assert.Contains(t, out, "1 files in 0 folders", "the marker is not counted")
	assert.Contains(t, out, "train_x.json")
	assert.NoDirExists(t, output)
}
