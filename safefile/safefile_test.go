package safefile_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

func TestReadFileRefusesHostileFiles(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.Kinds, 1<<20, func(t *testing.T) (string, func() error) {
		p := filepath.Join(t.TempDir(), "file.json")
		return p, func() error {
			_, err := safefile.ReadFile(context.Background(), p, 1<<20)
			if err != nil {
				assert.Regexp(t, "remove|replace", err.Error(), "the error says what to do")
			}
			return err
		}
	})
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, os.WriteFile(small, []byte("0123456789"), 0o644))
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name  string
		ctx   context.Context
		path  string
		limit int64
		want  error
	}{
		{"fits", context.Background(), small, 10, nil},
		{"one byte over", context.Background(), small, 9, safefile.ErrTooLarge},
		{"canceled", canceled, small, 10, context.Canceled},
		{"missing", context.Background(), filepath.Join(dir, "none"), 10, os.ErrNotExist},
		// A kernel file reports size 0 and is read up to the limit.
		{"proc file over limit", context.Background(), "/proc/self/status", 16, safefile.ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := safefile.ReadFile(tc.ctx, tc.path, tc.limit)
			if tc.want == nil {
				require.NoError(t, err)
				assert.Equal(t, "0123456789", string(data))
				return
			}
			assert.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
			assert.Contains(t, err.Error(), filepath.Base(tc.path), "the error names the file")
		})
	}
	data, err := safefile.ReadFile(context.Background(), "/proc/self/status", safefile.LimitSysfs)
	require.NoError(t, err)
	assert.Contains(t, string(data), "Name:", "a kernel file whose size is reported as 0 is read whole")
}

// cancelAfter is a reader of endless zeros that cancels its context once
// n bytes have been read: a read that honours the context stops soon after.
type cancelAfter struct {
	n      int64
	read   int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	clear(p)
	c.read += int64(len(p))
	if c.read >= c.n {
		c.cancel()
	}
	return len(p), nil
}

func TestReadersStopWhenTheContextEnds(t *testing.T) {
	for _, name := range []string{"ReadAll", "Reader"} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			src := &cancelAfter{n: 4 << 20, cancel: cancel}
			var err error
			safefiletest.Within(t, func() {
				if name == "ReadAll" {
					_, err = safefile.ReadAll(ctx, "stream", src, 1<<40)
				} else {
					_, err = io.Copy(io.Discard, safefile.Reader(ctx, src))
				}
			})
			require.ErrorIs(t, err, context.Canceled)
			// At most one chunk beyond the point of cancellation.
			assert.LessOrEqual(t, src.read, int64(4<<20)+(1<<20)+(32<<10))
		})
	}
}

func TestReaderPassesDataThrough(t *testing.T) {
	in := strings.Repeat("x", 3<<20+5)
	var out bytes.Buffer
	_, err := io.Copy(&out, safefile.Reader(context.Background(), strings.NewReader(in)))
	require.NoError(t, err)
	assert.Equal(t, in, out.String())
}
