package tasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/tasks/data"
)

const (
	mistralTok = "../tokenizer/testdata/mistral-7b-v0.1/tokenizer.json"
	qwenTok    = "../tokenizer/testdata/qwen-2.5/tokenizer.json"
)

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o644))
}

func TestEncodeFileAndVerify(t *testing.T) {
	w, _ := newWorkspace(t, "")
	in := filepath.Join(w.root, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"Hello world"}`+"\n"+`{"text":""}`+"\n"+`{"text":"Second document."}`+"\n"), 0o644))
	tok, err := w.data().ResolveTokenizer(mistralTok)
	require.NoError(t, err)
	out := filepath.Join(w.root, "out", "corpus")
	task := w.data().EncodeTask(in, tok, out, 0, nil)
	require.NoError(t, w.runner.Run(context.Background(), task))
	// The manifest's fingerprint comes from the digests the cache computed
	// when it stored the files; it must equal one computed from the files.
	var ms []data.Manifest
	require.NoError(t, task.Meta(&ms))
	require.Len(t, ms, 1)
	direct, err := indexed.FingerprintFiles(out)
	require.NoError(t, err)
	assert.Equal(t, direct, ms[0].Fingerprint)

	d, err := indexed.Open(out)
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 3, d.Documents())
	// Like preprocess_data.py with a Hugging Face tokenizer: the empty
	// document still yields Mistral's BOS, so it is a sequence [BOS, EOD].
	assert.Equal(t, 3, d.Sequences())
	empty, err := d.Sequence(1)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2}, empty)
	first, err := d.Sequence(0)
	require.NoError(t, err)
	assert.Equal(t, int32(1), first[0], "Mistral prepends BOS")
	assert.Equal(t, int32(2), first[len(first)-1], "EOD </s> is appended")

	fp, err := data.VerifyDataset(out)
	require.NoError(t, err)
	assert.False(t, fp.Digest.IsZero())

	// A second identical call is a cache hit.
	r2 := &dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}
	require.NoError(t, r2.Run(context.Background(), w.data().EncodeTask(in, tok, out, 0, nil)))
	assert.Equal(t, "tasks: 0 run, 1 cached", r2.Summary())
}

func TestEmptyDocumentWithoutBOSAddsNoSequence(t *testing.T) {
	w, _ := newWorkspace(t, "")
	in := filepath.Join(w.root, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"Hello"}`+"\n"+`{"text":""}`+"\n"), 0o644))
	tok, err := w.data().ResolveTokenizer(qwenTok)
	require.NoError(t, err)
	out := filepath.Join(w.root, "q")
	require.NoError(t, w.runner.Run(context.Background(), w.data().EncodeTask(in, tok, out, 0, nil)))
	d, err := indexed.Open(out)
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 2, d.Documents(), "the empty document gets a document-index entry")
	assert.Equal(t, 1, d.Sequences(), "but no sequence: Qwen adds no BOS")
	seq, err := d.Sequence(0)
	require.NoError(t, err)
	assert.Equal(t, int32(151643), seq[len(seq)-1])
}

func TestVerifyCatchesModifiedDataset(t *testing.T) {
	w, _ := newWorkspace(t, "")
	in := filepath.Join(w.root, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"Hello world, hello tokens"}`+"\n"), 0o644))
	tok, err := w.data().ResolveTokenizer(mistralTok)
	require.NoError(t, err)
	out := filepath.Join(w.root, "ds")
	require.NoError(t, w.runner.Run(context.Background(), w.data().EncodeTask(in, tok, out, 0, nil)))
	b, err := os.ReadFile(out + ".bin")
	require.NoError(t, err)
	b[2] ^= 1 // still a valid id, different data
	require.NoError(t, os.WriteFile(out+".bin", b, 0o644))
	_, err = data.VerifyDataset(out)
	require.ErrorContains(t, err, "files differ from what was encoded")

	_, err = data.VerifyDataset(filepath.Join(w.root, "never"))
	require.ErrorContains(t, err, "not encoded yet")
}

func TestChangedTokenizerReencodesOnlyThatModel(t *testing.T) {
	w, _ := newWorkspace(t, "")
	in := filepath.Join(w.root, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"Some words to split into train and test."}`+"\n"+`{"text":"Another one."}`+"\n"), 0o644))
	mis := filepath.Join(w.root, "mistral.json")
	qw := filepath.Join(w.root, "qwen.json")
	copyFile(t, mistralTok, mis)
	copyFile(t, qwenTok, qw)
	tasksFor := func() []*dag.Task {
		var ts []*dag.Task
		for _, p := range []string{mis, qw} {
			spec, err := w.data().ResolveTokenizer(p)
			require.NoError(t, err)
			ts = append(ts, w.data().EncodeTask(in, spec, filepath.Join(w.root, filepath.Base(p)), 0.5, nil))
		}
		return ts
	}
	require.NoError(t, (&dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}).Run(context.Background(), tasksFor()...))
	// Rewrite the Qwen file with one byte of whitespace more: a new digest.
	b, err := os.ReadFile(qw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(qw, append(b, '\n'), 0o644))
	r := &dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}
	require.NoError(t, r.Run(context.Background(), tasksFor()...))
	assert.Equal(t, "tasks: 1 run, 1 cached", r.Summary())
	for _, p := range []string{"mistral.json-train", "mistral.json-test", "qwen.json-train", "qwen.json-test"} {
		_, err := data.VerifyDataset(filepath.Join(w.root, p))
		assert.NoError(t, err, p)
	}
}

func TestEncodeMalformedLineWritesNothing(t *testing.T) {
	w, _ := newWorkspace(t, "")
	in := filepath.Join(w.root, "bad.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"fine"}`+"\n"+`{"text": 5}`+"\n"), 0o644))
	tok, err := w.data().ResolveTokenizer(mistralTok)
	require.NoError(t, err)
	out := filepath.Join(w.root, "bad")
	err = w.runner.Run(context.Background(), w.data().EncodeTask(in, tok, out, 0, nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.jsonl line 2")
	for _, p := range []string{out + ".bin", out + ".idx", data.ManifestPath(out)} {
		assert.NoFileExists(t, p)
	}
}

func TestResolveTokenizerErrors(t *testing.T) {
	w, _ := newWorkspace(t, "")
	_, err := w.data().ResolveTokenizer("llama")
	require.ErrorContains(t, err, "run `go run mage.go fetch` first")
	_, err = w.data().ResolveTokenizer("gpt2")
	require.ErrorContains(t, err, "neither a file nor a model name")
	setting(w, "EOD", "x")
	_, err = w.data().ResolveTokenizer(mistralTok)
	require.ErrorContains(t, err, `EOD="x"`)
}

// encode:file takes its corpus and output as the shell that typed them
// sees them, and reports the dataset it wrote.
func TestEncodeFileTargetWritesAndReports(t *testing.T) {
	w, log := newWorkspace(t, "")
	tok, err := filepath.Abs(mistralTok)
	require.NoError(t, err)
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.WriteFile("in.jsonl", []byte(`{"text":"Hello world"}`+"\n"+`{"text":"Second document."}`+"\n"), 0o644))

	require.NoError(t, w.EncodeFileTarget(context.Background(), "in.jsonl", tok, filepath.Join("out", "corpus")))
	d, err := indexed.Open(filepath.Join(dir, "out", "corpus"))
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 2, d.Documents())
	assert.Regexp(t, `corpus: 2 documents, 2 sequences, \d+ tokens \(uint16\), fingerprint [0-9a-f]{16}\n`, log.String())

	err = w.EncodeFileTarget(context.Background(), "in.jsonl", "no-such-tokenizer", "x")
	assert.ErrorContains(t, err, `tokenizer "no-such-tokenizer" is neither a file nor a model name`)
}
