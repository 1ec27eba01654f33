package tasks

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/dag"
)

// CacheStats prints what the cache holds.
func (w *Workspace) CacheStats() error {
	s, err := w.Cache.Stats()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "cache: %s\n", s.Dir)
	fmt.Fprintf(os.Stdout, "entries: %d records, %d blobs, %s\n", s.Records, s.Blobs, HumanBytes(s.BlobBytes))
	fmt.Fprintf(os.Stdout, "hits: %d\n", s.Hits)
	fmt.Fprintf(os.Stdout, "stat cache: %d files\n", s.StatEntries)
	var fams []string
	for f := range s.RecordsByTask {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	for _, f := range fams {
		fmt.Fprintf(os.Stdout, "  %-10s %4d records %6d hits\n", f, s.RecordsByTask[f], s.HitsByTask[f])
	}
	return nil
}

// ParseSize reads sizes such as 500MB, 20GiB, 1.5T, or a plain byte count.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size (examples: 500MB, 20GiB)", s)
	}
	// 2^63 is the first float64 that does not fit an int64.
	if b := f * float64(mult); b >= math.Ldexp(1, 63) {
		return 0, fmt.Errorf("%q is more bytes than any disk holds (examples: 500MB, 20GiB)", s)
	} else {
		return int64(b), nil
	}
}

// ParseAge reads durations such as 30d, 12h, 90m.
func ParseAge(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if strings.HasSuffix(t, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(t, "d"), 64)
		if err != nil || !(n >= 0) || math.IsInf(n, 0) {
			return 0, fmt.Errorf("%q is not an age (examples: 30d, 12h)", s)
		}
		if ns := n * 24 * float64(time.Hour); ns < math.Ldexp(1, 63) {
			return time.Duration(ns), nil
		}
		return 0, fmt.Errorf("%q is longer than %s, the longest age (examples: 30d, 12h)", s, time.Duration(math.MaxInt64).Round(time.Hour))
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age (examples: 30d, 12h)", s)
	}
	return d, nil
}

// HumanBytes formats n with a binary unit.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// CacheTrim trims the cache to RIVAL_CACHE_MAX (default 50GiB) and drops
// entries unused for RIVAL_CACHE_MAX_AGE (default 30d).
func (w *Workspace) CacheTrim(ctx context.Context) error {
	maxSize, maxAge := w.Settings.CacheMax(), w.Settings.CacheMaxAge()
	size, err := ParseSize(maxSize)
	if err != nil {
		return fmt.Errorf("RIVAL_CACHE_MAX: %w", err)
	}
	age, err := ParseAge(maxAge)
	if err != nil {
		return fmt.Errorf("RIVAL_CACHE_MAX_AGE: %w", err)
	}
	rep, err := w.Cache.Trim(ctx, size, age)
	if err != nil {
		return err
	}
	w.Printf("cache:trim (max %s, unused for %s): removed %d records and %d blobs, freed %s; %s kept\n",
		maxSize, maxAge, rep.RecordsRemoved, rep.BlobsRemoved, HumanBytes(rep.BytesFreed), HumanBytes(rep.BytesKept))
	if rep.TempRemoved > 0 {
		w.Printf("cache:trim: removed %d temporary files left by killed runs\n", rep.TempRemoved)
	}
	return nil
}

// CacheVerify rehashes everything and fails if anything was corrupt.
func (w *Workspace) CacheVerify(ctx context.Context) error {
	rep, err := w.Cache.Verify(ctx, nil)
	if err != nil {
		return err
	}
	w.Printf("cache:verify: %d blobs (%s) and %d materialized outputs rehashed\n", rep.BlobsChecked, HumanBytes(rep.BytesChecked), rep.OutputsChecked)
	for _, d := range rep.CorruptBlobs {
		w.Printf("  corrupt blob %s: dropped\n", d)
	}
	for _, p := range rep.Readopted {
		w.Printf("  %s matches its record: stored again in place of the corrupt blob\n", p)
	}
	if rep.RecordsDropped > 0 {
		w.Printf("  %d records that needed them dropped; their tasks will run again\n", rep.RecordsDropped)
	}
	for _, p := range rep.ModifiedOutputs {
		w.Printf("  %s no longer matches its cached content (edited by hand?); the next run restores it\n", p)
	}
	if n := len(rep.CorruptBlobs) + len(rep.ModifiedOutputs); n > 0 {
		return fmt.Errorf("cache:verify found %d problems", n)
	}
	return nil
}

// DirMarker is the file Rival writes into an OUTPUT_DIR or DATA_DIR it
// creates: purge removes a directory only when it carries the marker, so a
// mistyped OUTPUT_DIR=.. or OUTPUT_DIR=.git never costs a project.
const DirMarker = ".rival-dir"

// markOwnDirs creates OUTPUT_DIR and DATA_DIR when they do not exist yet,
// and marks them as Rival's. Every target calls it before it runs, so no
// other code path creates either directory unmarked.
func (w *Workspace) markOwnDirs() {
	for _, k := range []string{"OUTPUT_DIR", "DATA_DIR"} {
		d := w.Path(k)
		if _, err := os.Lstat(d); err == nil {
			continue
		}
		if os.MkdirAll(d, 0o755) == nil {
			os.WriteFile(filepath.Join(d, DirMarker), []byte("created by Rival as "+k+"; purge may remove this directory\n"), 0o644)
		}
	}
}

// resolve is p made absolute with its symlinks resolved, as far as the
// path exists.
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	// Resolve the existing parent, keep the missing tail.
	parent := resolve(filepath.Dir(abs))
	if parent == filepath.Dir(abs) && parent == abs {
		return abs
	}
	return filepath.Join(parent, filepath.Base(abs))
}

// within reports whether p lies strictly inside dir (both resolved).
func within(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != "." && r != ".." && !strings.HasPrefix(r, "../") && !filepath.IsAbs(r)
}

// Purge removes OUTPUT_DIR, and DATA_DIR too when data is true. The cache
// stays: a later run materializes from it. A directory is removed only
// when, symlinks resolved, it carries Rival's marker; never the workspace,
// one that holds it or the cache, a .git, or one holding files git tracks.
func (w *Workspace) Purge(data bool) error {
	keys := []string{"OUTPUT_DIR"}
	if data {
		keys = append(keys, "DATA_DIR")
	}
	root := resolve(w.Root)
	cacheDir := resolve(w.Cache.Dir)
	type victim struct{ key, path, real string }
	var victims []victim
	// Check every directory before removing any.
	for _, k := range keys {
		d := w.Path(k)
		real := resolve(d)
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			w.Printf("purge: %s (%s) does not exist; nothing to remove\n", k, d)
			continue
		}
		if real == root || within(real, root) {
			return fmt.Errorf("purge: %s=%s resolves to %s, which holds the workspace %s; refusing (set %s to a directory of its own)", k, w.Config.Get(k), real, root, k)
		}
		if real == cacheDir || within(real, cacheDir) {
			return fmt.Errorf("purge: %s=%s resolves to %s, which holds the cache %s; refusing (use cache:trim for the cache)", k, w.Config.Get(k), real, cacheDir)
		}
		if filepath.Base(real) == ".git" {
			return fmt.Errorf("purge: %s=%s resolves to %s, a git repository; refusing (set %s to a directory of its own)", k, w.Config.Get(k), real, k)
		}
		if tracked := gitTracked(real); tracked != "" {
			return fmt.Errorf("purge: %s=%s resolves to %s, which holds %s that git tracks; refusing (set %s to a directory of its own)", k, w.Config.Get(k), real, tracked, k)
		}
		fi, err := os.Stat(filepath.Join(real, DirMarker))
		if err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("purge: %s=%s resolves to %s, which has no %s marker (Rival marks the directories it creates; an older Rival did not); refusing: if it holds only Rival's outputs, remove it by hand with: rm -rf %q", k, w.Config.Get(k), real, DirMarker, real)
		}
		victims = append(victims, victim{k, d, real})
	}
	for _, v := range victims {
		// Remove what the path names: a symlinked OUTPUT_DIR loses its
		// target's contents only when that target passed the checks above.
		if err := os.RemoveAll(v.real); err != nil {
			return fmt.Errorf("purge %s: %w", v.real, err)
		}
		if v.real != v.path {
			os.Remove(v.path) // the link itself
		}
		w.Printf("purge: removed %s\n", v.path)
	}
	return nil
}

// gitTracked returns a file git tracks under dir, or "" when there is none
// or git is not installed (the marker rule then decides alone).
func gitTracked(dir string) string {
	if _, err := exec.LookPath("git"); err != nil {
		return ""
	}
	cmd := exec.Command("git", "-C", dir, "ls-files", "-z", "--", ".")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		return ""
	}
	first, _, _ := strings.Cut(string(out), "\x00")
	return filepath.Join(dir, first)
}

// provenanceKeys are result fields copied into a wrap's manifest.
var provenanceKeys = []string{"schema_version", "rival_version", "platform", "framework", "model", "dataset",
	"tokenizer_fingerprint", "config_fingerprint", "image_digest", "hardware_fingerprint", "provenance", "training_config", "parallelism_config"}

type wrapEntry struct {
	Path       string                     `json:"path"`
	Size       int64                      `json:"size"`
	BLAKE3     cache.Digest               `json:"blake3"`
	Provenance map[string]json.RawMessage `json:"provenance,omitempty"`
}

// WrapTask zips OUTPUT_DIR with a MANIFEST.json (every file's digest, and
// every result's provenance) into rival-results-HOST.zip beside it.
func (w *Workspace) WrapTask() (*dag.Task, string, error) {
	outDir := w.Path("OUTPUT_DIR")
	if _, err := os.Stat(outDir); err != nil {
		return nil, "", fmt.Errorf("wrap: nothing to wrap: %w (run a training or demo first)", err)
	}
	if files, err := wrapFiles(outDir); err == nil && len(files) == 0 {
		return nil, "", fmt.Errorf("wrap: nothing to wrap: %s holds no results (run a training or demo first)", outDir)
	}
	host, _ := os.Hostname()
	zipPath := filepath.Join(filepath.Dir(outDir), "rival-results-"+sanitize(host)+".zip")
	t := &dag.Task{
		ID:      "wrap " + rel(w.Root, outDir),
		Tools:   map[string]string{"rival": Version},
		Outputs: []dag.Output{{Path: zipPath}},
	}
	// The inputs are the regular files the zip holds: links and sockets
	// under output/ are not results and must not block a wrap.
	t.Prepare = func(ctx context.Context) error {
		files, err := wrapFiles(outDir)
		if err != nil {
			return err
		}
		t.Files = files
		return nil
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		return cache.WriteAtomic(zipPath, 0o644, func(bw *bufio.Writer) error {
			return writeWrap(bw, outDir, host)
		})
	}
	return t, zipPath, nil
}

// WrapTarget implements wrap: it zips OUTPUT_DIR with every result's
// provenance (WrapTask) and prints where the zip is.
func (w *Workspace) WrapTarget(ctx context.Context) error {
	t, zipPath, err := w.WrapTask()
	if err != nil {
		return err
	}
	if err := w.Runner.Run(ctx, t); err != nil {
		return err
	}
	w.Printf("wrap: %s\n", zipPath)
	return nil
}

// wrapFiles lists the regular files writeWrap puts in the zip.
func wrapFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.Type().IsRegular() && de.Name() != "secrets.env" && !(de.Name() == DirMarker && filepath.Dir(p) == dir) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wrap %s: %w", dir, err)
	}
	return out, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r == '_' || (r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') {
			return r
		}
		return '_'
	}, s)
}

func writeWrap(out io.Writer, dir, host string) error {
	zw := zip.NewWriter(out)
	var manifest struct {
		RivalVersion string      `json:"rival_version"`
		Host         string      `json:"host"`
		Files        []wrapEntry `json:"files"`
	}
	manifest.RivalVersion, manifest.Host = Version, host
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() {
			return nil
		}
		if !de.Type().IsRegular() {
			return nil // sockets, links: not results
		}
		if de.Name() == "secrets.env" || (de.Name() == DirMarker && filepath.Dir(p) == dir) {
			return nil
		}
		r, _ := filepath.Rel(dir, p)
		r = filepath.ToSlash(r)
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: "output/" + r, Method: zip.Deflate, Modified: time.Unix(0, 0).UTC()})
		if err != nil {
			return err
		}
		// Stream: a training log can be gigabytes.
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		d, n, err := cache.HashReader(io.TeeReader(f, fw))
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		e := wrapEntry{Path: r, Size: n, BLAKE3: d}
		if strings.HasSuffix(r, ".json") && n < 64<<20 {
			e.Provenance = provenanceOf(p)
		}
		manifest.Files = append(manifest.Files, e)
		return nil
	})
	if err != nil {
		return fmt.Errorf("wrap %s: %w", dir, err)
	}
	m, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return err
	}
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: "MANIFEST.json", Method: zip.Deflate, Modified: time.Unix(0, 0).UTC()})
	if err != nil {
		return err
	}
	if _, err := fw.Write(m); err != nil {
		return err
	}
	return zw.Close()
}

// provenanceOf picks the provenance fields of a result JSON file.
func provenanceOf(path string) map[string]json.RawMessage {
	data, err := cache.ReadFileLimit(context.Background(), path, compare.MaxResultBytes)
	if err != nil {
		return nil
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return nil
	}
	var out map[string]json.RawMessage
	for _, k := range provenanceKeys {
		if v, ok := obj[k]; ok {
			if out == nil {
				out = map[string]json.RawMessage{}
			}
			out[k] = v
		}
	}
	return out
}
