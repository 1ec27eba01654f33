package cache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lukeblake3 "lukechampine.com/blake3"

	"github.com/rivalbench/rival/safefile/safefiletest"
)

// Verify reads a small file in one pread and streams a large one: at and
// around the boundary (and for an empty file) it agrees with an independent
// BLAKE3, and one edited byte is noticed.
func TestVerifyHashesEverySizeLikeBLAKE3(t *testing.T) {
	for _, size := range []int{0, 1, 4095, 4096, 4097, smallFile - 1, smallFile, smallFile + 1, 1 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			c := newCache(t)
			content := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
			out := filepath.Join(t.TempDir(), "out")
			require.NoError(t, os.WriteFile(out, content, 0o644))
			d, _, err := c.PutFile(out, false)
			require.NoError(t, err)
			assert.Equal(t, Digest(lukeblake3.Sum256(content)), d)
			require.NoError(t, c.PutRecord(Record{Key: HashBytes([]byte("k")), Task: "t", Outputs: []Output{{Path: "out", AbsPath: out, Digest: d, Size: int64(size)}}}))
			rep, err := c.Verify(context.Background(), nil)
			require.NoError(t, err)
			assert.Equal(t, 1, rep.BlobsChecked)
			assert.Equal(t, int64(size), rep.BytesChecked)
			assert.Empty(t, rep.CorruptBlobs)
			assert.Empty(t, rep.ModifiedOutputs)
			if size == 0 {
				return
			}
			content[size/2] ^= 1
			require.NoError(t, os.WriteFile(out, content, 0o644))
			require.NoError(t, os.WriteFile(c.blobPath(d, false), content, 0o644))
			rep, err = c.Verify(context.Background(), nil)
			require.NoError(t, err)
			assert.Equal(t, []Digest{d}, rep.CorruptBlobs)
			assert.Equal(t, []string{out}, rep.ModifiedOutputs)
		})
	}
}

// A FIFO, a symlink to /dev/zero or a directory in place of a blob, a
// record or an output is refused without waiting on it: the blob is
// corrupt, the record dropped, the output modified.
func TestVerifyRefusesHostileFiles(t *testing.T) {
	for _, kind := range safefiletest.NonRegular {
		t.Run(kind, func(t *testing.T) {
			c := newCache(t)
			ws := t.TempDir()
			outs := fillSmall(t, c, ws, 3)
			blob := HashBytes([]byte("output number 0\n"))
			require.NoError(t, os.WriteFile(outs[0], []byte("output number 0\n"), 0o644))
			safefiletest.Plant(t, c.blobPath(blob, false), kind, 0)
			rec := HashBytes([]byte(outs[1]))
			safefiletest.Plant(t, c.recordPath(rec), kind, 0)
			safefiletest.Plant(t, outs[2], kind, 0)
			var rep VerifyReport
			safefiletest.Within(t, func() {
				var err error
				rep, err = c.Verify(context.Background(), nil)
				require.NoError(t, err)
			})
			if kind != safefiletest.Directory { // WalkDir enters a directory
				assert.Equal(t, []Digest{blob}, rep.CorruptBlobs)
				assert.Equal(t, []string{outs[0]}, rep.Readopted, "the intact output is stored again")
			}
			assert.Equal(t, []string{outs[2]}, rep.ModifiedOutputs)
			_, err := os.Lstat(c.recordPath(rec))
			if kind == safefiletest.Directory {
				assert.NoError(t, err, "a directory is walked, not read")
			} else {
				assert.ErrorIs(t, err, os.ErrNotExist, "the unreadable record is dropped")
			}
		})
	}
}

// A record cut short, one that is not JSON and one over the record limit
// are dropped; the others stay.
func TestVerifyDropsUnreadableRecords(t *testing.T) {
	c := newCache(t)
	outs := fillSmall(t, c, t.TempDir(), 4)
	keys := make([]Digest, len(outs))
	for i, p := range outs {
		keys[i] = HashBytes([]byte(p))
	}
	data, err := os.ReadFile(c.recordPath(keys[0]))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(c.recordPath(keys[0]), data[:len(data)-2], 0o644))
	require.NoError(t, os.WriteFile(c.recordPath(keys[1]), []byte("not json"), 0o644))
	safefiletest.Plant(t, c.recordPath(keys[2]), safefiletest.OverLimit, LimitRecord)
	var rep VerifyReport
	safefiletest.Within(t, func() {
		rep, err = c.Verify(context.Background(), nil)
		require.NoError(t, err)
	})
	assert.Equal(t, 1, rep.OutputsChecked, "only the intact record's output is checked")
	for i, k := range keys {
		_, err := os.Stat(c.recordPath(k))
		if i == 3 {
			assert.NoError(t, err)
		} else {
			assert.ErrorIs(t, err, os.ErrNotExist, "record %d", i)
		}
	}
}

// A cancelled verify says so and drops nothing: no blob called corrupt, no
// record removed, no output called modified.
func TestVerifyHonoursCancellation(t *testing.T) {
	c := newCache(t)
	outs := fillSmall(t, c, t.TempDir(), 50)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, cacheCtx := range []bool{false, true} {
		vctx := ctx
		if cacheCtx {
			c.Context, vctx = ctx, context.Background()
		}
		rep, err := c.Verify(vctx, nil)
		require.ErrorIs(t, err, context.Canceled)
		assert.Empty(t, rep.CorruptBlobs)
		assert.Empty(t, rep.ModifiedOutputs)
		assert.Zero(t, rep.RecordsDropped)
	}
	c.Context = nil
	for _, p := range outs {
		_, err := c.LookupRecord(HashBytes([]byte(p)))
		require.NoError(t, err)
	}
	rep, err := c.Verify(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, 50, rep.OutputsChecked)
	assert.Empty(t, rep.ModifiedOutputs)
}
