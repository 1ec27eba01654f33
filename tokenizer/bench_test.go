package tokenizer

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time. The benchmark machine is shared,
// so besides wall-clock MB/s the benchmarks report MB per CPU-second, which
// other processes' load does not dilute.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration, bytes int) {
	if cpu := cpuTime() - start; cpu > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
	}
}

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
	cpu0 := cpuTime()
	for b.Loop() {
		ids = tk.AppendEncode(ids[:0], text, false)
	}
	reportCPU(b, cpu0, len(text))
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkEncodeLlama(b *testing.B)   { benchmarkEncode(b, "llama-3.1") }
func BenchmarkEncodeQwen(b *testing.B)    { benchmarkEncode(b, "qwen-2.5") }
func BenchmarkEncodeMistral(b *testing.B) { benchmarkEncode(b, "mistral-7b-v0.1") }

// BenchmarkEncodeBatchLlama encodes the text cut into paragraphs (the documents
// the Node benchmark gives the reference's encodeBatch) on one worker and on
// every core.
func BenchmarkEncodeBatchLlama(b *testing.B) {
	tk := loadModel(b, "llama-3.1")
	text := benchText(b)
	docs := splitParagraphs(text)
	for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run("workers="+strconv.Itoa(workers), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			tk.EncodeBatch(docs, workers)
			cpu0 := cpuTime()
			for b.Loop() {
				tk.EncodeBatch(docs, workers)
			}
			reportCPU(b, cpu0, len(text))
		})
	}
}

func benchmarkLoad(b *testing.B, model string) {
	p := modelFile(b, model)
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := Load(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(b.N), "cpu-ms/op")
}

func BenchmarkLoadLlama(b *testing.B)   { benchmarkLoad(b, "llama-3.1") }
func BenchmarkLoadQwen(b *testing.B)    { benchmarkLoad(b, "qwen-2.5") }
func BenchmarkLoadMistral(b *testing.B) { benchmarkLoad(b, "mistral-7b-v0.1") }

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
