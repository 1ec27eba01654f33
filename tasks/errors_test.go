package tasks

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compare with only rejected files says which and why, not "run a
// training target first".
func TestCompareNamesRejectedResults(t *testing.T) {
	w, _ := newWorkspace(t, "")
	out := w.path("OUTPUT_DIR")
	require.NoError(t, os.MkdirAll(out, 0o755))
	broken, err := os.ReadFile("../compare/testdata/results/broken.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "train_nvd_nemo_llama.json"), broken, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "train_amd_prim_qwen.json"), []byte(`{"platform": "amd", "framework": "prim"`), 0o644))
	ct, err := w.compareTask(nil)
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), ct)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "2 result files were rejected")
	assert.Contains(t, err.Error(), "train_nvd_nemo_llama.json: ")
	assert.Contains(t, err.Error(), "train_amd_prim_qwen.json: ")
	assert.NotContains(t, err.Error(), "run a training target first")
}

// encode:file on a directory or a FIFO names the mistake before reading.
func TestEncodeFileRefusesDirectoryAndFIFO(t *testing.T) {
	w, _ := newWorkspace(t, "")
	dir := filepath.Join(w.root, "corpus")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "deep", "er"), 0o755))
	require.NoError(t, os.Symlink("/nonexistent", filepath.Join(dir, "deep", "er", "dangling")))
	tok, err := w.data().ResolveTokenizer(mistralTok)
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), w.data().EncodeTask(dir, tok, filepath.Join(w.root, "out", "x"), 0, nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), dir+" is a directory; give a JSONL corpus file")

	fifo := filepath.Join(w.root, "pipe.jsonl")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	done := make(chan error, 1)
	go func() {
		done <- w.runner.Run(context.Background(), w.data().EncodeTask(fifo, tok, filepath.Join(w.root, "out", "y"), 0, nil))
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("encode of a FIFO blocked instead of refusing it")
	}
}

// wrap zips output/ with a symlink (or a dangling one) inside it; a
// dangling link among the results does not block compare:dir.
func TestSymlinksDoNotBlockWrapOrCompare(t *testing.T) {
	w, _ := newWorkspace(t, "")
	out := w.path("OUTPUT_DIR")
	require.NoError(t, os.MkdirAll(out, 0o755))
	good, err := os.ReadFile("../compare/testdata/results/nvd_nemo_llama_0.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "train_nvd_nemo_llama.json"), good, 0o644))
	require.NoError(t, os.Symlink("train_nvd_nemo_llama.json", filepath.Join(out, "latest.json")))
	require.NoError(t, os.Symlink("/nonexistent/result.json", filepath.Join(out, "gone.json")))
	wt, zipPath, err := w.wrapTask()
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), wt))
	assert.FileExists(t, zipPath)

	ct, err := w.compareTask([]string{out})
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), ct))
}

// verify:data with a FIFO in place of the .idx refuses it at once.
func TestVerifyDataRefusesFIFO(t *testing.T) {
	w, _ := newWorkspace(t, "")
	et, prefix, _ := demoDataset(t, w)
	require.NoError(t, w.runner.Run(context.Background(), et))
	require.NoError(t, os.Remove(prefix+".idx"))
	require.NoError(t, syscall.Mkfifo(prefix+".idx", 0o644))
	done := make(chan error, 1)
	go func() { done <- w.VerifyData([]string{prefix}) }()
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("verify:data blocked on a FIFO")
	}
}
