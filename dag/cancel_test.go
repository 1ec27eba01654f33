package dag

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
)

// Ctrl-C or SIGTERM while a hit is being looked up or restored stops the
// task: the cache's read ends with the context, and the task neither runs
// nor leaves an output behind.
func TestCancelledRestoreNeitherRunsNorWrites(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	require.NoError(t, err)
	ws := t.TempDir()
	in, out := filepath.Join(ws, "in"), filepath.Join(ws, "out")
	require.NoError(t, os.WriteFile(in, []byte("one"), 0o644))
	runs := 0
	task := func() *Task {
		return &Task{ID: "copy", Files: []string{in}, Outputs: []Output{{Path: out}}, Run: func(ctx context.Context, x *Exec) error {
			runs++
			return cache.WriteFileAtomic(out, []byte("made"), 0o644)
		}}
	}
	require.NoError(t, (&Runner{Cache: c, Root: ws, Out: io.Discard}).Run(context.Background(), task()))
	require.Equal(t, 1, runs)
	require.NoError(t, os.Remove(out))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.Context = ctx
	err = (&Runner{Cache: c, Root: ws, Out: io.Discard}).Run(ctx, task())
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, runs, "a cancelled lookup does not run the task")
	assert.NoFileExists(t, out)

	c.Context = nil
	tk := task()
	require.NoError(t, (&Runner{Cache: c, Root: ws, Out: io.Discard}).Run(context.Background(), tk))
	assert.True(t, tk.Cached(), "the record survived the cancelled read")
}
