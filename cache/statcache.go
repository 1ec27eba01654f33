package cache

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type statEntry struct {
	Path string `json:"path"`
	fileStat
	Digest Digest `json:"digest"`
}

func (c *Cache) statEntryPath(abs string) string {
	return shard(filepath.Join(c.Dir, "stat"), HashBytes([]byte(abs)))
}

// FileDigest returns the digest of the file at path, from the stat cache when
// the file's (device, inode, size, mtime, ctime) are unchanged since it was
// last hashed, else by reading it.
func (c *Cache) FileDigest(path string) (Digest, int64, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return Digest{}, 0, fmt.Errorf("hash %s: not a regular file", path)
	}
	before, ok := statOf(fi)
	entryPath := c.statEntryPath(abs)
	if d, known := c.knownDigest(abs, before, ok); known {
		return d, fi.Size(), nil
	}
	c.fileReads.Add(1)
	d, n, err := HashFile(abs)
	if err != nil {
		return Digest{}, 0, err
	}
	// Remember the digest only if the file did not change while we read it.
	if fi2, err := os.Stat(abs); err == nil && ok {
		if after, _ := statOf(fi2); after == before {
			data, _ := json.Marshal(statEntry{Path: abs, fileStat: before, Digest: d})
			if err := WriteFileAtomic(entryPath, data, 0o644); err != nil {
				c.warn("cache: cannot remember digest of %s: %v", path, err)
			}
		}
	}
	return d, n, nil
}

// knownDigest is the stat cache's digest of abs when its entry matches st.
func (c *Cache) knownDigest(abs string, st fileStat, ok bool) (Digest, bool) {
	if !ok {
		return Digest{}, false
	}
	data, err := ReadFileLimit(c.readCtx(), c.statEntryPath(abs), LimitStatEntry)
	if err != nil {
		return Digest{}, false
	}
	var e statEntry
	if json.Unmarshal(data, &e) != nil || e.Path != abs || e.fileStat != st || e.Digest.IsZero() {
		return Digest{}, false
	}
	return e.Digest, true
}

// Forget drops the stat-cache entry of path, so the next FileDigest rereads it.
func (c *Cache) Forget(path string) {
	if abs, err := filepath.Abs(path); err == nil {
		os.Remove(c.statEntryPath(abs))
	}
}

// TreeDigest digests a file, or a directory as the sorted list of its
// regular files' relative paths, modes and digests. Symlinks and special
// files are refused rather than silently skipped.
func (c *Cache) TreeDigest(path string) (Digest, int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	if !fi.IsDir() {
		return c.FileDigest(path)
	}
	type entry struct {
		rel  string
		mode fs.FileMode
		d    Digest
	}
	var entries []entry
	var total int64
	err = filepath.WalkDir(path, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() {
			return nil
		}
		if !de.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		d, n, err := c.FileDigest(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(path, p)
		entries = append(entries, entry{filepath.ToSlash(rel), info.Mode().Perm() & 0o111, d})
		total += n
		return nil
	})
	if err != nil {
		return Digest{}, 0, fmt.Errorf("hash %s: %w", path, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	var b strings.Builder
	b.WriteString("rival-tree/v1\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "%d:%s %o %s\n", len(e.rel), e.rel, e.mode, e.d)
	}
	return HashBytes([]byte(b.String())), total, nil
}
