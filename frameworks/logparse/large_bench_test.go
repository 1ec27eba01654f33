package logparse

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noise are lines real Megatron-LM runs print between iteration lines (library
// warnings, NCCL, validation and checkpoint lines; the last two contain
// "iteration" without being steps).
var noise = []string{
	"/usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:464: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. In version 2.4 we will raise an exception if use_reentrant is not passed.",
	"node-017:2841:3120 [0] NCCL INFO comm 0x5581c3b0 rank 0 nranks 64 cudaDev 0 nvmlDev 0 busId 18000 commId 0x9a1f2c - Init COMPLETE",
	"[rank0]:[W reducer.cpp:1389] Warning: find_unused_parameters=True was specified in DDP constructor, but did not find any unused parameters in the forward pass. (function operator())",
	"-----------------------------------------------------------------------------------------------",
	" validation loss at iteration %d | lm loss value: 2.134561E+00 | lm loss PPL: 8.452340E+00 | ",
	"saving checkpoint at iteration %7d to /lustre/ckpt/llama3-8b in torch_dist format",
}

// writeLargeLog writes a Megatron-LM log of about size bytes: iteration lines in
// the 2024 format with 1-3 noise lines after each, two slow warm-up steps, and
// steady step times of 5.2 s ± 0.05 s. It returns the number of steps written.
func writeLargeLog(path string, size int64) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	var written int64
	n := 0
	for written < size {
		n++
		ms := 5200 + 100*(rng.Float64()-0.5)
		switch n {
		case 1:
			ms = 31000
		case 2:
			ms = 15600
		}
		line := fmt.Sprintf("[2024-04-06 02:55:45] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | learning rate: 3.000000E-04 | global batch size:   128 | lm loss: %E | loss scale: 1.0 | grad norm: %.3f | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n",
			n, 9999999, n*128, ms, 231.9*5200/ms, 2+rng.Float64(), 1+rng.Float64())
		k, err := w.WriteString(line)
		if err != nil {
			f.Close()
			return 0, err
		}
		written += int64(k)
		for j := 0; j < 1+n%3; j++ {
			l := noise[(n+j)%len(noise)]
			if strings.Contains(l, "%") {
				l = fmt.Sprintf(l, n)
			}
			k, _ = w.WriteString(l + "\n")
			written += int64(k)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return n, f.Close()
}

// peakRSS returns the process's peak resident set size (VmHWM) in bytes, or 0.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// cpuTime is the process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS restarts VmHWM from the current RSS (Linux: write 5 to clear_refs).
func resetPeakRSS() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// BenchmarkParseLargeLog parses a generated Megatron-LM log of
// RIVAL_BENCH_LOG_BYTES bytes (default 256 MiB; docs/result-schema.md ("Bounded memory") records a 2 GiB
// run) written to a temporary folder, and reports throughput and the process's
// peak RSS while parsing. Run it on one core:
//
//	RIVAL_BENCH_LOG_BYTES=2147483648 GOMAXPROCS=1 go test ./frameworks/logparse -run '^$' -bench ParseLargeLog -benchtime 1x
func BenchmarkParseLargeLog(b *testing.B) {
	size := int64(256 << 20)
	if v := os.Getenv("RIVAL_BENCH_LOG_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("RIVAL_BENCH_LOG_BYTES=%q is not a positive byte count", v)
		}
		size = n
	}
	path := filepath.Join(b.TempDir(), "large.log")
	if keep := os.Getenv("RIVAL_BENCH_LOG_KEEP"); keep != "" {
		path = keep // reuse a generated log between runs (profiling)
	}
	steps := -1
	if _, err := os.Stat(path); err != nil {
		if steps, err = writeLargeLog(path, size); err != nil {
			b.Fatal(err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	resetPeakRSS()
	b.SetBytes(st.Size())
	b.ResetTimer()
	var peak int64
	cpu0 := cpuTime()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		log, err := ParseFile(path, "")
		if err != nil {
			b.Fatal(err)
		}
		if steps >= 0 && log.StepCount != steps {
			b.Fatalf("%d steps read, %d written", log.StepCount, steps)
		}
		peak = max(peak, peakRSS())
	}
	b.StopTimer()
	el := time.Since(start).Seconds() / float64(b.N)
	cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
	b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
	// CPU time is the fair measure on a shared machine: with GOMAXPROCS=1 it is the
	// one core's time, whatever else runs.
	b.ReportMetric(float64(st.Size())/cpu/1e6, "MB/cpu-s")
	b.Logf("%d bytes, %d steps, %.1f s wall and %.1f s CPU per parse, peak RSS %.1f MiB", st.Size(), steps, el, cpu, float64(peak)/(1<<20))
}
