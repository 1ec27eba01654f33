package hub_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// A shard in the data folder is streamed, whatever its length, but a
// FIFO, a link to /dev/zero or a directory in its place is refused at
// once, naming it.
func TestShardReadersRefuseNonRegularFiles(t *testing.T) {
	for _, kind := range []string{safefiletest.DevZero, safefiletest.FIFO, safefiletest.Directory} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "shard.jsonl")
			safefiletest.Plant(t, p, kind, 0)
			safefiletest.Within(t, func() {
				_, err := hub.DetectFormat(p)
				require.ErrorIs(t, err, safefile.ErrNotRegular)
				assert.Contains(t, err.Error(), p)
				_, err = hub.ReadDocuments(p, hub.FormatJSONL, 0, func(string) error { return nil })
				require.ErrorIs(t, err, safefile.ErrNotRegular)
			})
		})
	}
}
