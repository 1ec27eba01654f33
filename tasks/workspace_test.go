package tasks

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/dag"
)

// newWorkspace opens a workspace in a fresh root with its own cache.
func newWorkspace(t *testing.T, config string) (*Workspace, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), []byte(config), 0o644))
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("RIVAL_CONFIG", "")
	var log bytes.Buffer
	w, err := openWorkspace(root, true, &log)
	require.NoError(t, err)
	return w, &log
}

func TestFilterTaskIsCachedAndReports(t *testing.T) {
	w, log := newWorkspace(t, "FILTER_MIN_CHARS=10\nFILTER_MIN_WORDS=2\n")
	in := filepath.Join(w.root, "in.jsonl")
	out := filepath.Join(w.root, "out", "kept.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"hello there, world"}`+"\n"+`{"text":"hi"}`+"\nbroken\n"), 0o644))

	t1 := w.data().FilterTask(in, out, nil)
	require.NoError(t, w.runner.Run(context.Background(), t1))
	w.data().ReportFilter(t1)
	assert.Contains(t, log.String(), "kept 1 of 3 documents")
	assert.Contains(t, log.String(), "1 malformed (lines 3)")

	w2, log2 := w, &bytes.Buffer{}
	w2.runner = &dag.Runner{Cache: w.cache, Root: w.root, Verbose: true, Out: log2}
	t2 := w2.data().FilterTask(in, out, nil)
	require.NoError(t, w2.runner.Run(context.Background(), t2))
	assert.Equal(t, "tasks: 0 run, 1 cached", w2.runner.Summary())
	w2.out = log2
	w2.data().ReportFilter(t2)
	assert.Contains(t, log2.String(), "kept 1 of 3 documents", "the report survives a cache hit")

	// A changed threshold is a new parameter value, explained under -v.
	t.Setenv("FILTER_MIN_WORDS", "3")
	w3, log3 := newWorkspaceAt(t, w.root)
	require.NoError(t, w3.runner.Run(context.Background(), w3.data().FilterTask(in, out, nil)))
	assert.Contains(t, log3.String(), "FILTER_MIN_WORDS: 2 → 3")
}

func newWorkspaceAt(t *testing.T, root string) (*Workspace, *bytes.Buffer) {
	var log bytes.Buffer
	w, err := openWorkspace(root, true, &log)
	require.NoError(t, err)
	return w, &log
}

func TestConcurrentInvocationsComputeOnce(t *testing.T) {
	c, err := cache.Open(t.TempDir())
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "shard.jsonl")
	var runs atomic.Int64
	mk := func() *dag.Task {
		return &dag.Task{ID: "fetch bc", Outputs: []dag.Output{{Path: out}}, Run: func(context.Context, *dag.Exec) error {
			runs.Add(1)
			time.Sleep(100 * time.Millisecond) // a download
			return cache.WriteFileAtomic(out, []byte("{}"), 0o644)
		}}
	}
	var wg sync.WaitGroup
	runners := []*dag.Runner{{Cache: c, Out: io.Discard}, {Cache: c, Out: io.Discard}}
	for _, r := range runners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, r.Run(context.Background(), mk()))
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 1, runs.Load(), "one downloads, the other waits and reuses")
	r0, c0 := runners[0].Counts()
	r1, c1 := runners[1].Counts()
	assert.Equal(t, 1, r0+r1)
	assert.Equal(t, 1, c0+c1)
}

func TestWrapZipsOutputsWithProvenance(t *testing.T) {
	w, _ := newWorkspace(t, "")
	outDir := w.path("OUTPUT_DIR")
	require.NoError(t, os.MkdirAll(filepath.Join(outDir, "logs"), 0o755))
	result := `{"platform":"amd","config_fingerprint":"abc123","performance_metrics":{"tokens_per_second":1}}`
	require.NoError(t, os.WriteFile(filepath.Join(outDir, "train_amd_prim_llama.json"), []byte(result), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outDir, "logs", "train.log"), []byte("iteration 1/ 10 |\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(outDir, "secrets.env"), []byte("HF_TOKEN=hf_x\n"), 0o644))

	task, zipPath, err := w.wrapTask()
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	zr, err := zip.OpenReader(zipPath)
	require.NoError(t, err)
	defer zr.Close()
	var names []string
	var manifest struct {
		Files []struct {
			Path       string                     `json:"path"`
			BLAKE3     string                     `json:"blake3"`
			Provenance map[string]json.RawMessage `json:"provenance"`
		} `json:"files"`
	}
	for _, f := range zr.File {
		names = append(names, f.Name)
		if f.Name == "MANIFEST.json" {
			rc, err := f.Open()
			require.NoError(t, err)
			require.NoError(t, json.NewDecoder(rc).Decode(&manifest))
			rc.Close()
		}
	}
	assert.ElementsMatch(t, []string{"output/logs/train.log", "output/train_amd_prim_llama.json", "MANIFEST.json"}, names)
	require.Len(t, manifest.Files, 2)
	for _, f := range manifest.Files {
		if strings.HasSuffix(f.Path, ".json") {
			assert.JSONEq(t, `"abc123"`, string(f.Provenance["config_fingerprint"]))
			assert.Equal(t, cache.HashBytes([]byte(result)).String(), f.BLAKE3)
		}
	}
}

func TestWrapWithoutOutputsNamesTheFix(t *testing.T) {
	w, _ := newWorkspace(t, "")
	_, _, err := w.wrapTask()
	require.ErrorContains(t, err, "nothing to wrap")
}

func TestPurge(t *testing.T) {
	w, _ := newWorkspace(t, "")
	w.markOwnDirs()
	for _, k := range []string{"OUTPUT_DIR", "DATA_DIR"} {
		require.NoError(t, os.MkdirAll(w.path(k, "x"), 0o755))
	}
	require.NoError(t, w.Purge(false))
	assert.NoDirExists(t, w.path("OUTPUT_DIR"))
	assert.DirExists(t, w.path("DATA_DIR"))
	require.NoError(t, w.Purge(true))
	assert.NoDirExists(t, w.path("DATA_DIR"))
}

// RIVAL_CACHE_LINK takes `copy` or nothing: a typo is refused with what the
// setting does, rather than silently sharing dataset files.
func TestCacheLinkSettingIsChecked(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), nil, 0o644))
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("RIVAL_CONFIG", "")
	for _, v := range []string{"", "copy"} {
		t.Setenv("RIVAL_CACHE_LINK", v)
		_, err := openWorkspace(root, false, io.Discard)
		require.NoError(t, err, v)
	}
	t.Setenv("RIVAL_CACHE_LINK", "cpoy")
	_, err := openWorkspace(root, false, io.Discard)
	require.ErrorContains(t, err, `RIVAL_CACHE_LINK="cpoy"`)
	require.ErrorContains(t, err, "copy")
}
