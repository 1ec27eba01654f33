package tokenizer

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// benchText is English prose that ships with every Go installation (Newton's
// Opticks, public domain), so the numbers can be reproduced anywhere; the
// Node benchmark (testdata/reference/bench.mjs) reads the same file.
func benchText(b *testing.B) string {
	b.Helper()
	p := filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Skipf("benchmark text %s not found: %v", p, err)
	}
	return string(data)
}

func benchmarkEncode(b *testing.B, model string) {
	tk := loadModel(b, model)
	text := benchText(b)
	ids := tk.AppendEncode(nil, text, false)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ids = tk.AppendEncode(ids[:0], text, false)
	}
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkEncodeLlama(b *testing.B)   { benchmarkEncode(b, "llama-3.1") }
func BenchmarkEncodeQwen(b *testing.B)    { benchmarkEncode(b, "qwen-2.5") }
func BenchmarkEncodeMistral(b *testing.B) { benchmarkEncode(b, "mistral-7b-v0.1") }

// BenchmarkEncodeBatchLlama encodes the text split into lines, on all cores.
func BenchmarkEncodeBatchLlama(b *testing.B) {
	tk := loadModel(b, "llama-3.1")
	text := benchText(b)
	docs := splitParagraphs(text)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tk.EncodeBatch(docs, 0)
	}
}

func BenchmarkLoadLlama(b *testing.B) {
	p := modelFile(b, "llama-3.1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadQwen(b *testing.B) {
	p := modelFile(b, "qwen-2.5")
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
}

// splitParagraphs cuts text at blank lines into documents.
func splitParagraphs(text string) []string {
	var docs []string
	start := 0
	for i := 0; i+1 < len(text); i++ {
		if text[i] == '\n' && text[i+1] == '\n' {
			docs = append(docs, text[start:i+2])
			start = i + 2
			i++
		}
	}
	return append(docs, text[start:])
}
