package hub_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// A shard in the data folder is streamed, whatever its length, but a
// FIFO, a link to /dev/zero or a directory in its place is refused at
// once, naming it.
func TestShardReadersRefuseNonRegularFiles(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.NonRegular, 0, func(t *testing.T) (string, func() error) {
		p := filepath.Join(t.TempDir(), "shard.jsonl")
		return p, func() error {
			_, detectErr := hub.DetectFormat(p)
			_, err := (hub.Documents{}).Read(context.Background(), p, hub.FormatJSONL, 0, func(string) error { return nil })
			require.ErrorIs(t, err, safefile.ErrNotRegular)
			return detectErr
		}
	})
}
