package dag

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/internal/mounttest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A cache on a filesystem mounted read-only still serves hits, and a task
// that misses runs, keeps its outputs and says they were not cached; on a
// full cache disk a task keeps its outputs, warns, and the run goes on.
//
// Like cache's TestFullDisk, the test runs in a child test process in a
// private mount namespace (root, or a user namespace), where it mounts a 1 MiB
// tmpfs for the cache; RIVAL_REQUIRE_FULLDISK=1 (CI) makes a skip a
// failure.
func TestReadOnlyAndFullCache(t *testing.T) {
	mounttest.TmpfsNeed("1 MiB").Run(t, readOnlyAndFullCache)
}

func readOnlyAndFullCache(t *testing.T, dir string) {
	mounttest.Tmpfs(t, dir, "1m")
	c, err := cache.Open(dir)
	require.NoError(t, err)
	ws := t.TempDir()
	in, out := filepath.Join(ws, "in"), filepath.Join(ws, "out")
	require.NoError(t, os.WriteFile(in, []byte("one"), 0o644))
	task := func(body string) *Task {
		return &Task{ID: "copy", Files: []string{in}, Outputs: []Output{{Path: out}}, Exclusive: true, Run: func(ctx context.Context, x *Exec) error {
			return cache.WriteFileAtomic(out, []byte(body), 0o644)
		}}
	}
	run := func(body string) (*Task, string, error) {
		var log bytes.Buffer
		tk := task(body)
		err := (&Runner{Cache: c, Root: ws, Out: &log}).Run(context.Background(), tk)
		return tk, log.String(), err
	}
	_, _, err = run("made with a writable cache")
	require.NoError(t, err)

	// Read-only: the hit is served; a miss runs and keeps its output.
	require.NoError(t, unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""))
	require.NoError(t, os.Remove(out))
	tk, _, err := run("must not run")
	require.NoError(t, err)
	assert.True(t, tk.Cached(), "a read-only cache serves its hits")
	got, _ := os.ReadFile(out)
	assert.Equal(t, "made with a writable cache", string(got))
	require.NoError(t, os.WriteFile(in, []byte("two"), 0o644))
	tk, log, err := run("made with a read-only cache")
	require.NoError(t, err, log)
	assert.False(t, tk.Cached())
	assert.Contains(t, log, "read-only")
	got, _ = os.ReadFile(out)
	assert.Equal(t, "made with a read-only cache", string(got))

	// Full: the output stays, a warning says it was not cached.
	require.NoError(t, unix.Mount("", dir, "", unix.MS_REMOUNT, ""))
	filler, err := os.Create(filepath.Join(dir, "filler"))
	require.NoError(t, err)
	for {
		if _, err := filler.Write(make([]byte, 64<<10)); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
			break
		}
	}
	filler.Close()
	require.NoError(t, os.WriteFile(in, []byte("three: a longer input, so the output needs blocks"), 0o644))
	body := strings.Repeat("x", 256<<10)
	tk, log, err = run(body)
	require.NoError(t, err, log)
	assert.Contains(t, log, "outputs kept, result not cached")
	got, _ = os.ReadFile(out)
	assert.Equal(t, body, string(got))
}
