package cache

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"
	"lukechampine.com/blake3/guts"
)

// TestX16MatchesReference compares the 16-lane kernel's subtree with the one
// lukechampine.com/blake3/guts computes, at chunk counters that cross 32 bits
// inside a group of 16, so the counter's high word is checked per lane.
func TestX16MatchesReference(t *testing.T) {
	if !haveX16 {
		t.Skip("this CPU has no AVX-512F: the 16-lane kernel is not used here")
	}
	buf := make([]byte, x16Bytes)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	var scratch [guts.MaxSIMD * guts.ChunkSize]byte
	for _, counter := range []uint64{0, 256, 1<<32 - 40, 1<<32 - 256, 1 << 32, 1<<40 + 512} {
		want := guts.ChainingValue(subtree(buf, counter, &scratch))
		require.Equal(t, want, subtree256((*[x16Bytes]byte)(buf), counter), "chunk counter %d", counter)
	}
}

// TestX16AsmIsGenerated: blake3x16_amd64.s is what its generator writes.
func TestX16AsmIsGenerated(t *testing.T) {
	want, err := exec.Command("go", "run", "./internal/b3gen").Output()
	require.NoError(t, err, "go run ./cache/internal/b3gen")
	got, err := os.ReadFile("blake3x16_amd64.s")
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "regenerate: go run ./cache/internal/b3gen > cache/blake3x16_amd64.s")
}

// BenchmarkSubtreeKernels hashes 64 MiB in memory, in 256-chunk subtrees, on
// one core: the 16-lane kernel against lukechampine.com/blake3/guts (the
// kernel the tree used before), without file reading or page faults:
//
//	go test ./cache -run '^$' -bench SubtreeKernels -benchmem
func BenchmarkSubtreeKernels(b *testing.B) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	var scratch [guts.MaxSIMD * guts.ChunkSize]byte
	for _, k := range []struct {
		name string
		run  func(sub []byte, counter uint64)
	}{
		{"x16", func(sub []byte, counter uint64) { subtree256((*[x16Bytes]byte)(sub), counter) }},
		{"guts", func(sub []byte, counter uint64) { guts.ChainingValue(subtree(sub, counter, &scratch)) }},
	} {
		if k.name == "x16" && !haveX16 {
			continue
		}
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			c0 := selfCPU()
			for b.Loop() {
				for off := 0; off < len(buf); off += x16Bytes {
					k.run(buf[off:off+x16Bytes], uint64(off/guts.ChunkSize))
				}
			}
			b.ReportMetric(float64(len(buf))*float64(b.N)/(selfCPU()-c0).Seconds()/1e6, "MB/cpu-s")
		})
	}
}
