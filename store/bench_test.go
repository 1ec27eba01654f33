package store

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container/registrytest"
)

// benchBytes is the size of the encoded dataset the benchmark moves: RIVAL_STORE_BENCH_BYTES,
// default 1 GiB.
func benchBytes(b *testing.B) int64 {
	if v := os.Getenv("RIVAL_STORE_BENCH_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(b, err)
		return n
	}
	return 1 << 30
}

// writeDataset writes n bytes of token-like data (uint16 ids, incompressible) without holding
// them in memory.
func writeDataset(b *testing.B, path string, n int64) {
	f, err := os.Create(path)
	require.NoError(b, err)
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewSource(1))
	buf := make([]byte, 1<<20)
	for left := n; left > 0; left -= int64(len(buf)) {
		rng.Read(buf)
		chunk := buf
		if left < int64(len(chunk)) {
			chunk = chunk[:left]
		}
		_, err := w.Write(chunk)
		require.NoError(b, err)
	}
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
}

// peakHeap samples the Go heap in use while f runs and returns its peak.
func peakHeap(f func()) uint64 {
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak.Load()
}

// BenchmarkStore moves one encoded dataset (.bin) through the local registry: push (sha256 pass,
// then the upload), pull into an empty cache (sha256 and BLAKE3 as it streams), and beside them a
// plain copy of the same bytes (read, write, fsync). peak-heap-MiB is the Go heap in use at its
// highest during the operation: it stays flat whatever the size.
//
//	go test ./store -run '^$' -bench BenchmarkStore -benchtime 1x -benchmem
func BenchmarkStore(b *testing.B) {
	n := benchBytes(b)
	srv := registrytest.StartServer(b, registrytest.Options{})
	dir := b.TempDir()
	src := filepath.Join(dir, "dataset.bin")
	writeDataset(b, src, n)
	a, err := cache.Open(filepath.Join(dir, "cache-a"))
	require.NoError(b, err)
	d, size, err := a.PutFile(src, false)
	require.NoError(b, err)
	rec := cache.Record{Key: cache.HashBytes([]byte("bench")), Task: "encode bench", Created: time.Now().UTC(),
		Outputs: []cache.Output{{Path: "data/bench.bin", Digest: d, Size: size, Mode: 0o644}}}
	repo := 0
	report := func(b *testing.B, peak uint64) {
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}

	b.Run("push", func(b *testing.B) {
		b.SetBytes(n)
		var peak uint64
		for i := 0; i < b.N; i++ {
			repo++ // a repository of its own: the registry holds no link to the blob there yet
			s := open(b, srv.Addr, Options{})
			s.repo.Reference.Repository = fmt.Sprintf("bench/push%d", repo)
			peak = max(peak, peakHeap(func() {
				_, err := s.PushAction(context.Background(), a, rec)
				require.NoError(b, err)
			}))
		}
		report(b, peak)
	})
	s := open(b, srv.Addr, Options{})
	s.repo.Reference.Repository = "bench/pull"
	_, err = s.PushAction(context.Background(), a, rec)
	require.NoError(b, err)
	b.Run("pull", func(b *testing.B) {
		b.SetBytes(n)
		var peak uint64
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			c, err := cache.Open(filepath.Join(b.TempDir(), "cache"))
			require.NoError(b, err)
			b.StartTimer()
			peak = max(peak, peakHeap(func() {
				_, err := s.PullAction(context.Background(), c, rec.Key, len(rec.Outputs))
				require.NoError(b, err)
			}))
		}
		report(b, peak)
	})
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(n)
		var peak uint64
		for i := 0; i < b.N; i++ {
			dst := filepath.Join(b.TempDir(), "copy.bin")
			peak = max(peak, peakHeap(func() {
				in, err := os.Open(src)
				require.NoError(b, err)
				defer in.Close()
				out, err := os.Create(dst)
				require.NoError(b, err)
				_, err = io.CopyBuffer(out, in, make([]byte, 1<<20))
				require.NoError(b, err)
				require.NoError(b, out.Sync())
				require.NoError(b, out.Close())
			}))
		}
		report(b, peak)
	})
}
