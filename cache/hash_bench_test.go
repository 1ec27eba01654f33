package cache

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/zeebo/blake3"
)

// BenchmarkHashLargeFile hashes one file of RIVAL_BENCH_HASH_BYTES bytes
// (default 256 MiB) sequentially (zeebo/blake3), with HashFile on one core and
// on every core, and times in the same run b3sum on one thread and on every
// core, and cp of the same file, as the references:
//
//	go test ./cache -run '^$' -bench HashLargeFile -benchmem -benchtime 5x
func BenchmarkHashLargeFile(b *testing.B) {
	size := int64(256 << 20)
	if v := os.Getenv("RIVAL_BENCH_HASH_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("RIVAL_BENCH_HASH_BYTES=%q is not a positive byte count", v)
		}
		size = n
	}
	dir := b.TempDir()
	p := filepath.Join(dir, "big")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for w := int64(0); w < size; w += int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), size-w)]); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	b.Run("sequential", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		c0 := selfCPU()
		defer func() {
			b.ReportMetric(float64(size)*float64(b.N)/(selfCPU()-c0).Seconds()/1e6, "MB/cpu-s")
		}()
		for b.Loop() {
			f, _ := os.Open(p)
			h := blake3.New()
			if _, err := io.CopyBuffer(h, f, make([]byte, 1<<20)); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	// HashFile on one core (GOMAXPROCS=1: the 16-lane kernel where the CPU
	// has AVX-512, else the sequential hasher) and on every core.
	for _, procs := range []int{1, 0} {
		name := "HashFile"
		if procs == 1 {
			name = "HashFile-1-core"
		}
		b.Run(name, func(b *testing.B) {
			if procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			}
			b.SetBytes(size)
			b.ReportAllocs()
			c0 := selfCPU()
			for b.Loop() {
				if _, _, err := HashFile(p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size)*float64(b.N)/(selfCPU()-c0).Seconds()/1e6, "MB/cpu-s")
		})
	}
	for _, ref := range []struct {
		name string
		args []string
	}{
		{"b3sum-1-thread", []string{"b3sum", "--num-threads", "1", "--no-names", p}},
		{"b3sum", []string{"b3sum", "--no-names", p}},
		{"cp", []string{"cp", p, filepath.Join(dir, "copy")}},
	} {
		if _, err := exec.LookPath(ref.args[0]); err != nil {
			continue
		}
		b.Run(ref.name, func(b *testing.B) {
			b.SetBytes(size)
			c0 := childrenCPU()
			defer func() {
				b.ReportMetric(float64(size)*float64(b.N)/(childrenCPU()-c0).Seconds()/1e6, "MB/cpu-s")
			}()
			for b.Loop() {
				if out, err := exec.Command(ref.args[0], ref.args[1:]...).CombinedOutput(); err != nil {
					b.Fatalf("%v: %v %s", ref.args, err, out)
				}
			}
		})
	}
}

func rusageCPU(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfCPU and childrenCPU are the CPU time (user + system) of this process and
// of its waited-for children: the machine is shared, and CPU time is not
// diluted by other processes.
func selfCPU() time.Duration     { return rusageCPU(syscall.RUSAGE_SELF) }
func childrenCPU() time.Duration { return rusageCPU(syscall.RUSAGE_CHILDREN) }
