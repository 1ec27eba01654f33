package core_test

import (
	"path/filepath"
	"testing"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// What ran is read from a run's folder, which the container wrote: a
// file there that is not a small regular file is refused, naming it.
func TestRanRefusesHostileFiles(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.Kinds, safefile.LimitConfig, func(t *testing.T) (string, func() error) {
		dir := t.TempDir()
		l := core.Launch{RanFile: "logs/ran.json"}
		return filepath.Join(dir, "logs", "ran.json"), func() error { _, err := l.Ran(dir); return err }
	})
}
