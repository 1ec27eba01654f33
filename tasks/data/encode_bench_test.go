package data

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rivalbench/rival/corpus"
	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/tokenizer"
)

// benchCorpus writes Go's copy of Newton's Opticks, cut into paragraphs
// and repeated to about size bytes, as JSONL, and returns the path, the
// paragraphs and the byte count of the texts.
func benchCorpus(b *testing.B, size int64) (string, []string, int64) {
	b.Helper()
	src := filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt")
	raw, err := os.ReadFile(src)
	if err != nil {
		b.Skipf("benchmark text missing: %v", err)
	}
	paras := strings.Split(string(raw), "\n\n")
	var docs []string
	var n int64
	for n < size {
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
	_, docs, n := benchCorpus(b, 8<<20)
	tk := benchTokenizer(b)
	b.SetBytes(n)
	for b.Loop() {
		tk.EncodeBatchWithSpecial(docs, 0)
	}
}

// BenchmarkEncodeEndToEnd is JSONL on disk to .bin/.idx with the real
// tokenizer: what the format and the pipeline add over tokenizing alone.
func BenchmarkEncodeEndToEnd(b *testing.B) {
	path, _, n := benchCorpus(b, 8<<20)
	tk := benchTokenizer(b)
	out := filepath.Join(b.TempDir(), "out")
	opt := encode.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    2, DType: indexed.DTypeForVocab(tk.VocabSize()), ChunkBytes: encodeChunkBytes,
	}
	b.SetBytes(n)
	for b.Loop() {
		if _, err := encode.File(context.Background(), []string{path}, out, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeOverhead alternates the two benchmarks above within one
// process, a run of each per iteration, and reports what the whole encode
// adds over tokenizing alone as overhead-% (wall time, both cores busy in
// both). Alternating cancels the drift in machine speed that makes two
// separate benchmark runs on a shared host disagree by more than the
// difference being measured.
func BenchmarkEncodeOverhead(b *testing.B) {
	path, docs, n := benchCorpus(b, 32<<20)
	tk := benchTokenizer(b)
	out := filepath.Join(b.TempDir(), "out")
	opt := encode.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    2, DType: indexed.DTypeForVocab(tk.VocabSize()), ChunkBytes: encodeChunkBytes,
	}
	// warm both paths (word caches, page cache) before measuring
	tk.EncodeBatchWithSpecial(docs, 0)
	if _, err := encode.File(context.Background(), []string{path}, out, opt); err != nil {
		b.Fatal(err)
	}
	var tokenize, encoded time.Duration
	b.SetBytes(2 * n)
	for i := 0; b.Loop(); i++ {
		// Each side starts on a collected heap, so neither pays for a
		// collection of the other's garbage (tokenizing alone allocates its
		// result; the encode does not).
		one := func() {
			runtime.GC()
			t0 := time.Now()
			tk.EncodeBatchWithSpecial(docs, 0)
			tokenize += time.Since(t0)
		}
		two := func() {
			runtime.GC()
			t0 := time.Now()
			if _, err := encode.File(context.Background(), []string{path}, out, opt); err != nil {
				b.Fatal(err)
			}
			encoded += time.Since(t0)
		}
		if i%2 == 0 { // alternate the order too, so neither always runs first
			one()
			two()
		} else {
			two()
			one()
		}
	}
	b.ReportMetric(100*(float64(encoded)/float64(tokenize)-1), "overhead-%")
	b.ReportMetric(float64(n)/tokenize.Seconds()*float64(b.N)/1e6, "tokenize-MB/s")
	b.ReportMetric(float64(n)/encoded.Seconds()*float64(b.N)/1e6, "encode-MB/s")
}
