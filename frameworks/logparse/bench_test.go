package logparse

import (
	"io"
	"os"
	"testing"
)

// repeatReader yields the same log body n times, so a large input needs no large file;
// the repeated iteration numbers are dropped as duplicates.
type repeatReader struct {
	body []byte
	n    int
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	c := copy(p, r.body[r.off:])
	r.off += c
	if r.off == len(r.body) {
		r.off, r.n = 0, r.n-1
	}
	return c, nil
}

// BenchmarkParseStream measures throughput and allocation on ~64 MiB of Megatron log;
// memory does not grow with input size because one rank's steps are kept and
// repeated iteration numbers are dropped.
func BenchmarkParseStream(b *testing.B) {
	body, err := os.ReadFile("testdata/built/megatron-core-8gpu.log")
	if err != nil {
		b.Fatal(err)
	}
	reps := (64 << 20) / len(body)
	b.SetBytes(int64(reps * len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(&repeatReader{body: body, n: reps}, ""); err != nil {
			b.Fatal(err)
		}
	}
}
