package goprog

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testProgram = Program{Package: "github.com/rivalbench/rival/cmd/rival-parquet", Name: "rival-parquet", Topic: "fetch", What: "the parquet reader", Holds: "parquet-go", FirstBuild: "a minute"}

// One file per checkout: two checkouts sharing a cache never run each other's program.
func TestPathIsPerCheckout(t *testing.T) {
	bin := t.TempDir()
	a := (&Helper{Program: testProgram, Dir: "/src/a", BinDir: bin}).Path()
	b := (&Helper{Program: testProgram, Dir: "/src/b", BinDir: bin}).Path()
	assert.NotEqual(t, a, b)
	assert.Equal(t, bin, filepath.Dir(a))
	assert.True(t, strings.HasPrefix(filepath.Base(a), "rival-parquet-"), a)
}

func TestBuildRefusals(t *testing.T) {
	_, err := (&Helper{Program: testProgram}).Build(context.Background())
	require.EqualError(t, err, "fetch: no folder to build the parquet reader (rival-parquet) in")

	t.Setenv("PATH", t.TempDir())
	h := &Helper{Program: testProgram, BinDir: t.TempDir()}
	_, err = h.Build(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fetch: the parquet reader is the program rival-parquet, which Rival builds with `go build -o "+h.Path()+" "+testProgram.Package+"`")
	assert.Contains(t, err.Error(), "put Go's bin folder on PATH")
}

// A build that finds another holding the lock waits for it, and gives up when its context ends,
// saying what it waited for.
func TestBuildWaitsForTheLock(t *testing.T) {
	h := &Helper{Program: testProgram, BinDir: t.TempDir()}
	unlock, err := h.lock(context.Background(), h.Path()+".lock")
	require.NoError(t, err)
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = h.lock(ctx, h.Path()+".lock")
	require.ErrorContains(t, err, "fetch: waiting for another build of the parquet reader")
}

// A program this process built is stamped as used at every Build, and built again when it was
// removed meanwhile (cache:trim, in another process).
func TestBuildAgainAfterTrim(t *testing.T) {
	if testing.Short() {
		t.Skip("links a program")
	}
	h := &Helper{Program: testProgram, BinDir: t.TempDir(), Notice: io.Discard}
	p, err := h.Build(context.Background())
	require.NoError(t, err)
	old := time.Now().Add(-48 * time.Hour)
	require.NoError(t, os.Chtimes(p, old, old))
	_, err = h.Build(context.Background())
	require.NoError(t, err)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), fi.ModTime(), time.Hour, "stamped as used")

	require.NoError(t, os.Remove(p))
	_, err = h.Build(context.Background())
	require.NoError(t, err)
	assert.FileExists(t, p, "built again")
}
