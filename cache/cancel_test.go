package cache

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile/safefiletest"
)

// A restore of a large blob stops soon after the cache's context ends
// (Ctrl-C or SIGTERM cancel it), leaving neither the output nor a
// temporary file, instead of streaming the blob to its end.
func TestRestoreStopsWhenTheContextEnds(t *testing.T) {
	// The copy is the restore that streams; a shared (linked or cloned)
	// blob is hashed in place before it is published.
	t.Setenv(LinkEnv, "copy")
	c := newCache(t)
	const size = 1 << 30
	d := HashBytes([]byte("the content the record names"))
	blob := c.blobPath(d, false)
	require.NoError(t, os.MkdirAll(filepath.Dir(blob), 0o755))
	f, err := os.Create(blob)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(size)) // sparse: no disk until read
	require.NoError(t, f.Close())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Context = ctx
	out := t.TempDir()
	dest := filepath.Join(out, "big.bin")
	// Cancel once the restore has begun writing.
	go func() {
		for ctx.Err() == nil {
			if es, _ := os.ReadDir(out); len(es) > 0 {
				if fi, err := es[0].Info(); err == nil && fi.Size() > 0 {
					cancel()
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	safefiletest.Within(t, func() {
		err = c.MaterializeSize(d, dest, 0o644, size, false)
	})
	require.ErrorIs(t, err, context.Canceled)
	es, _ := os.ReadDir(out)
	assert.Empty(t, es, "no output and no temporary file remain")
	assert.FileExists(t, blob, "a cancelled restore is not corruption: the blob stays")
}

// Record and entry reads stop with the cache's context too, and say so
// rather than calling the record absent.
func TestCacheReadsHonourTheContext(t *testing.T) {
	c := newCache(t)
	key := HashBytes([]byte("key"))
	require.NoError(t, WriteFileAtomic(c.recordPath(key), []byte(`{"key":"`+key.String()+`"}`), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c.Context = ctx
	_, err := c.LookupRecord(key)
	require.ErrorIs(t, err, context.Canceled)
	assert.FileExists(t, c.recordPath(key), "a cancelled read drops nothing")

	c.Context = nil
	blob, err := c.PutBytes([]byte("blob"), false)
	require.NoError(t, err)
	require.NoError(t, WriteFileAtomic(filepath.Join(c.Dir, "stat", "ab", "abcdef"), []byte(`{}`), 0o644))
	c.Context = ctx
	_, err = c.ReadBlob(blob)
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.Trim(context.Background(), 1<<40, 0)
	require.ErrorIs(t, err, context.Canceled)
	c.Context = nil
	assert.True(t, c.HasBlob(blob), "a cancelled read is not corruption: the blob stays")
	_, err = c.LookupRecord(key)
	require.NoError(t, err, "a cancelled trim drops no record as unreadable")
	assert.FileExists(t, filepath.Join(c.Dir, "stat", "ab", "abcdef"), "nor a stat entry as stale")
}

// Trim's sweeps of last-run and stat entries and its hit-log count read
// every file as a regular file of bounded size: a FIFO, a symlink to
// /dev/zero or a huge file there is dropped or skipped, never waited on.
func TestTrimSweepsRefuseHostileFiles(t *testing.T) {
	for _, kind := range safefiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			c := newCache(t)
			safefiletest.Plant(t, c.lastPath("encode x"), kind, LimitRecord)
			safefiletest.Plant(t, filepath.Join(c.Dir, "stat", "ab", "abcdef"), kind, LimitStatEntry)
			if kind != safefiletest.Directory {
				safefiletest.Plant(t, filepath.Join(c.Dir, "actions", "hits.log"), kind, 1<<40)
			}
			safefiletest.Within(t, func() {
				_, err := c.Trim(context.Background(), 1<<40, 0)
				require.NoError(t, err)
			})
		})
	}
}
