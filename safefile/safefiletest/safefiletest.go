// Package safefiletest plants the hostile files every reader of package
// safefile is tested against: a symlink to /dev/zero, a FIFO no one
// writes, a directory, and a sparse file one byte over a limit.
package safefiletest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The kinds Plant makes.
const (
	DevZero   = "symlink to /dev/zero"
	FIFO      = "fifo"
	Directory = "directory"
	OverLimit = "over limit"
)

// Kinds are the hostile kinds every bounded reader must refuse.
var Kinds = []string{DevZero, FIFO, Directory, OverLimit}

// Plant replaces path with a hostile file of the given kind; an OverLimit
// file is sparse (no disk) and limit+1 bytes long.
func Plant(t testing.TB, path, kind string, limit int64) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.RemoveAll(path))
	switch kind {
	case DevZero:
		require.NoError(t, os.Symlink("/dev/zero", path))
	case FIFO:
		require.NoError(t, syscall.Mkfifo(path, 0o644))
	case Directory:
		require.NoError(t, os.Mkdir(path, 0o755))
	case OverLimit:
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, f.Truncate(limit+1))
		require.NoError(t, f.Close())
	default:
		t.Fatalf("unknown kind %q", kind)
	}
}

// HangAfter is how long Within waits before calling a read hung: far
// beyond what any refusal takes, so it detects a read that blocks on a
// FIFO or streams /dev/zero, and measures nothing.
const HangAfter = 30 * time.Second

// Within runs f and fails the test when it has not returned after
// HangAfter (a read that never ends).
func Within(t testing.TB, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(HangAfter):
		t.Fatalf("still reading after %v: the read blocks or never ends", HangAfter)
	}
}
