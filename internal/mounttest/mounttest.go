// Package mounttest runs a test in a mount namespace of its own, where it
// may mount a small tmpfs (a full or read-only disk) or a file-system
// image that no other process sees and that disappears with it.
package mounttest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// dirEnv tells the test binary it is the child, and names the directory
// it mounts on.
const dirEnv = "RIVAL_MOUNTTEST_DIR"

// FullDiskEnv makes a tmpfs test fail, not skip, where it cannot mount;
// .ci/run sets it.
const FullDiskEnv = "RIVAL_REQUIRE_FULLDISK"

// Need says what an isolated test needs, for the message when it skips.
type Need struct {
	// What the test needs and how to provide it: "a 256 KiB tmpfs".
	What string
	// RequireEnv, set to 1, makes a skip a failure.
	RequireEnv string
	// UserNS lets a user other than root run the child in a user
	// namespace in which it is root.
	UserNS bool
}

// Skip skips t, saying what it needs, or fails it where RequireEnv is 1.
func (n Need) Skip(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf("%s needs %s (%s=1 makes this a failure): %s", t.Name(), n.What, n.RequireEnv, fmt.Sprintf(format, args...))
	if os.Getenv(n.RequireEnv) == "1" {
		t.Fatalf("%s=1 but %s", n.RequireEnv, msg)
	}
	t.Skip(msg)
}

// Run runs t's (top-level) test again in a child of the test binary in a
// private mount namespace, and there calls child with an empty
// directory to mount on; its mounts are the child's alone. The test
// passes when the child passes, fails when it fails, and skips (see
// Skip) when the child skipped or could not start.
func (n Need) Run(t *testing.T, child func(t *testing.T, dir string)) {
	t.Helper()
	if dir := os.Getenv(dirEnv); dir != "" {
		// Mounts made here must not propagate to the parent's namespace.
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Skipf("cannot make the mount namespace private: %v", err)
		}
		child(t, dir)
		return
	}
	name := t.Name()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), dirEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	if uid := os.Geteuid(); uid != 0 && n.UserNS {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exitErr):
		n.Skip(t, "cannot start the test in its own mount namespace: %v", err)
	case bytes.Contains(out, []byte("--- SKIP: "+name)):
		n.Skip(t, "%s", childReason(out))
	case err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)):
		t.Fatalf("%s in its own mount namespace: %v\n%s", name, err, out)
	}
}

// Tmpfs mounts a tmpfs of the given size ("256k", "16m") on dir, in the
// child Run starts, and unmounts it when the test ends.
func Tmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, 0) })
}

// TmpfsNeed is what a tmpfs test needs: root, or a user allowed to create
// user namespaces (Linux allows it unless the host disables it:
// user.max_user_namespaces=0, or an AppArmor restriction).
func TmpfsNeed(size string) Need {
	return Need{
		What:       "a " + size + " tmpfs in a private mount namespace: run it as root, or as a user allowed to create user namespaces",
		RequireEnv: FullDiskEnv,
		UserNS:     true,
	}
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
