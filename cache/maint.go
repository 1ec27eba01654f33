package cache

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Stats summarises a cache directory.
type Stats struct {
	Dir           string
	Records       int
	Blobs         int
	BlobBytes     int64 // the blobs' lengths
	StatEntries   int
	Hits          int
	HitsByTask    map[string]int
	RecordsByTask map[string]int
	// DiskBytes is what the cache takes on disk: the file system blocks of
	// every file and folder under Dir (blobs, records, stat/, tasks/, locks/,
	// the hit log), each inode once, as `du -s -B1` counts them.
	DiskBytes int64
	// Files counts the files under Dir; AreaBytes and AreaFiles split both
	// by top-level folder ("blobs", "actions", "stat", "tasks", "locks").
	Files     int
	AreaBytes map[string]int64
	AreaFiles map[string]int
}

// usage is the disk usage of a directory tree.
type usage struct {
	total     int64
	files     int
	areaBytes map[string]int64
	areaFiles map[string]int
}

// blocksOf is the bytes of file system blocks fi takes.
func blocksOf(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}

// diskUsage walks dir and adds up the blocks of every file and folder, each
// inode once (a blob hard-linked elsewhere in the tree counts once).
func diskUsage(dir string) usage {
	u := usage{areaBytes: map[string]int64{}, areaFiles: map[string]int{}}
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil // removed while walked
		}
		fi, err := de.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && !de.IsDir() {
			k := inode{uint64(st.Dev), st.Ino}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		b := blocksOf(fi)
		u.total += b
		area := ""
		if rel, err := filepath.Rel(dir, p); err == nil && rel != "." {
			area, _, _ = strings.Cut(filepath.ToSlash(rel), "/")
		}
		u.areaBytes[area] += b
		if !de.IsDir() {
			u.files++
			u.areaFiles[area]++
		}
		return nil
	})
	return u
}

type recordInfo struct {
	rec      Record
	lastUsed time.Time
	path     string
}

func (c *Cache) records() ([]recordInfo, error) {
	var out []recordInfo
	root := filepath.Join(c.Dir, "actions")
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		data, err := ReadFileLimit(c.readCtx(), p, LimitRecord)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed concurrently
		}
		if interrupted(err) {
			return err // cut short, not unreadable: drop nothing
		}
		var r Record
		if err != nil || decodeRecord(data, &r) != nil || r.Key.IsZero() {
			c.warn("cache: unreadable record %s dropped", p)
			os.Remove(p)
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil
		}
		out = append(out, recordInfo{rec: r, lastUsed: fi.ModTime(), path: p})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list records in %s: %w", root, err)
	}
	return out, nil
}

// blobInfo is a file under blobs/ with its stat, as Stats and Trim need it.
type blobInfo struct {
	blobName
	size    int64
	modTime time.Time
}

// blobs lists the files under blobs/ with a stat each; a file removed since
// it was listed is left out.
func (c *Cache) blobs() ([]blobInfo, error) {
	var out []blobInfo
	err := c.walkBlobs(func(b blobName, de fs.DirEntry) {
		fi, err := de.Info()
		if err != nil {
			return
		}
		out = append(out, blobInfo{blobName: b, size: fi.Size(), modTime: fi.ModTime()})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Stats counts what the cache holds.
func (c *Cache) Stats() (Stats, error) {
	s := Stats{Dir: c.Dir, HitsByTask: map[string]int{}, RecordsByTask: map[string]int{}}
	recs, err := c.records()
	if err != nil {
		return s, err
	}
	hits := c.hits()
	for _, r := range recs {
		s.Records++
		task := taskFamily(r.rec.Task)
		s.RecordsByTask[task]++
		s.HitsByTask[task] += hits[r.rec.Key]
		s.Hits += hits[r.rec.Key]
	}
	blobs, err := c.blobs()
	if err != nil {
		return s, err
	}
	for _, b := range blobs {
		if b.named {
			s.Blobs++
			s.BlobBytes += b.size
		}
	}
	u := diskUsage(c.Dir)
	s.DiskBytes, s.Files, s.AreaBytes, s.AreaFiles = u.total, u.files, u.areaBytes, u.areaFiles
	s.StatEntries = u.areaFiles["stat"]
	return s, nil
}

// taskFamily is the task name without its arguments ("encode" for
// "encode bc llama").
func taskFamily(task string) string {
	if i := strings.IndexByte(task, ' '); i > 0 {
		return task[:i]
	}
	return task
}

// TrimReport says what Trim removed. Byte counts are file system blocks,
// measured on disk before and after (Stats.DiskBytes).
type TrimReport struct {
	RecordsRemoved int
	BlobsRemoved   int
	// StatRemoved, TasksRemoved and LocksRemoved count the stat-cache
	// entries, last-run entries and idle lock files removed.
	StatRemoved  int
	TasksRemoved int
	LocksRemoved int
	BytesFreed   int64
	BytesKept    int64
	TempRemoved  int // temporary files killed processes left behind
	// ProgramsRemoved counts the programs of bin/ (rival-kube, rival-plot, rival-parquet, one per
	// checkout) not built or run for maxAge.
	ProgramsRemoved int
}

// orphanGrace protects blobs that a running task stored but has not yet
// recorded.
const orphanGrace = time.Hour

// Trim removes records unused for longer than maxAge (0: no age limit), then
// least recently used records until the cache takes at most maxBytes on disk
// (0: no size limit), counting every file it holds; with each record go the
// blobs no other record references, its last-run entry, the stat-cache
// entries of its outputs and its lock file. Then stale stat-cache entries
// (their file changed or is gone), last-run entries of records that no longer
// exist and lock files no process holds are removed too.
func (c *Cache) Trim(ctx context.Context, maxBytes int64, maxAge time.Duration) (TrimReport, error) {
	var rep TrimReport
	lk, err := c.Lock(ctx, "trim")
	if err != nil {
		return rep, err
	}
	defer lk.Unlock()
	before := diskUsage(c.Dir).total
	recs, err := c.records()
	if err != nil {
		return rep, err
	}
	blobs, err := c.blobs()
	if err != nil {
		return rep, err
	}
	blobDisk := map[Digest]int64{}
	for _, b := range blobs {
		if b.named {
			if fi, err := os.Stat(b.path); err == nil {
				blobDisk[b.digest] += blocksOf(fi)
			}
		}
	}
	lasts := c.lastRuns()
	sort.Slice(recs, func(i, j int) bool { return recs[i].lastUsed.Before(recs[j].lastUsed) })
	refs := map[Digest]int{}
	pathRefs := map[string]int{}
	for _, r := range recs {
		for _, o := range r.rec.Outputs {
			refs[o.Digest]++
			if o.AbsPath != "" {
				pathRefs[o.AbsPath]++
			}
		}
	}
	referenced := map[Digest]bool{}
	for d := range refs {
		referenced[d] = true
	}
	fileDisk := func(p string) int64 {
		if fi, err := os.Lstat(p); err == nil {
			return blocksOf(fi)
		}
		return 0
	}
	// total follows what the removals free, so that the size limit counts
	// records, stat entries, last-run entries and locks as well as blobs.
	total := before
	removed := map[Digest]bool{}
	now := time.Now()
	for _, r := range recs {
		old := maxAge > 0 && now.Sub(r.lastUsed) > maxAge
		big := maxBytes > 0 && total > maxBytes
		if !old && !big {
			continue
		}
		freed := fileDisk(r.path)
		if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
			return rep, fmt.Errorf("trim %s: %w", r.path, err)
		}
		rep.RecordsRemoved++
		removed[r.rec.Key] = true
		for _, o := range r.rec.Outputs {
			refs[o.Digest]--
			if refs[o.Digest] == 0 {
				freed += blobDisk[o.Digest]
			}
			if o.AbsPath != "" {
				pathRefs[o.AbsPath]--
				if pathRefs[o.AbsPath] == 0 {
					sp := c.statEntryPath(o.AbsPath)
					size := fileDisk(sp)
					if os.Remove(sp) == nil {
						rep.StatRemoved++
						freed += size
					}
				}
			}
		}
		for _, lp := range lasts[r.rec.Key] {
			size := fileDisk(lp)
			if os.Remove(lp) == nil {
				rep.TasksRemoved++
				freed += size
			}
		}
		delete(lasts, r.rec.Key)
		lockPath := filepath.Join(c.Dir, "locks", r.rec.Key.String()+".lock")
		size := fileDisk(lockPath)
		if removeIdleLock(lockPath) {
			rep.LocksRemoved++
			freed += size
		}
		total -= freed
	}
	for _, b := range blobs {
		// A blob no record referenced when trim began may belong to a task
		// that stored it and has not written its record yet: it gets an hour.
		if b.named && refs[b.digest] > 0 || !referenced[b.digest] && now.Sub(b.modTime) < orphanGrace {
			continue
		}
		if err := os.Remove(b.path); err == nil {
			rep.BlobsRemoved++
		}
	}
	// Last-run entries whose record is gone say nothing a run can use.
	for key, paths := range lasts {
		if _, err := os.Stat(c.recordPath(key)); err == nil {
			continue
		}
		for _, lp := range paths {
			if os.Remove(lp) == nil {
				rep.TasksRemoved++
			}
		}
	}
	rep.StatRemoved += c.removeStaleStat()
	rep.LocksRemoved += c.removeIdleLocks()
	rep.TempRemoved += c.removeDebris(now)
	rep.ProgramsRemoved += c.removeOldPrograms(now, maxAge)
	err = c.compactHits(recs)
	rep.BytesKept = diskUsage(c.Dir).total
	rep.BytesFreed = max(0, before-rep.BytesKept)
	return rep, err
}

// lastRuns maps each record key to the last-run entries (tasks/) naming it.
func (c *Cache) lastRuns() map[Digest][]string {
	out := map[Digest][]string{}
	filepath.WalkDir(filepath.Join(c.Dir, "tasks"), func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		data, err := ReadFileLimit(c.readCtx(), p, LimitRecord)
		if err != nil {
			return nil
		}
		var l lastRun
		if json.Unmarshal(data, &l) != nil {
			return nil
		}
		out[l.Key] = append(out[l.Key], p)
		return nil
	})
	return out
}

// removeStaleStat removes stat-cache entries whose file is gone or no longer
// has the identity the entry recorded (its digest would never be used again),
// and unreadable entries.
func (c *Cache) removeStaleStat() int {
	n := 0
	filepath.WalkDir(filepath.Join(c.Dir, "stat"), func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || strings.HasPrefix(de.Name(), ".") {
			return nil
		}
		if c.readCtx().Err() != nil {
			return fs.SkipAll // cut short: an unread entry is not stale
		}
		stale := true
		if data, err := ReadFileLimit(c.readCtx(), p, LimitStatEntry); err == nil {
			var e statEntry
			if json.Unmarshal(data, &e) == nil && e.Path != "" && c.statEntryPath(e.Path) == p {
				if fi, err := os.Stat(e.Path); err == nil {
					st, ok := statOf(fi)
					stale = !ok || st != e.fileStat
				}
			}
		}
		if stale && os.Remove(p) == nil {
			n++
		}
		return nil
	})
	return n
}

// removeIdleLocks removes the lock files no process holds. A lock file holds
// no state; LockFile recreates it, and a process that opened it before it was
// removed notices and locks the new one (samePath).
func (c *Cache) removeIdleLocks() int {
	n := 0
	entries, err := os.ReadDir(filepath.Join(c.Dir, "locks"))
	if err != nil {
		return 0
	}
	for _, de := range entries {
		if de.Type().IsRegular() && strings.HasSuffix(de.Name(), ".lock") {
			if removeIdleLock(filepath.Join(c.Dir, "locks", de.Name())) {
				n++
			}
		}
	}
	return n
}

// removeIdleLock removes the lock file at path if no process holds it: it
// takes the lock without waiting, removes the file while holding it, then
// releases it. It reports whether the file was removed.
func removeIdleLock(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return samePath(f, path) && os.Remove(path) == nil
}

// removeOldPrograms removes the programs of bin/ that no run has built or started for maxAge (0:
// none), each with its lock file: each is one checkout's build, and a checkout that is gone or
// unused leaves it behind. A later run builds it again. One a process is building (its lock held)
// is left; the lock is removed while held, as LockFile expects.
func (c *Cache) removeOldPrograms(now time.Time, maxAge time.Duration) int {
	if maxAge <= 0 {
		return 0
	}
	dir := filepath.Join(c.Dir, "bin")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, de := range entries {
		if !de.Type().IsRegular() || strings.HasSuffix(de.Name(), ".lock") {
			continue
		}
		fi, err := de.Info()
		if err != nil || now.Sub(fi.ModTime()) <= maxAge {
			continue
		}
		p := filepath.Join(dir, de.Name())
		f, err := os.OpenFile(p+".lock", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			if os.Remove(p) == nil {
				n++
			}
			if samePath(f, p+".lock") {
				os.Remove(p + ".lock")
			}
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
		}
		f.Close()
	}
	return n
}

// removeDebris removes the temporary files of atomic writes (".NAME.tmp-*")
// and blob stores (".put-*") older than orphanGrace: a process that was
// killed left them, a live one renames its own within moments.
func (c *Cache) removeDebris(now time.Time) int {
	n := 0
	for _, sub := range []string{"blobs", "actions", "stat", "tasks", "locks"} {
		filepath.WalkDir(filepath.Join(c.Dir, sub), func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() || !de.Type().IsRegular() {
				return nil
			}
			name := de.Name()
			if !(strings.HasPrefix(name, ".") && (strings.Contains(name, ".tmp-") || strings.HasPrefix(name, ".put-"))) {
				return nil
			}
			if fi, err := de.Info(); err == nil && now.Sub(fi.ModTime()) > orphanGrace {
				if os.Remove(p) == nil {
					n++
				}
			}
			return nil
		})
	}
	return n
}

// compactHits rewrites the hit log without the keys of removed records.
func (c *Cache) compactHits(before []recordInfo) error {
	live := map[Digest]bool{}
	for _, r := range before {
		if _, err := os.Stat(r.path); err == nil {
			live[r.rec.Key] = true
		}
	}
	hits := c.hits()
	path := filepath.Join(c.Dir, "actions", "hits.log")
	return WriteAtomic(path, 0o644, func(w *bufio.Writer) error {
		for d, n := range hits {
			if !live[d] {
				continue
			}
			for i := 0; i < n; i++ {
				w.WriteString(d.String() + "\n")
			}
		}
		return nil
	})
}

// Records lists every action record in the cache.
func (c *Cache) Records() ([]Record, error) {
	infos, err := c.records()
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(infos))
	for i, r := range infos {
		out[i] = r.rec
	}
	return out, nil
}
