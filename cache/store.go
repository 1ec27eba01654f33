package cache

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/zstd"
	"github.com/rivalbench/rival/safefile"
)

// DefaultDir is $RIVAL_CACHE, else the user cache directory's rival folder.
func DefaultDir() (string, error) {
	if d := os.Getenv("RIVAL_CACHE"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate cache: %w (set RIVAL_CACHE to a directory)", err)
	}
	return filepath.Join(base, "rival"), nil
}

// Open prepares dir as a cache directory.
func Open(dir string) (*Cache, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	for _, sub := range []string{"blobs", "actions", "stat", "tasks", "locks"} {
		if err := os.MkdirAll(filepath.Join(abs, sub), 0o755); err != nil {
			return nil, fmt.Errorf("open cache %s: %w", abs, err)
		}
	}
	return &Cache{Dir: abs}, nil
}

// FileReads counts files this Cache opened to hash or to store, so tests and
// benchmarks can prove that a no-op run reads nothing and an output is read
// once.
func (c *Cache) FileReads() int64 { return c.fileReads.Load() }

// Lock takes the cache-wide lock named name (for example an action key),
// so two processes never compute the same thing at once.
func (c *Cache) Lock(ctx context.Context, name string) (*Lock, error) {
	return LockFile(ctx, filepath.Join(c.Dir, "locks", name+".lock"))
}

// HasBlob reports whether a blob is stored (without verifying it).
func (c *Cache) HasBlob(d Digest) bool {
	return c.hasBlobAs(d, false) || c.hasBlobAs(d, true)
}

// PutFile stores the file at path as a blob and returns its digest and size.
// compress selects zstd, which pays for text, JSON and logs but not for token
// streams.
func (c *Cache) PutFile(path string, compress bool) (Digest, int64, error) {
	f, _, err := OpenRegular(path)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("cache %s: %w", path, err)
	}
	defer f.Close()
	c.fileReads.Add(1)
	d, n, err := c.put(f, compress)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("cache %s: %w", path, err)
	}
	return d, n, nil
}

// PutBytes stores data as a blob.
func (c *Cache) PutBytes(data []byte, compress bool) (Digest, error) {
	d := HashBytes(data)
	if c.HasBlob(d) {
		return d, nil
	}
	var err error
	if compress {
		err = WriteAtomic(c.blobPath(d, true), 0o444, func(w *bufio.Writer) error {
			zw, err := zstd.NewWriter(w)
			if err != nil {
				return err
			}
			if _, err := zw.Write(data); err != nil {
				zw.Close()
				return err
			}
			return zw.Close()
		})
	} else if err = WriteFileAtomic(c.blobPath(d, false), data, 0o444); err == nil {
		c.mark(c.blobPath(d, false), d)
	}
	if err != nil {
		return Digest{}, fmt.Errorf("store blob: %w", err)
	}
	return d, nil
}

// put streams r into a temporary blob while hashing it, then renames it to
// its digest. Content is read exactly once.
func (c *Cache) put(r io.Reader, compress bool) (Digest, int64, error) {
	tmpDir := filepath.Join(c.Dir, "blobs")
	f, err := os.CreateTemp(tmpDir, ".put-*")
	if err != nil {
		return Digest{}, 0, err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	var sink io.Writer = bw
	var zw *zstd.Encoder
	if compress {
		if zw, err = zstd.NewWriter(bw); err != nil {
			return Digest{}, 0, err
		}
		sink = zw
	}
	h := newHashWriter(sink)
	n, err := io.CopyBuffer(h, r, make([]byte, 1<<20))
	if err != nil {
		return Digest{}, 0, err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return Digest{}, 0, err
		}
	}
	if err := bw.Flush(); err != nil {
		return Digest{}, 0, err
	}
	if err := f.Chmod(0o444); err != nil {
		return Digest{}, 0, err
	}
	if err := f.Sync(); err != nil {
		return Digest{}, 0, err
	}
	if err := f.Close(); err != nil {
		return Digest{}, 0, err
	}
	d := h.digest()
	if !compress {
		c.mark(tmp, d)
	}
	dst := c.blobPath(d, compress)
	if c.HasBlob(d) {
		os.Remove(tmp)
		ok = true
		return d, n, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return Digest{}, 0, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return Digest{}, 0, err
	}
	ok = true
	return d, n, nil
}

// openBlob returns a reader of the blob's plain content.
func (c *Cache) openBlob(d Digest) (io.ReadCloser, error) {
	// A blob is a regular file Rival wrote; anything else in its place
	// (a symlink to /dev/zero, a FIFO) is refused, never read.
	if f, _, err := OpenRegular(c.blobPath(d, false)); err == nil {
		return f, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, _, err := OpenRegular(c.blobPath(d, true))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s: %w", d.Short(), ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	zr, err := zstd.NewReader(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &zstdFile{zr: zr, f: f}, nil
}

type zstdFile struct {
	zr *zstd.Decoder
	f  *os.File
}

func (z *zstdFile) Read(p []byte) (int, error) { return z.zr.Read(p) }
func (z *zstdFile) Close() error {
	z.zr.Close()
	return z.f.Close()
}

// ReadBlob returns a blob's content, verified. A blob whose content does not
// match its digest is reported, removed, and treated as absent.
func (c *Cache) ReadBlob(d Digest) ([]byte, error) {
	rc, err := c.openBlob(d)
	if err != nil {
		return nil, err
	}
	if f, ok := rc.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Size() > LimitBlobInMemory {
			rc.Close()
			return nil, fmt.Errorf("blob %s: %w (%d bytes, limit %d)", d.Short(), ErrTooLarge, fi.Size(), LimitBlobInMemory)
		}
	}
	data, err := ReadLimit(c.readCtx(), "blob "+d.Short(), rc, LimitBlobInMemory)
	rc.Close()
	if interrupted(err) {
		return nil, err // cut short, not corrupt: the blob stays
	}
	if err != nil || HashBytes(data) != d {
		c.dropCorrupt(d, err)
		return nil, fmt.Errorf("blob %s: %w", d.Short(), ErrNotFound)
	}
	return data, nil
}

// Materialize writes blob d to dest atomically, verifying the content as it
// streams; a mismatch drops the blob and leaves dest untouched.
func (c *Cache) Materialize(d Digest, dest string, perm os.FileMode) error {
	return c.MaterializeSize(d, dest, perm, -1, false)
}

// MaterializeSize is Materialize for a blob whose content is size bytes (as
// its record says; -1 when unknown): a blob that yields more is dropped as
// corrupt after size+1 bytes, never streamed to its end.
//
// An uncompressed blob is put at dest as a clone of it where the file system
// clones files, else as a hard link to it (read-only, mode 0444 whatever perm
// says) when dest is on the cache's file system; elsewhere it is copied.
func (c *Cache) MaterializeSize(d Digest, dest string, perm os.FileMode, size int64, share bool) error {
	if share && sharing() {
		if _, ok, err := c.materializeShared(d, dest, perm, size); ok {
			return err
		}
	}
	rc, err := c.openBlob(d)
	if err != nil {
		return err
	}
	defer rc.Close()
	src := safefile.Reader(c.readCtx(), rc)
	if size >= 0 {
		src = io.LimitReader(src, size+1)
	}
	var got Digest
	err = WriteAtomic(dest, perm, func(w *bufio.Writer) error {
		h := newHashWriter(w)
		if _, err := io.CopyBuffer(h, src, make([]byte, 1<<20)); err != nil {
			return err
		}
		got = h.digest()
		if got != d {
			return fmt.Errorf("blob %s: %w", d.Short(), ErrNotFound)
		}
		return nil
	})
	if err != nil {
		if !got.IsZero() && got != d {
			c.dropCorrupt(d, nil)
		}
		return fmt.Errorf("materialize %s: %w", dest, err)
	}
	return nil
}

// PutReader stores everything r yields as a blob, hashing it as it streams, and returns its digest
// and size: content from elsewhere (a shared store) enters the cache under the digest it has, never
// under one it claims. compress selects zstd, as for PutFile.
func (c *Cache) PutReader(r io.Reader, compress bool) (Digest, int64, error) {
	d, n, err := c.put(r, compress)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("store blob: %w", err)
	}
	return d, n, nil
}

// OpenBlob returns a reader of blob d's plain content (decompressed when stored with zstd), not
// verified: a reader that needs the content verified hashes it as it reads.
func (c *Cache) OpenBlob(d Digest) (io.ReadCloser, error) { return c.openBlob(d) }
