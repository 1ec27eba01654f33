package dag

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rivalbench/rival/cache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// cacheDiskDirEnv tells the test binary it is the child that mounts a small
// filesystem for the cache on the named directory.
const cacheDiskDirEnv = "RIVAL_DAG_CACHEDISK_DIR"

// A cache on a filesystem mounted read-only still serves hits, and a task
// that misses runs, keeps its outputs and says they were not cached; on a
// full cache disk a task keeps its outputs, warns, and the run goes on.
//
// Like cache's TestFullDisk, the test binary runs itself again in a private
// mount namespace (root, or a user namespace), where it mounts a 1 MiB
// tmpfs for the cache; RIVAL_REQUIRE_FULLDISK=1 (CI) makes a skip a
// failure.
func TestReadOnlyAndFullCache(t *testing.T) {
	if dir := os.Getenv(cacheDiskDirEnv); dir != "" {
		readOnlyAndFullCache(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadOnlyAndFullCache$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), cacheDiskDirEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if uid := os.Geteuid(); uid != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	skip := func(why string) {
		msg := "TestReadOnlyAndFullCache needs a tmpfs in a private mount namespace (root, or user namespaces): " + why
		if os.Getenv("RIVAL_REQUIRE_FULLDISK") == "1" {
			t.Fatalf("RIVAL_REQUIRE_FULLDISK=1 but %s", msg)
		}
		t.Skip(msg)
	}
	switch {
	case err != nil && !errors.As(err, &exitErr):
		skip(err.Error())
	case bytes.Contains(out, []byte("--- SKIP: TestReadOnlyAndFullCache")):
		skip(string(out))
	case err != nil || !bytes.Contains(out, []byte("--- PASS: TestReadOnlyAndFullCache")):
		t.Fatalf("in its own mount namespace: %v\n%s", err, out)
	}
}

func readOnlyAndFullCache(t *testing.T, dir string) {
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Skipf("cannot make the mount namespace private: %v", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, 0) })
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
