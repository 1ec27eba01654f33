package tasks

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rivalbench/rival/corpus"
	"github.com/rivalbench/rival/dataset"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/tokenizer"
)

// benchCorpus writes Go's copy of Newton's Opticks, cut into paragraphs
// and repeated to about 8 MB, as JSONL, and returns the path, the
// paragraphs and the byte count of the texts.
func benchCorpus(b *testing.B) (string, []string, int64) {
	b.Helper()
	src := filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt")
	raw, err := os.ReadFile(src)
	if err != nil {
		b.Skipf("benchmark text missing: %v", err)
	}
	paras := strings.Split(string(raw), "\n\n")
	var docs []string
	var n int64
	for n < 8<<20 {
		for _, p := range paras {
			docs = append(docs, p)
			n += int64(len(p))
		}
	}
	path := filepath.Join(b.TempDir(), "opticks.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := corpus.NewWriter(f)
	for _, d := range docs {
		w.Write(d)
	}
	w.Flush()
	f.Close()
	return path, docs, n
}

// benchTokenizer is Llama 3.1's tokenizer when ../shared has it, else the
// bundled Mistral one.
func benchTokenizer(b *testing.B) *tokenizer.Tokenizer {
	p := filepath.Join("..", "..", "shared", "tokenizers", "llama-3.1", "tokenizer.json")
	if _, err := os.Stat(p); err != nil {
		p = mistralTok
	}
	tk, err := tokenizer.Load(p)
	if err != nil {
		b.Fatal(err)
	}
	return tk
}

// BenchmarkEncodeTokenizeOnly is the baseline for BenchmarkEncodeEndToEnd:
// the same documents, in memory, encoded on every core.
func BenchmarkEncodeTokenizeOnly(b *testing.B) {
	_, docs, n := benchCorpus(b)
	tk := benchTokenizer(b)
	b.SetBytes(n)
	for b.Loop() {
		tk.EncodeBatchWithSpecial(docs, 0)
	}
}

// BenchmarkEncodeEndToEnd is JSONL on disk to .bin/.idx with the real
// tokenizer: what the format and the pipeline add over tokenizing alone.
func BenchmarkEncodeEndToEnd(b *testing.B) {
	path, _, n := benchCorpus(b)
	tk := benchTokenizer(b)
	out := filepath.Join(b.TempDir(), "out")
	opt := dataset.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    2, DType: indexed.DTypeForVocab(tk.VocabSize()), ChunkBytes: encodeChunkBytes,
	}
	b.SetBytes(n)
	for b.Loop() {
		if _, err := dataset.EncodeFile(context.Background(), []string{path}, out, opt); err != nil {
			b.Fatal(err)
		}
	}
}
