package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A configuration line over 64 KiB is read (a comment) or reported by file
// and line (a broken one), never "bufio.Scanner: token too long"; a file
// over 1 MiB or one that is no regular file is refused, naming it.
func TestConfigLongLinesAndOddFiles(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	cases := []struct {
		name    string
		content string
		want    string // "" means it loads
	}{
		{"a long comment", "SL=1024\n# " + long + "\nMBS=1\n", ""},
		{"a long broken line", "SL=1024\n\n" + long + "\n", "config.env:3: expected KEY=VALUE"},
		{"a long value", "SL=1024\nDATASET=" + long + "\n", "config.env:2"},
		{"a file over 1 MiB", "# " + strings.Repeat("y", 1<<20) + "\n", "more than the 1048576"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.env")
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o644))
			c, err := loadConfig(p, "", envFrom(nil))
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, "1024", c.get("SL"))
				assert.Equal(t, "1", c.get("MBS"))
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "token too long")
			if tc.name == "a long broken line" {
				assert.False(t, strings.Contains(err.Error(), long[:100]), "a line that is not KEY=VALUE is never echoed")
			}
		})
	}
	t.Run("a FIFO", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "config.env")
		require.NoError(t, syscall.Mkfifo(p, 0o644))
		done := make(chan error, 1)
		go func() { _, err := loadConfig(p, "", envFrom(nil)); done <- err }()
		select {
		case err := <-done:
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not a regular file")
		case <-time.After(5 * time.Second):
			t.Fatal("LoadConfig blocks on a FIFO")
		}
	})
}
