package cache

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// HashFile opens without blocking and hashes only regular files: a FIFO or
// device put where a caller had seen a file is refused at once, not read
// (a FIFO with no writer would block the open forever).
func TestHashFileRefusesWhatIsNotARegularFile(t *testing.T) {
	for _, kind := range []string{safefiletest.DevZero, safefiletest.FIFO, safefiletest.Directory} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "out.bin")
			safefiletest.Plant(t, p, kind, 1<<20)
			safefiletest.Within(t, func() {
				_, _, err := HashFile(p)
				require.ErrorIs(t, err, safefile.ErrNotRegular)
				require.ErrorContains(t, err, p)
			})
		})
	}
}
