package cache

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// PutOutput stores a task's output file as a blob and remembers its digest
// in the stat cache, reading the file once, or not at all when the stat cache
// already knows it and the blob is stored. The digest is remembered only if
// the file did not change while it was read.
func (c *Cache) PutOutput(path string, compress, share bool) (Digest, int64, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("cache %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("cache %s: %w", path, err)
	}
	before, ok := statOf(fi)
	// A task may have stored the file itself (to learn its digest without a
	// second read); then the stat cache knows it and the blob is there.
	if d, known := c.knownDigest(abs, before, ok); known && c.hasBlobAs(d, compress) {
		return d, fi.Size(), nil
	}
	if !compress && share && ok && sharing() {
		// The blob shares the output's bytes (a clone or a hard link) when
		// both are on one file system.
		if d, n, done, err := c.putOutputShared(abs, before); err != nil || done {
			return d, n, err
		}
	}
	d, n, err := c.PutFile(abs, compress)
	if err != nil {
		return Digest{}, 0, err
	}
	if fi2, err := os.Stat(abs); err == nil && ok {
		if after, _ := statOf(fi2); after == before {
			data, _ := json.Marshal(statEntry{Path: abs, fileStat: before, Digest: d})
			WriteFileAtomic(c.statEntryPath(abs), data, 0o644)
		}
	}
	return d, n, nil
}

// PutPublished stores a task's output as a blob from one open file, and
// only if that file is want (a WrittenID taken when the task returned): the
// file it published, never one another run renamed there since. It
// returns the digest, the size and the stat identity of the stored file, so
// a caller can check later that path still holds it. ErrChanged reports
// another file at path or a change while reading.
func (c *Cache) PutPublished(path string, compress, share bool, want string) (Digest, int64, string, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return Digest{}, 0, "", fmt.Errorf("cache %s: %w", path, err)
	}
	defer f.Close()
	before, ok := statOf(fi)
	if !ok || contentID(before) != want {
		return Digest{}, 0, "", fmt.Errorf("cache %s: %w", path, ErrChanged)
	}
	abs, _ := filepath.Abs(path)
	var d Digest
	var n int64
	after := before
	stored := false
	if k, known := c.knownDigest(abs, before, ok); known && c.hasBlobAs(k, compress) {
		d, n, stored = k, fi.Size(), true
	} else if !compress && share && sharing() {
		// The blob shares the output's bytes (a clone or a hard link), when
		// both are on one file system.
		c.fileReads.Add(1)
		sd, sn, sst, _, ok, err := c.putShared(f, path, before)
		if err != nil {
			return Digest{}, 0, "", fmt.Errorf("cache %s: %w", path, err)
		}
		if ok {
			d, n, after, stored = sd, sn, sst, true
		}
	}
	if !stored {
		c.fileReads.Add(1)
		if d, n, err = c.put(f, compress); err != nil {
			return Digest{}, 0, "", fmt.Errorf("cache %s: %w", path, err)
		}
	}
	fi2, err := f.Stat()
	if err != nil {
		return Digest{}, 0, "", fmt.Errorf("cache %s: %w", path, err)
	}
	if now, _ := statOf(fi2); now != after || n != fi.Size() {
		return Digest{}, 0, "", fmt.Errorf("cache %s: %w", path, ErrChanged)
	}
	// The next run learns the digest from a stat, not a read.
	data, _ := json.Marshal(statEntry{Path: abs, fileStat: after, Digest: d})
	if err := WriteFileAtomic(c.statEntryPath(abs), data, 0o644); err != nil {
		c.warn("cache: cannot remember digest of %s: %v", path, err)
	}
	return d, n, identity(after), nil
}
