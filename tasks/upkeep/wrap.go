package upkeep

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/safefile"
)

// provenanceKeys are result fields copied into a wrap's manifest.
var provenanceKeys = []string{"schema_version", "rival_version", "platform", "framework", "model", "dataset",
	"tokenizer_fingerprint", "config_fingerprint", "image_digest", "hardware_fingerprint", "provenance", "training_config", "parallelism_config"}

type wrapEntry struct {
	Path       string                     `json:"path"`
	Size       int64                      `json:"size"`
	BLAKE3     cache.Digest               `json:"blake3"`
	Provenance map[string]json.RawMessage `json:"provenance,omitempty"`
}

// WrapTask is the task that zips outDir (OUTPUT_DIR of the workspace root)
// with a MANIFEST.json (every file's digest, and every result's
// provenance) into rival-results-HOST.zip beside it, and that zip's path.
// version is Rival's, recorded in the manifest and the task's tools.
func WrapTask(root, outDir, version string) (*dag.Task, string, error) {
	if _, err := os.Stat(outDir); err != nil {
		return nil, "", fmt.Errorf("wrap: nothing to wrap: %w (run a training or demo first)", err)
	}
	if files, err := wrapFiles(outDir); err == nil && len(files) == 0 {
		return nil, "", fmt.Errorf("wrap: nothing to wrap: %s holds no results (run a training or demo first)", outDir)
	}
	host, _ := os.Hostname()
	zipPath := filepath.Join(filepath.Dir(outDir), "rival-results-"+sanitize(host)+".zip")
	t := &dag.Task{
		ID:      "wrap " + dag.RelPath(root, outDir),
		Tools:   map[string]string{"rival": version},
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
			return writeWrap(ctx, bw, outDir, host, version)
		})
	}
	return t, zipPath, nil
}

// wrapFiles lists the regular files writeWrap puts in the zip.
func wrapFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.Type().IsRegular() && de.Name() != "secrets.env" && !(de.Name() == dirMarkerName && filepath.Dir(p) == dir) {
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

func writeWrap(ctx context.Context, out io.Writer, dir, host, version string) error {
	zw := zip.NewWriter(out)
	var manifest struct {
		RivalVersion string      `json:"rival_version"`
		Host         string      `json:"host"`
		Files        []wrapEntry `json:"files"`
	}
	manifest.RivalVersion, manifest.Host = version, host
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
		if de.Name() == "secrets.env" || (de.Name() == dirMarkerName && filepath.Dir(p) == dir) {
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
