package tokenizer

import (
	"path/filepath"
	"testing"
)

// BenchmarkEncodeCorpus encodes the hand-written corpora (prose, source code,
// multilingual text) document by document on one worker, as
// testdata/reference/bench-corpora.mjs times the reference on the same documents.
func BenchmarkEncodeCorpus(b *testing.B) {
	for _, model := range models {
		for _, corpus := range []string{"prose", "code", "multilingual"} {
			b.Run(model+"/"+corpus, func(b *testing.B) {
				tk := loadModel(b, model)
				docs := readCorpus(b, filepath.Join("testdata", "corpora", corpus+".jsonl"))
				n := 0
				for _, d := range docs {
					n += len(d)
				}
				b.SetBytes(int64(n))
				b.ReportAllocs()
				tk.EncodeBatch(docs, 1)
				cpu0 := cpuTime()
				for b.Loop() {
					tk.EncodeBatch(docs, 1)
				}
				reportCPU(b, cpu0, n)
			})
		}
	}
}
