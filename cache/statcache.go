package cache

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// fileStat is the identity of a file's content as far as the kernel can
// tell without reading it.
type fileStat struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	CtimeNS int64  `json:"ctime_ns"`
}

type statEntry struct {
	Path string `json:"path"`
	fileStat
	Digest Digest `json:"digest"`
}

func statOf(fi fs.FileInfo) (fileStat, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStat{}, false
	}
	return fileStat{
		Dev:     uint64(st.Dev),
		Ino:     st.Ino,
		Size:    fi.Size(),
		MtimeNS: st.Mtim.Sec*1e9 + st.Mtim.Nsec,
		CtimeNS: st.Ctim.Sec*1e9 + st.Ctim.Nsec,
	}, true
}

// Stat returns the stat identity of path, for detecting changes during a run.
func Stat(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, _ := statOf(fi)
	return fmt.Sprintf("%d:%d:%d:%d:%d", st.Dev, st.Ino, st.Size, st.MtimeNS, st.CtimeNS), nil
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
