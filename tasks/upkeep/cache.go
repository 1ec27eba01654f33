package upkeep

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/internal/units"
)

// CacheStats prints what the cache c holds to out.
func CacheStats(out io.Writer, c *cache.Cache) error {
	s, err := c.Stats()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cache: %s\n", s.Dir)
	fmt.Fprintf(out, "entries: %d records, %d blobs, %s\n", s.Records, s.Blobs, units.Bytes(s.BlobBytes))
	fmt.Fprintf(out, "on disk: %s in %d files (file system blocks, folders included)\n", units.Bytes(s.DiskBytes), s.Files)
	for _, a := range []string{"blobs", "actions", "stat", "tasks", "locks", "bin"} {
		fmt.Fprintf(out, "  %-8s %10s %8d files\n", a+"/", units.Bytes(s.AreaBytes[a]), s.AreaFiles[a])
	}
	fmt.Fprintf(out, "hits: %d\n", s.Hits)
	fmt.Fprintf(out, "stat cache: %d files\n", s.StatEntries)
	var fams []string
	for f := range s.RecordsByTask {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	for _, f := range fams {
		fmt.Fprintf(out, "  %-10s %4d records %6d hits\n", f, s.RecordsByTask[f], s.HitsByTask[f])
	}
	return nil
}

// CacheTrim trims the cache c to maxSize on disk and drops entries unused
// for maxAge, both as users type them (RIVAL_CACHE_MAX, RIVAL_CACHE_MAX_AGE:
// "50GiB", "30d"), and says what went to out.
func CacheTrim(ctx context.Context, out io.Writer, c *cache.Cache, maxSize, maxAge string) error {
	size, err := units.ParseSize(maxSize)
	if err != nil {
		return fmt.Errorf("RIVAL_CACHE_MAX: %w", err)
	}
	age, err := units.ParseAge(maxAge)
	if err != nil {
		return fmt.Errorf("RIVAL_CACHE_MAX_AGE: %w", err)
	}
	rep, err := c.Trim(ctx, size, age)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cache:trim (max %s on disk, unused for %s): removed %d records and %d blobs, freed %s; %s on disk\n",
		maxSize, maxAge, rep.RecordsRemoved, rep.BlobsRemoved, units.Bytes(rep.BytesFreed), units.Bytes(rep.BytesKept))
	if rep.StatRemoved+rep.TasksRemoved+rep.LocksRemoved > 0 {
		fmt.Fprintf(out, "cache:trim: removed %d stat-cache entries, %d last-run entries and %d idle lock files\n", rep.StatRemoved, rep.TasksRemoved, rep.LocksRemoved)
	}
	if rep.ProgramsRemoved > 0 {
		fmt.Fprintf(out, "cache:trim: removed %d programs of bin/ unused for %s (a run that needs one builds it again)\n", rep.ProgramsRemoved, maxAge)
	}
	if rep.TempRemoved > 0 {
		fmt.Fprintf(out, "cache:trim: removed %d temporary files left by killed runs\n", rep.TempRemoved)
	}
	return nil
}

// CacheVerify rehashes everything in the cache c, says what it found to
// out, and fails if anything was corrupt.
func CacheVerify(ctx context.Context, out io.Writer, c *cache.Cache) error {
	rep, err := c.Verify(ctx, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "cache:verify: %d blobs (%s) and %d materialized outputs rehashed\n", rep.BlobsChecked, units.Bytes(rep.BytesChecked), rep.OutputsChecked)
	for _, d := range rep.CorruptBlobs {
		fmt.Fprintf(out, "  corrupt blob %s: dropped\n", d)
	}
	for _, p := range rep.Readopted {
		fmt.Fprintf(out, "  %s matches its record: stored again in place of the corrupt blob\n", p)
	}
	if rep.RecordsDropped > 0 {
		fmt.Fprintf(out, "  %d records that needed them dropped; their tasks will run again\n", rep.RecordsDropped)
	}
	for _, p := range rep.ModifiedOutputs {
		fmt.Fprintf(out, "  %s no longer matches its cached content (edited by hand?); the next run restores it\n", p)
	}
	if n := len(rep.CorruptBlobs) + len(rep.ModifiedOutputs); n > 0 {
		return fmt.Errorf("cache:verify found %d problems", n)
	}
	return nil
}
