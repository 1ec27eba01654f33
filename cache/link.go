package cache

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// An output stored without compression (a dataset's .bin and .idx) shares its
// bytes with its blob instead of being a second full copy:
//
//   - where the file system clones files (FICLONE: XFS, Btrfs, bcachefs, ...),
//     the blob and the workspace file are copy-on-write clones, independent
//     files that share blocks until one is written;
//   - else, when both are on one file system, they are one file under two
//     names (a hard link), read-only (mode 0444) so that writing the workspace
//     file fails; a write that gets through anyway (as root, or after a chmod)
//     changes the blob too, which its digest check catches at its next restore
//     and in cache:verify, dropping it: a changed blob is never restored;
//   - across file systems, the bytes are copied as before.
//
// Every uncompressed blob carries a mark in its modification time: its
// seconds are kept, its nanoseconds are taken from its digest (linkMarkNS).
// A write moves the modification time to the present, so a stat shows that a
// blob was written since it was stored, through a linked output or not, and
// the cache reads it again before trusting it (blobIntact), dropping it when
// its content changed. A link stays detectable after the output's name is
// gone.
//
// RIVAL_CACHE_LINK=copy always copies.

// LinkEnv names the setting that turns sharing off ("copy").
const LinkEnv = "RIVAL_CACHE_LINK"

// linkMarkNS is the nanoseconds of the modification time of an uncompressed
// blob of digest d (its mark).
func linkMarkNS(d Digest) int64 { return int64(binary.LittleEndian.Uint32(d[:4]) % 1e9) }

// errUnmarked is why a blob that lost its mark and its content is dropped.
var errUnmarked = errors.New("written since it was stored, through an output linked to it or otherwise")

// marked reports whether fi, the stat of blob d, still has its mark: nothing
// wrote it since it was stored.
func marked(fi os.FileInfo, d Digest) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Mtim.Nsec == linkMarkNS(d)
}

// markLinked sets the mark of blob d on the file at path, keeping its
// modification time's seconds, and reports whether the file system kept it
// (one with coarse timestamps cannot: its blobs are copied instead).
func markLinked(path string, d Digest, mtimeNS int64) bool {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Sec: mtimeNS / 1e9, Nsec: linkMarkNS(d)}}
	if unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	fi, err := os.Lstat(path)
	return err == nil && marked(fi, d)
}

// mark gives the new blob d at path its mark.
func (c *Cache) mark(path string, d Digest) {
	if !markLinked(path, d, time.Now().UnixNano()) {
		c.noMarks.Store(true)
	}
}

// blobIntact reports whether the uncompressed blob d at path (whose stat is
// fi) can be trusted without reading it: it has its mark. A blob without
// one (stored by an older Rival, or written since) is read: if its content is
// still d it gets its mark, else it is dropped. Where the file system keeps
// no marks, no blob is linked and presence is trusted, as before.
func (c *Cache) blobIntact(path string, fi os.FileInfo, d Digest) bool {
	if marked(fi, d) || c.noMarks.Load() {
		return true
	}
	f, fi2, err := OpenRegular(path)
	if err != nil {
		return false
	}
	got, _, err := hashOpenFile(f, fi2.Size())
	f.Close()
	if err != nil || got != d {
		c.dropCorrupt(d, errUnmarked)
		return false
	}
	st, _ := statOf(fi2)
	if !markLinked(path, d, st.MtimeNS) {
		c.noMarks.Store(true)
	}
	return true
}

// sharing reports whether outputs may share their blobs' bytes.
func sharing() bool { return os.Getenv(LinkEnv) != "copy" }

// How an output came to share its blob; for tests and reports.
const (
	sharedCopy  = "copy"
	sharedClone = "clone"
	sharedLink  = "link"
)

// cloneInto makes dst, an empty file open for writing, a copy-on-write clone
// of src; it fails where the file system cannot clone (or across file systems).
func cloneInto(dst, src *os.File) error {
	return unix.IoctlFileClone(int(dst.Fd()), int(src.Fd()))
}

// linkName is a free temporary name beside base in dir for a hard link:
// marked like every temporary file of Rival's writers, so the debris sweep
// knows it.
func linkName(dir, base string) string {
	return filepath.Join(dir, "."+base+TempMarker+strconv.Itoa(os.Getpid())+"~"+strconv.FormatUint(rand.Uint64()>>1, 10))
}

// devOf is the device of the file system holding path.
func devOf(path string) (uint64, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := statOf(fi)
	return st.Dev, ok
}

// putShared stores the open output f (at path, whose stat was before) as an
// uncompressed blob sharing its bytes: a clone, or a hard link when the file
// system does not clone. It reads f once, to hash it. ok is false, with
// nothing done and f unread, when the blob folder is on another file system.
// after is f's stat once stored (a link changes its ctime and mode).
func (c *Cache) putShared(f *os.File, path string, before fileStat) (d Digest, n int64, after fileStat, how string, ok bool, err error) {
	blobs := filepath.Join(c.Dir, "blobs")
	if dev, known := devOf(blobs); !known || dev != before.Dev {
		return Digest{}, 0, fileStat{}, "", false, nil
	}
	if d, n, err = hashOpenFile(f, before.Size); err != nil {
		return Digest{}, 0, fileStat{}, "", true, err
	}
	if n != before.Size {
		return Digest{}, 0, fileStat{}, "", true, ErrChanged
	}
	dst := c.blobPath(d, false)
	if !c.hasBlobAs(d, false) {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return Digest{}, 0, fileStat{}, "", true, err
		}
		tmp := linkName(blobs, "put")
		if how, err = shareInto(tmp, f, path, before, d); errors.Is(err, ErrChanged) {
			return Digest{}, 0, fileStat{}, "", true, err
		} else if err != nil {
			// No clone and no hard link here (a file system without
			// links or fine timestamps, a link count at its limit): copy.
			if _, err := f.Seek(0, 0); err != nil {
				return Digest{}, 0, fileStat{}, "", true, err
			}
			return Digest{}, 0, fileStat{}, "", false, nil
		}
		if err := os.Rename(tmp, dst); err != nil {
			os.Remove(tmp)
			return Digest{}, 0, fileStat{}, "", true, err
		}
		syncDir(filepath.Dir(dst))
	} else if fi, err := f.Stat(); err != nil || !sameContent(fi, before) {
		return Digest{}, 0, fileStat{}, "", true, ErrChanged
	}
	fi, err := f.Stat()
	if err != nil {
		return Digest{}, 0, fileStat{}, "", true, err
	}
	after, _ = statOf(fi)
	if after.Dev != before.Dev || after.Ino != before.Ino || after.Size != before.Size {
		return Digest{}, 0, fileStat{}, "", true, ErrChanged
	}
	return d, n, after, how, true, nil
}

// putOutputShared is PutOutput's putShared: it stores the output at abs,
// whose stat was before, sharing its bytes, and remembers its digest. done is
// false, with nothing stored, where the bytes cannot be shared.
func (c *Cache) putOutputShared(abs string, before fileStat) (Digest, int64, bool, error) {
	f, fi, err := OpenRegular(abs)
	if err != nil {
		return Digest{}, 0, false, fmt.Errorf("cache %s: %w", abs, err)
	}
	defer f.Close()
	if st, _ := statOf(fi); st != before {
		return Digest{}, 0, false, nil // changed since its stat: PutFile reads it as it is
	}
	c.fileReads.Add(1)
	d, n, after, _, ok, err := c.putShared(f, abs, before)
	if err != nil {
		return Digest{}, 0, false, fmt.Errorf("cache %s: %w", abs, err)
	}
	if !ok {
		return Digest{}, 0, false, nil
	}
	data, _ := json.Marshal(statEntry{Path: abs, fileStat: after, Digest: d})
	if err := WriteFileAtomic(c.statEntryPath(abs), data, 0o644); err != nil {
		c.warn("cache: cannot remember digest of %s: %v", abs, err)
	}
	return d, n, true, nil
}

// shareInto makes tmp a clone of f, else a hard link to path (checked to be
// f's file), read-only either way, after checking that f did not change
// since before (a write moves its mtime), so that tmp holds the bytes of
// digest d that were hashed. A link gets the mark of d (markLinked).
func shareInto(tmp string, f *os.File, path string, before fileStat, d Digest) (string, error) {
	unchanged := func() error {
		if fi, err := f.Stat(); err != nil || !sameContent(fi, before) {
			return ErrChanged
		}
		return nil
	}
	t, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if cloneInto(t, f) == nil {
		err := unchanged()
		if err == nil {
			err = t.Chmod(0o444)
		}
		if err == nil {
			err = t.Sync()
		}
		if cerr := t.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmp)
			return "", err
		}
		return sharedClone, nil
	}
	t.Close()
	os.Remove(tmp)
	if err := os.Link(path, tmp); err != nil {
		return "", err
	}
	fi, err := os.Lstat(tmp)
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	if st, _ := statOf(fi); st.Dev != before.Dev || st.Ino != before.Ino {
		// Another file was renamed to path since it was opened.
		os.Remove(tmp)
		return "", ErrChanged
	}
	if err := unchanged(); err != nil {
		os.Remove(tmp)
		return "", err
	}
	if !markLinked(tmp, d, before.MtimeNS) {
		os.Remove(tmp)
		return "", errors.New("the file system keeps no mark in a modification time")
	}
	// The mark moved the output's mtime: what this process published there
	// is still the same file.
	if fi, err := f.Stat(); err == nil {
		republish(path, before, fi)
	}
	if err := f.Chmod(0o444); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return sharedLink, nil
}

// sameContent reports whether fi is still the file before described, as far
// as a stat tells: same inode, size and mtime (a chmod or link moves ctime
// only).
func sameContent(fi os.FileInfo, before fileStat) bool {
	st, ok := statOf(fi)
	return ok && contentID(st) == contentID(before)
}

// materializeShared puts uncompressed blob d at dest as a clone of it, else as
// a hard link to it when both are on one file system, after checking that its
// content is d (and size bytes, when size >= 0): the blob is read once. ok is
// false, with nothing done, when neither is possible (or the blob is stored
// compressed); the caller then copies.
func (c *Cache) materializeShared(d Digest, dest string, perm os.FileMode, size int64) (how string, ok bool, err error) {
	if err := c.readCtx().Err(); err != nil {
		// Stopped (Ctrl-C): say so rather than hash a blob nobody waits for.
		return "", true, fmt.Errorf("materialize %s: %w", dest, err)
	}
	bp := c.blobPath(d, false)
	bf, bfi, err := OpenRegular(bp)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", false, nil
		}
		return "", true, err
	}
	defer bf.Close()
	bst, _ := statOf(bfi)
	corrupt := func() (string, bool, error) {
		c.dropCorrupt(d, nil)
		return "", true, fmt.Errorf("materialize %s: blob %s: %w", dest, d.Short(), ErrNotFound)
	}
	if size >= 0 && bfi.Size() != size {
		return corrupt()
	}
	dir, base := filepath.Split(dest)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", true, fmt.Errorf("materialize %s: %w", dest, err)
	}
	// A clone: hash the clone itself, the very bytes published.
	t, err := os.CreateTemp(dir, TempPattern(base))
	if err != nil {
		return "", true, fmt.Errorf("materialize %s: %w", dest, err)
	}
	tmp := t.Name()
	if cloneInto(t, bf) == nil {
		got, _, herr := hashOpenFile(t, bfi.Size())
		if herr == nil && got != d {
			t.Close()
			os.Remove(tmp)
			return corrupt()
		}
		err := herr
		if err == nil {
			err = t.Chmod(perm)
		}
		if err == nil {
			err = t.Sync()
		}
		var fi os.FileInfo
		if err == nil {
			fi, err = t.Stat()
		}
		if cerr := t.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, dest)
		}
		if err != nil {
			os.Remove(tmp)
			return "", true, fmt.Errorf("materialize %s: %w", dest, err)
		}
		syncDir(dir)
		c.published(dest, fi, d)
		return sharedClone, true, nil
	}
	t.Close()
	os.Remove(tmp)
	if dev, known := devOf(dir); !known || dev != bst.Dev {
		return "", false, nil
	}
	// A hard link: the blob is checked, marked (markLinked), then linked;
	// the link must be the blob, unwritten since (its mark intact).
	got, _, err := hashOpenFile(bf, bfi.Size())
	if err != nil {
		return "", true, fmt.Errorf("materialize %s: %w", dest, err)
	}
	if fi, err := bf.Stat(); got != d || err != nil || !sameContent(fi, bst) {
		return corrupt()
	}
	if !marked(bfi, d) && !markLinked(bp, d, bst.MtimeNS) {
		return "", false, nil
	}
	tmp = linkName(dir, base)
	if err := os.Link(bp, tmp); err != nil {
		return "", false, nil
	}
	fi, err := os.Lstat(tmp)
	if err != nil {
		os.Remove(tmp)
		return "", true, fmt.Errorf("materialize %s: %w", dest, err)
	}
	if st, _ := statOf(fi); st.Ino != bst.Ino || st.Dev != bst.Dev {
		// Another blob was renamed into place meanwhile: copy that one.
		os.Remove(tmp)
		return "", false, nil
	} else if st.Size != bst.Size || !marked(fi, d) {
		os.Remove(tmp)
		return corrupt()
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return "", true, fmt.Errorf("materialize %s: %w", dest, err)
	}
	syncDir(dir)
	c.published(dest, fi, d)
	return sharedLink, true, nil
}

// published notes that fi was just renamed to dest with content d: for the
// runner's check of what it published, and in the stat cache so the next run
// does not read it again.
func (c *Cache) published(dest string, fi os.FileInfo, d Digest) {
	notePublishedInfo(dest, fi)
	abs, err := filepath.Abs(dest)
	if err != nil {
		return
	}
	st, ok := statOf(fi)
	if !ok {
		return
	}
	// A rename does not change the stat cache's fields but ctime on some
	// file systems; take them from the path.
	if fi2, err := os.Stat(abs); err == nil {
		if st2, _ := statOf(fi2); contentID(st2) == contentID(st) {
			st = st2
		}
	}
	data, _ := json.Marshal(statEntry{Path: abs, fileStat: st, Digest: d})
	if err := WriteFileAtomic(c.statEntryPath(abs), data, 0o644); err != nil {
		c.warn("cache: cannot remember digest of %s: %v", dest, err)
	}
}

// hasBlobAs reports whether d is stored in the given form (compressed or not).
// An uncompressed blob written since it was stored (through an output
// linked to it, say) is dropped here, as corrupt (blobIntact).
func (c *Cache) hasBlobAs(d Digest, compressed bool) bool {
	p := c.blobPath(d, compressed)
	fi, err := os.Lstat(p)
	if err != nil {
		return false
	}
	return compressed || c.blobIntact(p, fi, d)
}
