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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile"
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

// NonRegular are the kinds a streaming reader (one with no size limit)
// must refuse: all but OverLimit.
var NonRegular = []string{DevZero, FIFO, Directory}

// Refused is the error a bounded reader gives for each hostile kind.
var Refused = map[string]error{
	DevZero:   safefile.ErrNotRegular,
	FIFO:      safefile.ErrNotRegular,
	Directory: safefile.ErrNotRegular,
	OverLimit: safefile.ErrTooLarge,
}

// Refuses runs a subtest for each of kinds: setup prepares what the
// reader needs and returns the path to plant (an OverLimit file is
// limit+1 bytes) and read, which reads it. read must return within
// HangAfter with the Refused error of the kind, naming the path.
func Refuses(t *testing.T, kinds []string, limit int64, setup func(t *testing.T) (path string, read func() error)) {
	t.Helper()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			p, read := setup(t)
			Plant(t, p, kind, limit)
			Within(t, func() {
				err := read()
				require.ErrorIs(t, err, Refused[kind])
				assert.Contains(t, err.Error(), p, "the error names the file")
			})
		})
	}
}
