package logparse_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// A training log is streamed (any length, bounded memory), but a FIFO,
// a link to /dev/zero or a directory in its place is refused at once.
func TestParseFileRefusesNonRegularFiles(t *testing.T) {
	for _, kind := range []string{safefiletest.DevZero, safefiletest.FIFO, safefiletest.Directory} {
		t.Run(kind, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "train.log")
			safefiletest.Plant(t, p, kind, 0)
			safefiletest.Within(t, func() {
				_, err := logparse.ParseFile(p, "")
				require.ErrorIs(t, err, safefile.ErrNotRegular)
				assert.Contains(t, err.Error(), p)
			})
		})
	}
}
