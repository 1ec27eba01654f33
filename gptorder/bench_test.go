package gptorder

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkBuild builds the order of a 1,000,000-sequence dataset (mean 500 tokens) for 8,192-token
// samples over two epochs, as tasks does before every run.
// Run: go test ./gptorder -run '^$' -bench Build -benchmem
func BenchmarkBuild(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	lengths := make([]int32, 1_000_000)
	var tokens int64
	for i := range lengths {
		lengths[i] = int32(1 + rng.IntN(999))
		tokens += int64(lengths[i])
	}
	o := Order{Seed: 1234, SeqLen: 8192, NumSamples: 2 * tokens / 8192, AddExtraToken: true}
	for b.Loop() {
		if _, err := Build(lengths, 0, len(lengths), o); err != nil {
			b.Fatal(err)
		}
	}
}
