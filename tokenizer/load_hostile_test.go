package tokenizer_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
	"github.com/rivalbench/rival/tokenizer"
)

// A tokenizer.json that is not a regular file of a size a tokenizer has
// (a symlink to /dev/zero, a FIFO, a directory, a huge file) is refused
// with an error naming it, never read without end or whole.
func TestLoadRefusesHostileFiles(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.Kinds, safefile.LimitTokenizer, func(t *testing.T) (string, func() error) {
		p := filepath.Join(t.TempDir(), "tokenizer.json")
		return p, func() error { _, err := tokenizer.Load(p); return err }
	})
}

func TestLoadContextStopsWhenCancelled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	safefiletest.Plant(t, p, safefiletest.OverLimit, 64<<20) // under the limit: read, unless cancelled
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tokenizer.LoadContext(ctx, p)
	require.ErrorIs(t, err, context.Canceled)
}
