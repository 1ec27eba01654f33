package cache

import (
	"path/filepath"
	"testing"

	"github.com/rivalbench/rival/safefile/safefiletest"
)

// HashFile opens without blocking and hashes only regular files: a FIFO or
// device put where a caller had seen a file is refused at once, not read
// (a FIFO with no writer would block the open forever).
func TestHashFileRefusesWhatIsNotARegularFile(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.NonRegular, 1<<20, func(t *testing.T) (string, func() error) {
		p := filepath.Join(t.TempDir(), "out.bin")
		return p, func() error { _, _, err := HashFile(p); return err }
	})
}
