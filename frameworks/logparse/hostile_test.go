package logparse_test

import (
	"path/filepath"
	"testing"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// A training log is streamed (any length, bounded memory), but a FIFO,
// a link to /dev/zero or a directory in its place is refused at once.
func TestParseFileRefusesNonRegularFiles(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.NonRegular, 0, func(t *testing.T) (string, func() error) {
		p := filepath.Join(t.TempDir(), "train.log")
		return p, func() error { _, err := logparse.ParseFile(p, ""); return err }
	})
}
