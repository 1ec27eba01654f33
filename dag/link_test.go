package dag

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
)

// TestEditedSharedOutputIsRebuilt: an uncompressed output shares its blob's
// bytes (a hard link, or a clone); a write into the workspace file that gets
// through (as root, or after a chmod) is never served back by the cache: the
// next run sees the change, finds the blob changed too, drops it and runs the
// task again, restoring what the task writes.
func TestEditedSharedOutputIsRebuilt(t *testing.T) {
	t.Setenv(cache.LinkEnv, "")
	root := t.TempDir()
	c, err := cache.Open(filepath.Join(root, "cache"))
	require.NoError(t, err)
	ws := filepath.Join(root, "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	in, out := filepath.Join(ws, "in"), filepath.Join(ws, "out.bin")
	require.NoError(t, os.WriteFile(in, []byte("tokens"), 0o644))
	want := bytes.Repeat([]byte("TOKENS"), 50_000)
	var runs atomic.Int64
	task := func() *Task {
		return &Task{ID: "encode", Files: []string{in}, Outputs: []Output{{Path: out, Share: true}}, Run: func(ctx context.Context, x *Exec) error {
			runs.Add(1)
			return cache.WriteFileAtomic(out, want, 0o644)
		}}
	}
	var log bytes.Buffer
	run := func() *Task {
		tk := task()
		require.NoError(t, (&Runner{Cache: c, Root: ws, Out: &log, Verbose: true}).Run(context.Background(), tk), log.String())
		return tk
	}
	run()
	require.EqualValues(t, 1, runs.Load())

	// Edited in place, as a user with the rights to do it would.
	require.NoError(t, os.Chmod(out, 0o644))
	f, err := os.OpenFile(out, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("edited"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	tk := run()
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the output is what the task writes, not the edit\n%s", log.String())
	// With a hard link the edit reached the blob, which is dropped and
	// rebuilt; with a clone the blob was untouched and restores the output.
	if tk.Cached() {
		assert.EqualValues(t, 1, runs.Load())
	} else {
		assert.EqualValues(t, 2, runs.Load())
	}
	rep, err := c.Verify(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, rep.CorruptBlobs)
	assert.Empty(t, rep.ModifiedOutputs)

	// A third run is a hit that reads nothing.
	reads := c.FileReads()
	assert.True(t, run().Cached())
	assert.Equal(t, reads, c.FileReads())
}

// Only outputs marked Share are linked: a figure or an archive stays an
// ordinary copy with the mode it was written with, on its own inode, both
// when it is stored and when it is restored.
func TestUnsharedOutputStaysAWritableCopy(t *testing.T) {
	t.Setenv(cache.LinkEnv, "")
	root := t.TempDir()
	c, err := cache.Open(filepath.Join(root, "cache"))
	require.NoError(t, err)
	ws := filepath.Join(root, "ws")
	require.NoError(t, os.MkdirAll(ws, 0o755))
	in, out := filepath.Join(ws, "in"), filepath.Join(ws, "compare.png")
	require.NoError(t, os.WriteFile(in, []byte("results"), 0o644))
	want := bytes.Repeat([]byte("PNG"), 100_000)
	task := &Task{ID: "compare", Files: []string{in}, Outputs: []Output{{Path: out}}, Run: func(ctx context.Context, x *Exec) error {
		return cache.WriteFileAtomic(out, want, 0o644)
	}}
	var log bytes.Buffer
	require.NoError(t, (&Runner{Cache: c, Root: ws, Out: &log}).Run(context.Background(), task), log.String())
	check := func(when string) {
		st, err := os.Stat(out)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), when)
		assert.EqualValues(t, 1, st.Sys().(*syscall.Stat_t).Nlink, "%s: not a hard link to the blob", when)
	}
	check("stored")
	require.NoError(t, os.Remove(out))
	again := &Task{ID: "compare", Files: []string{in}, Outputs: []Output{{Path: out}}, Run: task.Run}
	require.NoError(t, (&Runner{Cache: c, Root: ws, Out: &log}).Run(context.Background(), again), log.String())
	require.True(t, again.Cached(), log.String())
	check("restored")
}
