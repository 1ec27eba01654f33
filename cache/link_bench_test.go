package cache

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkStoreAndRestoreOutput stores one output of RIVAL_BENCH_LINK_BYTES
// bytes (default 256 MiB) in the cache as the runner does and restores it
// after it is removed, sharing its bytes (the default) and with
// RIVAL_CACHE_LINK=copy; cp of the same file is the reference in the same
// run. disk-B is what the output and the cache take on disk afterwards, each
// file once:
//
//	go test ./cache -run '^$' -bench StoreAndRestoreOutput -benchmem -benchtime 3x
func BenchmarkStoreAndRestoreOutput(b *testing.B) {
	size := int64(256 << 20)
	if v := os.Getenv("RIVAL_BENCH_LINK_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("RIVAL_BENCH_LINK_BYTES=%q is not a positive byte count", v)
		}
		size = n
	}
	content := make([]byte, size)
	for i := range content {
		content[i] = byte(i*7 + i>>12)
	}
	for _, mode := range []string{"shared", "copy"} {
		b.Run(mode, func(b *testing.B) {
			if mode == "copy" {
				b.Setenv(LinkEnv, "copy")
			} else {
				b.Setenv(LinkEnv, "")
			}
			b.SetBytes(size)
			b.ReportAllocs()
			var disk int64
			var cpu time.Duration // of the timed part only
			for b.Loop() {
				b.StopTimer()
				root := b.TempDir()
				c, err := Open(filepath.Join(root, "cache"))
				if err != nil {
					b.Fatal(err)
				}
				out := filepath.Join(root, "ws", "big.bin")
				if err := WriteFileAtomic(out, content, 0o644); err != nil {
					b.Fatal(err)
				}
				want, err := WrittenID(out)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				c0 := selfCPU()
				d, _, _, err := c.PutPublished(out, false, true, want)
				if err != nil {
					b.Fatal(err)
				}
				if err := os.Remove(out); err != nil {
					b.Fatal(err)
				}
				if err := c.MaterializeSize(d, out, 0o644, size, true); err != nil {
					b.Fatal(err)
				}
				cpu += selfCPU() - c0
				b.StopTimer()
				disk = diskOfFiles(b, c.Dir, filepath.Dir(out))
				os.RemoveAll(root)
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(disk), "disk-B")
		})
	}
	b.Run("cp", func(b *testing.B) {
		root := b.TempDir()
		src := filepath.Join(root, "src")
		if err := os.WriteFile(src, content, 0o644); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		c0 := childrenCPU()
		for b.Loop() {
			if out, err := exec.Command("cp", src, filepath.Join(root, "copy")).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v %s", err, out)
			}
		}
		b.ReportMetric(float64((childrenCPU()-c0).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	})
}
