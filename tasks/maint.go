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
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/internal/units"
	"github.com/rivalbench/rival/safefile"
)

// CacheStats prints what the cache holds.
func (w *Workspace) CacheStats() error {
	s, err := w.Cache.Stats()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stdout, "cache: %s\n", s.Dir)
	fmt.Fprintf(os.Stdout, "entries: %d records, %d blobs, %s\n", s.Records, s.Blobs, units.Bytes(s.BlobBytes))
	fmt.Fprintf(os.Stdout, "on disk: %s in %d files (file system blocks, folders included)\n", units.Bytes(s.DiskBytes), s.Files)
	for _, a := range []string{"blobs", "actions", "stat", "tasks", "locks"} {
		fmt.Fprintf(os.Stdout, "  %-8s %10s %8d files\n", a+"/", units.Bytes(s.AreaBytes[a]), s.AreaFiles[a])
	}
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

// CacheTrim trims the cache to RIVAL_CACHE_MAX (default 50GiB) and drops
// entries unused for RIVAL_CACHE_MAX_AGE (default 30d).
func (w *Workspace) CacheTrim(ctx context.Context) error {
	maxSize, maxAge := w.Env.cacheMax(), w.Env.cacheMaxAge()
	size, err := units.ParseSize(maxSize)
	if err != nil {
		return fmt.Errorf("RIVAL_CACHE_MAX: %w", err)
	}
	age, err := units.ParseAge(maxAge)
	if err != nil {
		return fmt.Errorf("RIVAL_CACHE_MAX_AGE: %w", err)
	}
	rep, err := w.Cache.Trim(ctx, size, age)
	if err != nil {
		return err
	}
	w.printf("cache:trim (max %s on disk, unused for %s): removed %d records and %d blobs, freed %s; %s on disk\n",
		maxSize, maxAge, rep.RecordsRemoved, rep.BlobsRemoved, units.Bytes(rep.BytesFreed), units.Bytes(rep.BytesKept))
	if rep.StatRemoved+rep.TasksRemoved+rep.LocksRemoved > 0 {
		w.printf("cache:trim: removed %d stat-cache entries, %d last-run entries and %d idle lock files\n", rep.StatRemoved, rep.TasksRemoved, rep.LocksRemoved)
	}
	if rep.TempRemoved > 0 {
		w.printf("cache:trim: removed %d temporary files left by killed runs\n", rep.TempRemoved)
	}
	return nil
}

// CacheVerify rehashes everything and fails if anything was corrupt.
func (w *Workspace) CacheVerify(ctx context.Context) error {
	rep, err := w.Cache.Verify(ctx, nil)
	if err != nil {
		return err
	}
	w.printf("cache:verify: %d blobs (%s) and %d materialized outputs rehashed\n", rep.BlobsChecked, units.Bytes(rep.BytesChecked), rep.OutputsChecked)
	for _, d := range rep.CorruptBlobs {
		w.printf("  corrupt blob %s: dropped\n", d)
	}
	for _, p := range rep.Readopted {
		w.printf("  %s matches its record: stored again in place of the corrupt blob\n", p)
	}
	if rep.RecordsDropped > 0 {
		w.printf("  %d records that needed them dropped; their tasks will run again\n", rep.RecordsDropped)
	}
	for _, p := range rep.ModifiedOutputs {
		w.printf("  %s no longer matches its cached content (edited by hand?); the next run restores it\n", p)
	}
	if n := len(rep.CorruptBlobs) + len(rep.ModifiedOutputs); n > 0 {
		return fmt.Errorf("cache:verify found %d problems", n)
	}
	return nil
}

// within reports whether p lies strictly inside dir (both resolved).
func within(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && r != "." && r != ".." && !strings.HasPrefix(r, "../") && !filepath.IsAbs(r)
}

// Purge removes OUTPUT_DIR, and DATA_DIR too when data is true. The cache
// stays: a later run materializes from it. A directory is removed only
// when it is not reached through a symlink and carries a marker Rival wrote
// naming it and this workspace; never the workspace, one that holds it or
// the cache, the home folder, a filesystem root, one that holds a .git
// anywhere inside, or one holding files git tracks. What will go is listed
// first.
func (w *Workspace) Purge(data bool) error {
	keys := []string{"OUTPUT_DIR"}
	if data {
		keys = append(keys, "DATA_DIR")
	}
	root := resolve(w.Root)
	cacheDir := resolve(w.Cache.Dir)
	home := ""
	if h, err := os.UserHomeDir(); err == nil {
		home = resolve(h)
	}
	type victim struct {
		key, real      string
		files, folders int
		bytes          int64
		top            []string
	}
	var victims []victim
	// Check every directory before removing any.
	for _, k := range keys {
		d := w.path(k)
		real := resolve(d)
		refuse := func(why string, args ...any) error {
			return fmt.Errorf("purge: %s=%s resolves to %s, which %s; refusing", k, w.Config.get(k), real, fmt.Sprintf(why, args...))
		}
		fi, err := os.Lstat(d)
		if errors.Is(err, fs.ErrNotExist) {
			w.printf("purge: %s (%s) does not exist; nothing to remove\n", k, d)
			continue
		}
		if err != nil {
			return fmt.Errorf("purge: %s: %w", d, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return refuse("is reached through the symlink %s; purge never follows symlinks (remove the link with rm, or set %s to the folder itself)", d, k)
		}
		switch {
		case real == root || within(real, root):
			return refuse("holds the workspace %s (set %s to a directory of its own)", root, k)
		case real == cacheDir || within(real, cacheDir):
			return refuse("holds the cache %s (use cache:trim for the cache)", cacheDir)
		case filepath.Dir(real) == real:
			return refuse("is a filesystem root")
		case home != "" && real == home:
			return refuse("is the home folder")
		case home != "" && within(real, home):
			return refuse("holds the home folder %s", home)
		case filepath.Base(real) == ".git":
			return refuse("is a git repository (set %s to a directory of its own)", k)
		}
		if tracked := gitTracked(real); tracked != "" {
			return refuse("holds %s that git tracks (set %s to a directory of its own)", tracked, k)
		}
		if why := checkMarker(real, k, root); why != "" {
			return refuse("%s: if it holds only Rival's outputs, remove it by hand with: rm -rf %q", why, real)
		}
		v := victim{key: k, real: real}
		err = filepath.WalkDir(real, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.Name() == ".git" {
				return fmt.Errorf("%s is a git repository or worktree", p)
			}
			if p == real {
				return nil
			}
			if filepath.Dir(p) == real && de.Name() != DirMarker {
				name := de.Name()
				if de.IsDir() {
					name += "/"
				}
				v.top = append(v.top, name)
			}
			if de.IsDir() {
				v.folders++
			} else if info, err := de.Info(); err == nil {
				v.files++
				if info.Mode().IsRegular() {
					v.bytes += info.Size()
				}
			}
			return nil
		})
		if err != nil {
			return refuse("holds something Rival never writes (%v): move it out first, or remove the folder by hand", err)
		}
		victims = append(victims, v)
	}
	for _, v := range victims {
		list := strings.Join(v.top, ", ")
		if len(v.top) > 12 {
			list = strings.Join(v.top[:12], ", ") + fmt.Sprintf(" and %d more", len(v.top)-12)
		}
		if len(v.top) == 0 {
			if err := os.RemoveAll(v.real); err != nil {
				return fmt.Errorf("purge %s: %w", v.real, err)
			}
			w.printf("purge: %s (%s) held nothing to remove; removed the empty folder\n", v.key, v.real)
			continue
		}
		w.printf("purge: removing %s %s: %d files in %d folders, %s: %s\n", v.key, v.real, v.files, v.folders, units.Bytes(v.bytes), list)
		// RemoveAll removes symlinks inside, never what they point to.
		if err := os.RemoveAll(v.real); err != nil {
			return fmt.Errorf("purge %s: %w", v.real, err)
		}
		w.printf("purge: removed %s\n", v.real)
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

// wrapTask zips OUTPUT_DIR with a MANIFEST.json (every file's digest, and
// every result's provenance) into rival-results-HOST.zip beside it.
func (w *Workspace) wrapTask() (*dag.Task, string, error) {
	outDir := w.path("OUTPUT_DIR")
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
			return writeWrap(ctx, bw, outDir, host)
		})
	}
	return t, zipPath, nil
}

// WrapTarget implements wrap: it zips OUTPUT_DIR with every result's
// provenance (WrapTask) and prints where the zip is.
func (w *Workspace) WrapTarget(ctx context.Context) error {
	t, zipPath, err := w.wrapTask()
	if err != nil {
		return err
	}
	if err := w.Runner.Run(ctx, t); err != nil {
		return err
	}
	w.printf("wrap: %s\n", zipPath)
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

func writeWrap(ctx context.Context, out io.Writer, dir, host string) error {
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
		// Stream: a training log can be gigabytes. Opened as a regular
		// file only (a FIFO swapped in since the walk is refused, not
		// waited on), and the copy stops on Ctrl-C.
		f, _, err := cache.OpenRegular(p)
		if err != nil {
			return err
		}
		d, n, err := cache.HashReader(io.TeeReader(safefile.Reader(ctx, f), fw))
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
