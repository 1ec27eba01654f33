package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

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
// notices. A verify cut short by ctx (or the cache's context) returns its
// error and drops nothing it did not finish reading.
//
// Most caches hold many small entries, so each file costs what its system
// calls cost: blobs are listed without a stat (their size comes from the
// fstat of the open), records without one (Verify needs no access time),
// and every file is read by a worker's wholeReader (open, fstat, one pread,
// close).
func (c *Cache) Verify(ctx context.Context, progress func(done, total int)) (VerifyReport, error) {
	var rep VerifyReport
	blobs, err := c.blobPaths()
	if err != nil {
		return rep, err
	}
	readers := make([]wholeReader, runtime.GOMAXPROCS(0))
	corrupt := map[Digest]bool{}
	var mu sync.Mutex
	done := 0
	// Blobs are hashed on every core: many small ones side by side, a large
	// one as a parallel tree.
	err = forEachWorker(ctx, len(blobs), len(readers), func(w, i int) {
		b := blobs[i]
		var size int64
		ok, checked := true, b.named
		if b.named {
			got, n, err := c.verifyBlob(ctx, &readers[w], b)
			// A read cut short says nothing about the blob, and one removed
			// since it was listed (trimmed) is not corrupt.
			checked = !interrupted(err) && !errors.Is(err, fs.ErrNotExist)
			ok, size = err == nil && got == b.digest, n
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		if progress != nil {
			progress(done, len(blobs))
		}
		if !checked {
			return
		}
		rep.BlobsChecked++
		rep.BytesChecked += size
		if !ok {
			corrupt[b.digest] = true
			rep.CorruptBlobs = append(rep.CorruptBlobs, b.digest)
		}
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return rep, err
	}
	sort.Slice(rep.CorruptBlobs, func(i, j int) bool { return rep.CorruptBlobs[i].String() < rep.CorruptBlobs[j].String() })
	for _, d := range rep.CorruptBlobs {
		c.dropCorrupt(d, nil)
	}
	recs, err := c.verifyRecords(ctx, readers)
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
	paths := make([]string, 0, len(named))
	for p := range named {
		paths = append(paths, p)
	}
	err = forEachWorker(ctx, len(paths), len(readers), func(w, i int) {
		p := paths[i]
		d, err := c.rehash(ctx, &readers[w], p, named[p])
		if errors.Is(err, fs.ErrNotExist) || interrupted(err) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		rep.OutputsChecked++
		if err != nil || !named[p][d] {
			rep.ModifiedOutputs = append(rep.ModifiedOutputs, p)
			return
		}
		current[p] = d
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return rep, err
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

// blobPaths lists the files under blobs/ without a stat each.
func (c *Cache) blobPaths() ([]blobName, error) {
	var out []blobName
	err := c.walkBlobs(func(b blobName, _ fs.DirEntry) {
		out = append(out, b)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// verifyBlob rehashes a stored blob's plain content and returns the bytes
// it takes (its file's length): an uncompressed blob as a file (on every
// core when large), a compressed one through zstd.
func (c *Cache) verifyBlob(ctx context.Context, r *wholeReader, b blobName) (Digest, int64, error) {
	if !strings.HasSuffix(b.path, ".zst") {
		d, st, err := r.hashFile(ctx, b.path)
		return d, st.Size, err
	}
	var size int64
	if fi, err := os.Lstat(b.path); err == nil {
		size = fi.Size()
	}
	rc, err := c.openBlob(b.digest)
	if err != nil {
		return Digest{}, size, err
	}
	defer rc.Close()
	d, _, err := HashReader(rc)
	return d, size, err
}

// verifyRecords reads and decodes every action record on every core, in
// the order of their paths. An unreadable record is dropped with a warning,
// as records() does; a read cut short returns its error and drops nothing.
func (c *Cache) verifyRecords(ctx context.Context, readers []wholeReader) ([]recordInfo, error) {
	var paths []string
	root := filepath.Join(c.Dir, "actions")
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.IsDir() && strings.HasSuffix(p, ".json") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list records in %s: %w", root, err)
	}
	rctx := c.readCtx()
	recs := make([]recordInfo, len(paths))
	keep := make([]bool, len(paths))
	errs := make([]error, len(paths))
	err = forEachWorker(ctx, len(paths), len(readers), func(w, i int) {
		p := paths[i]
		data, err := readers[w].readFile(rctx, p, LimitRecord)
		if errors.Is(err, fs.ErrNotExist) {
			return // removed concurrently
		}
		if interrupted(err) {
			errs[i] = err // cut short, not unreadable: drop nothing
			return
		}
		r := &recs[i].rec
		if err != nil || decodeRecord(data, r) != nil || r.Key.IsZero() {
			c.warn("cache: unreadable record %s dropped", p)
			os.Remove(p)
			return
		}
		recs[i].path = p
		keep[i] = true
	})
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		return nil, fmt.Errorf("list records in %s: %w", root, err)
	}
	out := recs[:0]
	for i := range recs {
		if keep[i] {
			out = append(out, recs[i])
		}
	}
	return out, nil
}

// forEachWorker calls f(w, i) for i in 0..n-1 on the given number of
// workers, w being the worker's index (for state it keeps, such as a
// buffer); it stops handing out work when ctx ends and returns ctx's error
// then.
func forEachWorker(ctx context.Context, n, workers int, f func(w, i int)) error {
	next := make(chan int)
	var wg sync.WaitGroup
	for w := range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(w, i)
			}
		}()
	}
	var err error
	for i := 0; i < n && err == nil; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	close(next)
	wg.Wait()
	return err
}

// rehash digests the file at path by reading it, whatever the stat cache
// says. A file whose content is one of want (the digests its records name)
// leaves its stat-cache entry as it is, unread; another gets a new entry:
// verifying an unchanged output writes nothing and reads one file.
func (c *Cache) rehash(ctx context.Context, r *wholeReader, path string, want map[Digest]bool) (Digest, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Digest{}, err
	}
	c.fileReads.Add(1)
	d, st, err := r.hashFile(ctx, abs)
	if err != nil {
		return Digest{}, err
	}
	if want[d] {
		return d, nil
	}
	before := statOfUnix(&st)
	if known, isKnown := c.knownDigest(abs, before, true); isKnown && known == d {
		return d, nil
	}
	c.Forget(abs)
	if fi2, err := os.Stat(abs); err == nil {
		if after, _ := statOf(fi2); after == before {
			data, _ := json.Marshal(statEntry{Path: abs, fileStat: before, Digest: d})
			if err := WriteFileAtomic(c.statEntryPath(abs), data, 0o644); err != nil {
				c.warn("cache: cannot remember digest of %s: %v", path, err)
			}
		}
	}
	return d, nil
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
