package spec_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/spec"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// What ran is read from a run's folder, which the container wrote: a
// file there that is not a small regular file is refused, naming it.
func TestRanRefusesHostileFiles(t *testing.T) {
	want := map[string]error{
		safefiletest.DevZero:   safefile.ErrNotRegular,
		safefiletest.FIFO:      safefile.ErrNotRegular,
		safefiletest.Directory: safefile.ErrNotRegular,
		safefiletest.OverLimit: safefile.ErrTooLarge,
	}
	for _, kind := range safefiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			l := spec.Launch{RanFile: "logs/ran.json"}
			p := filepath.Join(dir, "logs", "ran.json")
			safefiletest.Plant(t, p, kind, safefile.LimitConfig)
			safefiletest.Within(t, func() {
				_, err := l.Ran(dir)
				require.ErrorIs(t, err, want[kind])
				assert.Contains(t, err.Error(), p)
			})
		})
	}
}
