package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTailerFollowsAGrowingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.log")
	var got []string
	tl := newTailer(path, func(s string) { got = append(got, s) })

	require.NoError(t, tl.poll(false), "a log that does not exist yet is not an error")
	assert.Empty(t, got)

	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	write := func(s string) {
		_, err := f.WriteString(s)
		require.NoError(t, err)
	}
	write("first\nsec")
	require.NoError(t, tl.poll(false))
	assert.Equal(t, []string{"first"}, got, "a partial line waits for its newline")
	write("ond\r\nthird\n\nfourth")
	require.NoError(t, tl.poll(false))
	assert.Equal(t, []string{"first", "second", "third", ""}, got)
	require.NoError(t, tl.poll(true))
	assert.Equal(t, []string{"first", "second", "third", "", "fourth"}, got, "the end flushes a last line without newline")

	// A requeued job truncates its log and starts again.
	require.NoError(t, f.Truncate(0))
	_, err = f.Seek(0, 0)
	require.NoError(t, err)
	got = nil
	write("again\n")
	require.NoError(t, tl.poll(false))
	assert.Equal(t, []string{"again"}, got)
}

func TestTailerSplitsHugeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.log")
	require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("x", maxLine*2+10)+"\nend\n"), 0o644))
	var lens []int
	tl := newTailer(path, func(s string) { lens = append(lens, len(s)) })
	require.NoError(t, tl.poll(true))
	assert.Equal(t, []int{maxLine, maxLine, 10, 3}, lens)
}

func FuzzTailer(f *testing.F) {
	f.Add("a\nb\r\nc", 3)
	f.Add("\n\n\n", 1)
	f.Fuzz(func(t *testing.T, content string, cut int) {
		if cut < 0 || cut > len(content) {
			return
		}
		path := filepath.Join(t.TempDir(), "log")
		var got []string
		tl := newTailer(path, func(s string) { got = append(got, s) })
		require.NoError(t, os.WriteFile(path, []byte(content[:cut]), 0o644))
		require.NoError(t, tl.poll(false))
		require.NoError(t, os.WriteFile(path+".new", []byte(content), 0o644))
		require.NoError(t, os.Rename(path+".new", path))
		require.NoError(t, tl.poll(true))
		// Lines read in two polls equal the file's lines read at once.
		want := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
		if content == "" {
			want = nil
		}
		for i := range want {
			want[i] = strings.TrimSuffix(want[i], "\r")
		}
		assert.Equal(t, want, got)
	})
}
