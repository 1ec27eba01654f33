package cache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile/safefiletest"
)

// hostileKinds are the hostile files the cache's readers meet; an
// OverLimit one is 8 GiB (sparse: no disk), beyond every cache limit.
var hostileKinds = []string{safefiletest.DevZero, safefiletest.FIFO, safefiletest.OverLimit}

// plant replaces path with a hostile file of the given kind.
func plant(t *testing.T, path, kind string) {
	t.Helper()
	safefiletest.Plant(t, path, kind, 8<<30-1)
}

// Every file the cache reads whole (records, a task's latest inputs,
// stat-cache entries, blobs) is refused quickly when it is not a regular
// file of a size Rival writes: no read without end, no memory exhausted.
func TestHostileCacheFilesAreRefusedNotRead(t *testing.T) {
	for _, kind := range hostileKinds {
		t.Run(kind, func(t *testing.T) {
			c := newCache(t)
			key := HashBytes([]byte("key"))
			plant(t, c.recordPath(key), kind)
			safefiletest.Within(t, func() {
				_, err := c.LookupRecord(key)
				assert.ErrorIs(t, err, ErrNotFound)
			})
			plant(t, c.lastPath("encode x"), kind)
			safefiletest.Within(t, func() {
				_, ok := c.LastInputs("encode x")
				assert.False(t, ok)
			})
			src := filepath.Join(t.TempDir(), "src")
			require.NoError(t, os.WriteFile(src, []byte("content"), 0o644))
			abs, _ := filepath.Abs(src)
			plant(t, c.statEntryPath(abs), kind)
			safefiletest.Within(t, func() {
				d, _, err := c.FileDigest(src)
				require.NoError(t, err)
				assert.Equal(t, HashBytes([]byte("content")), d)
			})
			d, err := c.PutBytes([]byte("blob"), false)
			require.NoError(t, err)
			plant(t, c.blobPath(d, false), kind)
			safefiletest.Within(t, func() {
				_, err := c.ReadBlob(d)
				assert.Error(t, err)
			})
			plant(t, c.blobPath(d, false), kind)
			safefiletest.Within(t, func() {
				// A record says how large the blob's content is.
				assert.Error(t, c.MaterializeSize(d, filepath.Join(t.TempDir(), "out"), 0o644, 4, true))
			})
		})
	}
}

func TestReadFileLimit(t *testing.T) {
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
		{"one byte over", context.Background(), small, 9, ErrTooLarge},
		{"canceled", canceled, small, 10, context.Canceled},
		{"missing", context.Background(), filepath.Join(dir, "none"), 10, os.ErrNotExist},
		{"directory", context.Background(), dir, 10, ErrNotRegular},
		{"device", context.Background(), "/dev/zero", 1 << 30, ErrNotRegular},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data, err := ReadFileLimit(tc.ctx, tc.path, tc.limit)
			if tc.want == nil {
				require.NoError(t, err)
				assert.Equal(t, "0123456789", string(data))
				return
			}
			assert.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
			if err != nil && tc.path != "" {
				assert.Contains(t, err.Error(), filepath.Base(tc.path), "the error names the file")
			}
		})
	}
}
