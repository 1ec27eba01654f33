package encode

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/rivalbench/rival/encode/internal/synth"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/jsonl"
)

// benchCorpus is shared by the benchmarks: 64 MiB of synthetic JSONL.
var benchCorpus = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "rival-encode-bench")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "corpus.jsonl")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	_, err = synth.WriteCorpus(f, 64<<20, 1)
	return path, err
})

func corpus(b *testing.B) (string, int64) {
	path, err := benchCorpus()
	if err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, st.Size()
}

// BenchmarkTokenizeOnly is the baseline: the same texts, already decoded in
// memory, encoded by GOMAXPROCS goroutines with no JSON and no output.
func BenchmarkTokenizeOnly(b *testing.B) {
	path, size := corpus(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var texts []string
	for line := range splitLines(data) {
		text, err := jsonl.Text(line)
		if err != nil {
			b.Fatal(err)
		}
		texts = append(texts, text)
	}
	workers := runtime.GOMAXPROCS(0)
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				var buf []int32
				for i := w; i < len(texts); i += workers {
					buf = synth.Encode(buf[:0], texts[i])
				}
			})
		}
		wg.Wait()
	}
}

// BenchmarkEncodeFile is the whole encode: JSONL on disk to .bin/.idx.
func BenchmarkEncodeFile(b *testing.B) {
	path, size := corpus(b)
	out := filepath.Join(b.TempDir(), "out")
	opt := Options{Encode: synth.Encode, EOD: 2, DType: indexed.Uint16}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		if _, err := File(context.Background(), []string{path}, out, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeSplit adds the counting pass and a second output.
func BenchmarkEncodeSplit(b *testing.B) {
	path, size := corpus(b)
	dir := b.TempDir()
	opt := Options{Encode: synth.Encode, EOD: 2, DType: indexed.Uint16}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := Split(context.Background(), []string{path}, filepath.Join(dir, "train"), filepath.Join(dir, "test"), 0.8, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func splitLines(data []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(data) > 0 {
			i := 0
			for i < len(data) && data[i] != '\n' {
				i++
			}
			if !yield(data[:i]) {
				return
			}
			if i == len(data) {
				return
			}
			data = data[i+1:]
		}
	}
}

// BenchmarkPipelineOverhead runs the whole encode with an encoder that does
// no work (one id per document): what remains is the pipeline's own cost
// per input byte (reading, JSON, ordering, writing), to set against any
// tokenizer's cost per byte.
func BenchmarkPipelineOverhead(b *testing.B) {
	path, size := corpus(b)
	out := filepath.Join(b.TempDir(), "out")
	opt := Options{Encode: func(dst []int32, _ string) []int32 { return append(dst, 5) }, EOD: 2, DType: indexed.Uint16}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		if _, err := File(context.Background(), []string{path}, out, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTextField is single-threaded JSON line decoding.
func BenchmarkTextField(b *testing.B) {
	path, _ := corpus(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	var n int64
	for line := range splitLines(data) {
		lines = append(lines, line)
		n += int64(len(line)) + 1
		if n > 8<<20 {
			break
		}
	}
	b.SetBytes(n)
	b.ResetTimer()
	for b.Loop() {
		for _, line := range lines {
			if _, err := jsonl.Text(line); err != nil {
				b.Fatal(err)
			}
		}
	}
}
