package cache

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Stats summarises a cache directory.
type Stats struct {
	Dir           string
	Records       int
	Blobs         int
	BlobBytes     int64
	StatEntries   int
	Hits          int
	HitsByTask    map[string]int
	RecordsByTask map[string]int
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
		data, err := os.ReadFile(p)
		if err != nil {
			return nil // removed concurrently
		}
		var r Record
		if json.Unmarshal(data, &r) != nil || r.Key.IsZero() {
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

type blobInfo struct {
	digest  Digest
	named   bool // the file is named by a digest (not debris or a stranger)
	path    string
	size    int64
	modTime time.Time
}

func (c *Cache) blobs() ([]blobInfo, error) {
	var out []blobInfo
	root := filepath.Join(c.Dir, "blobs")
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() {
			return nil
		}
		d, err := ParseDigest(strings.TrimSuffix(de.Name(), ".zst"))
		named := err == nil
		fi, err := de.Info()
		if err != nil {
			return nil
		}
		out = append(out, blobInfo{digest: d, named: named, path: p, size: fi.Size(), modTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list blobs in %s: %w", root, err)
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
	filepath.WalkDir(filepath.Join(c.Dir, "stat"), func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			s.StatEntries++
		}
		return nil
	})
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

// TrimReport says what Trim removed.
type TrimReport struct {
	RecordsRemoved int
	BlobsRemoved   int
	BytesFreed     int64
	BytesKept      int64
	TempRemoved    int // temporary files killed processes left behind
}

// orphanGrace protects blobs that a running task stored but has not yet
// recorded.
const orphanGrace = time.Hour

// Trim removes records unused for longer than maxAge (0: no age limit), then
// least recently used records until the referenced blobs fit in maxBytes
// (0: no size limit), then blobs no record references.
func (c *Cache) Trim(ctx context.Context, maxBytes int64, maxAge time.Duration) (TrimReport, error) {
	var rep TrimReport
	lk, err := c.Lock(ctx, "trim")
	if err != nil {
		return rep, err
	}
	defer lk.Unlock()
	recs, err := c.records()
	if err != nil {
		return rep, err
	}
	blobs, err := c.blobs()
	if err != nil {
		return rep, err
	}
	size := map[Digest]int64{}
	for _, b := range blobs {
		if b.named {
			size[b.digest] += b.size
		}
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].lastUsed.Before(recs[j].lastUsed) })
	refs := map[Digest]int{}
	for _, r := range recs {
		for _, o := range r.rec.Outputs {
			refs[o.Digest]++
		}
	}
	var kept int64
	for d := range refs {
		kept += size[d]
	}
	now := time.Now()
	for _, r := range recs {
		old := maxAge > 0 && now.Sub(r.lastUsed) > maxAge
		big := maxBytes > 0 && kept > maxBytes
		if !old && !big {
			continue
		}
		if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
			return rep, fmt.Errorf("trim %s: %w", r.path, err)
		}
		rep.RecordsRemoved++
		for _, o := range r.rec.Outputs {
			refs[o.Digest]--
			if refs[o.Digest] == 0 {
				kept -= size[o.Digest]
			}
		}
	}
	for _, b := range blobs {
		if b.named && refs[b.digest] > 0 || now.Sub(b.modTime) < orphanGrace {
			continue
		}
		if err := os.Remove(b.path); err == nil {
			rep.BlobsRemoved++
			rep.BytesFreed += b.size
		}
	}
	rep.BytesKept = kept
	rep.TempRemoved += c.removeDebris(now)
	return rep, c.compactHits(recs)
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

// VerifyReport lists what Verify found.
type VerifyReport struct {
	BlobsChecked    int
	BytesChecked    int64
	CorruptBlobs    []Digest
	RecordsDropped  int
	OutputsChecked  int
	ModifiedOutputs []string // materialized files that no longer match their record
	Readopted       []string // intact workspace copies stored again in place of corrupt blobs
}

// Verify rehashes every blob and every materialized output still present.
// Corrupt blobs and the records that need them are dropped; a modified
// output is reported and its stat-cache entry forgotten, so the next run
// notices.
func (c *Cache) Verify(ctx context.Context, progress func(done, total int)) (VerifyReport, error) {
	var rep VerifyReport
	blobs, err := c.blobs()
	if err != nil {
		return rep, err
	}
	corrupt := map[Digest]bool{}
	for i, b := range blobs {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if progress != nil {
			progress(i, len(blobs))
		}
		if !b.named {
			continue
		}
		rep.BlobsChecked++
		rep.BytesChecked += b.size
		rc, err := c.openBlob(b.digest)
		ok := err == nil
		if ok {
			got, _, herr := HashReader(rc)
			rc.Close()
			ok = herr == nil && got == b.digest
		}
		if !ok {
			corrupt[b.digest] = true
			rep.CorruptBlobs = append(rep.CorruptBlobs, b.digest)
			c.dropCorrupt(b.digest, nil)
		}
	}
	recs, err := c.records()
	if err != nil {
		return rep, err
	}
	// Several records may name one path (the same output asked for with
	// other inputs): the file is modified only when it matches none of them.
	named := map[string]map[Digest]bool{}
	for _, r := range recs {
		for _, o := range r.rec.Outputs {
			if o.AbsPath != "" {
				if named[o.AbsPath] == nil {
					named[o.AbsPath] = map[Digest]bool{}
				}
				named[o.AbsPath][o.Digest] = true
			}
		}
	}
	current := map[string]Digest{}
	for p := range named {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		rep.OutputsChecked++
		c.Forget(p)
		d, _, err := c.FileDigest(p)
		if err != nil || !named[p][d] {
			rep.ModifiedOutputs = append(rep.ModifiedOutputs, p)
			continue
		}
		current[p] = d
	}
	for _, r := range recs {
		bad := false
		for _, o := range r.rec.Outputs {
			if !corrupt[o.Digest] || c.HasBlob(o.Digest) {
				continue
			}
			// The workspace still holds the content the record names: store
			// it again rather than forget the record.
			if o.AbsPath != "" && current[o.AbsPath] == o.Digest {
				if d, _, err := c.PutFile(o.AbsPath, o.Compressed); err == nil && d == o.Digest {
					rep.Readopted = append(rep.Readopted, o.AbsPath)
					continue
				}
			}
			bad = true
		}
		if bad {
			os.Remove(r.path)
			rep.RecordsDropped++
		}
	}
	sort.Strings(rep.ModifiedOutputs)
	rep.ModifiedOutputs = dedupe(rep.ModifiedOutputs)
	return rep, nil
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
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
