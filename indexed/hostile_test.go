package indexed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// A dataset is mapped, not read whole, so its size is not limited; but a
// FIFO, a device or a directory in the place of its .idx or .bin is
// refused at once, never waited on.
func TestOpenRefusesNonRegularFiles(t *testing.T) {
	for _, which := range []string{"idx", "bin"} {
		for _, kind := range []string{safefiletest.DevZero, safefiletest.FIFO, safefiletest.Directory} {
			t.Run(which+"/"+kind, func(t *testing.T) {
				prefix := t.TempDir() + "/data"
				p := indexed.IdxPath(prefix)
				if which == "bin" {
					safefiletest.Plant(t, p, safefiletest.OverLimit, -1) // an empty .idx: mapped, then the .bin
					p = indexed.BinPath(prefix)
				}
				safefiletest.Plant(t, p, kind, 0)
				safefiletest.Within(t, func() {
					_, err := indexed.Open(prefix)
					require.ErrorIs(t, err, safefile.ErrNotRegular)
					assert.Contains(t, err.Error(), p)
				})
			})
		}
	}
}
