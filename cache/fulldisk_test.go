package cache

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fullDiskRequireEnv makes TestFullDisk fail, not skip, where it cannot mount its small
// filesystem; .ci/run sets it.
const fullDiskRequireEnv = "RIVAL_REQUIRE_FULLDISK"

// fullDiskDirEnv tells the test binary it is the child that mounts the small filesystem on
// the named directory.
const fullDiskDirEnv = "RIVAL_CACHE_FULLDISK_DIR"

// TestFullDisk writes into a 256 KiB tmpfs: the write fails with a clear error and nothing
// half-written is visible.
//
// The test binary runs itself again in a private mount namespace, so the tmpfs is seen by that
// child alone and disappears with it. As root the namespace needs nothing else; otherwise the
// child also gets a user namespace in which it is root, which Linux allows unprivileged users
// unless the host disables it (user.max_user_namespaces=0, or an AppArmor restriction).
func TestFullDisk(t *testing.T) {
	if dir := os.Getenv(fullDiskDirEnv); dir != "" {
		fullDisk(t, dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFullDisk$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), fullDiskDirEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if uid := os.Geteuid(); uid != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exitErr):
		skipFullDisk(t, "cannot start the test in its own mount namespace: %v", err)
	case bytes.Contains(out, []byte("--- SKIP: TestFullDisk")):
		skipFullDisk(t, "%s", childReason(out))
	case err != nil || !bytes.Contains(out, []byte("--- PASS: TestFullDisk")):
		t.Fatalf("TestFullDisk in its own mount namespace: %v\n%s", err, out)
	}
}

// skipFullDisk skips, or fails when CI requires the test.
func skipFullDisk(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := "TestFullDisk needs a 256 KiB tmpfs: run it as root, or as a user allowed to create user namespaces (" + fullDiskRequireEnv + "=1 makes this a failure): " +
		fmt.Sprintf(format, args...)
	if os.Getenv(fullDiskRequireEnv) == "1" {
		t.Fatalf("%s=1 but %s", fullDiskRequireEnv, msg)
	}
	t.Skip(msg)
}

// childReason is what the child logged, without the test runner's own lines.
func childReason(out []byte) string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "PASS" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "; ")
}

// fullDisk is the test proper, in the child: dir is its own 256 KiB tmpfs.
func fullDisk(t *testing.T, dir string) {
	// Mounts made here must not propagate to the parent's namespace.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Skipf("cannot make the mount namespace private: %v", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, 0) })

	c, err := Open(dir)
	require.NoError(t, err)
	_, err = c.PutBytes(bytes.Repeat([]byte{1}, 1<<20), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no space left on device")
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, os.WriteFile(src, bytes.Repeat([]byte{2}, 1<<20), 0o644))
	_, _, err = c.PutFile(src, false)
	require.Error(t, err)
	blobs, err := c.blobs()
	require.NoError(t, err)
	assert.Empty(t, blobs, "no partial blob is left")
}
