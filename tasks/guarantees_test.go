package tasks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filter:file IN a.jsonl then filter:file IN b.jsonl: the second must write
// b.jsonl, not answer "cached" from a's record.
func TestCacheHitRestoresToTheAskedPath(t *testing.T) {
	w, _ := newWorkspace(t, "FILTER_MIN_CHARS=1\nFILTER_MIN_WORDS=1\n")
	in := filepath.Join(w.root, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"hello there world"}`+"\n"), 0o644))
	a, b := filepath.Join(w.root, "a.jsonl"), filepath.Join(w.root, "b.jsonl")
	require.NoError(t, w.runner.Run(context.Background(), w.data().FilterTask(in, a, nil)))
	w2, _ := newWorkspaceAt(t, w.root)
	require.NoError(t, w2.runner.Run(context.Background(), w2.data().FilterTask(in, b, nil)))
	want, err := os.ReadFile(a)
	require.NoError(t, err)
	got, err := os.ReadFile(b)
	require.NoError(t, err, "the asked output exists")
	assert.Equal(t, want, got)
}

// Two checkouts sharing one cache each get their own files, and a task in
// one never writes into the other.
func TestTwoCheckoutsShareOneCache(t *testing.T) {
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("RIVAL_CONFIG", "")
	var outs []string
	for i := 0; i < 2; i++ {
		root := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), []byte("FILTER_MIN_CHARS=1\nFILTER_MIN_WORDS=1\n"), 0o644))
		in := filepath.Join(root, "in.jsonl")
		require.NoError(t, os.WriteFile(in, []byte(`{"text":"hello there world"}`+"\n"), 0o644))
		w, _ := newWorkspaceAt(t, root)
		out := w.path("DATA_DIR", "kept.jsonl")
		require.NoError(t, w.runner.Run(context.Background(), w.data().FilterTask(in, out, nil)))
		_, cached := w.runner.Counts()
		assert.Equal(t, i, cached, "the second checkout is a cache hit")
		outs = append(outs, out)
	}
	for _, o := range outs {
		assert.FileExists(t, o)
	}
	a, _ := os.ReadFile(outs[0])
	b, _ := os.ReadFile(outs[1])
	assert.Equal(t, a, b)
}

// After cache:verify drops a corrupt blob, an intact workspace copy that
// matches the recorded digest is stored again: the next run is a hit.
func TestVerifyReadoptsIntactWorkspaceCopy(t *testing.T) {
	w, log := newWorkspace(t, "FILTER_MIN_CHARS=1\nFILTER_MIN_WORDS=1\n")
	in := filepath.Join(w.root, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"hello there world"}`+"\n"), 0o644))
	out := filepath.Join(w.root, "kept.jsonl")
	require.NoError(t, w.runner.Run(context.Background(), w.data().FilterTask(in, out, nil)))
	recs, err := w.cache.Records()
	require.NoError(t, err)
	require.Len(t, recs, 1)
	d := recs[0].Outputs[0].Digest.String()
	blob := filepath.Join(w.cache.Dir, "blobs", d[:2], d+".zst")
	require.NoError(t, os.Chmod(blob, 0o644))
	require.NoError(t, os.WriteFile(blob, []byte("garbage"), 0o644))
	require.Error(t, w.CacheVerify(context.Background()), "the corrupt blob is reported")
	assert.Contains(t, log.String(), "stored again")
	w2, _ := newWorkspaceAt(t, w.root)
	require.NoError(t, w2.runner.Run(context.Background(), w2.data().FilterTask(in, out, nil)))
	assert.Equal(t, "tasks: 0 run, 1 cached", w2.runner.Summary())
	var buf bytes.Buffer
	w2.out = &buf
	require.NoError(t, w2.CacheVerify(context.Background()), "the cache is whole again")
}

// purge never removes a directory outside the workspace that Rival did not
// create, nor one that holds the workspace, however OUTPUT_DIR is spelled.
func TestPurgeRefusesOutsideTheWorkspace(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "project")
	sibling := filepath.Join(parent, "sibling")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.MkdirAll(sibling, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sibling, "keep.txt"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink(sibling, filepath.Join(root, "out-link")))
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("RIVAL_CONFIG", "")
	for _, dir := range []string{"..", parent, sibling, "../sibling", "out-link", ".", "/"} {
		t.Run(dir, func(t *testing.T) {
			t.Setenv("OUTPUT_DIR", dir)
			w, _ := newWorkspaceAt(t, root)
			err := w.Purge(false)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "refusing")
			assert.FileExists(t, filepath.Join(sibling, "keep.txt"))
			assert.DirExists(t, root)
		})
	}
	// Inside the workspace, and a marked directory outside it, are removed.
	t.Setenv("OUTPUT_DIR", "output")
	w, _ := newWorkspaceAt(t, root)
	w.markOwnDirs()
	require.NoError(t, os.MkdirAll(w.path("OUTPUT_DIR", "x"), 0o755))
	require.NoError(t, w.Purge(false))
	assert.NoDirExists(t, w.path("OUTPUT_DIR"))
	ext := filepath.Join(parent, "scratch-out")
	t.Setenv("OUTPUT_DIR", ext)
	w, _ = newWorkspaceAt(t, root)
	w.markOwnDirs()
	assert.FileExists(t, filepath.Join(ext, ".rival-dir"), "a directory Rival creates outside the workspace is marked")
	require.NoError(t, w.Purge(false))
	assert.NoDirExists(t, ext)
}
