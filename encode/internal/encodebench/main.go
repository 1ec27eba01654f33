// Command encodebench measures the encode pipeline on a synthetic corpus:
// throughput and peak resident memory (VmHWM from /proc/self/status).
//
//	go run ./encode/internal/encodebench -gen /tmp/corpus.jsonl -size 2147483648
//	go run ./encode/internal/encodebench -in /tmp/corpus.jsonl -out /tmp/enc
//
// The first writes the corpus; the second encodes it into OUT-train and
// OUT-test (split 0.8, the two-pass path) and reports, in a fresh process,
// so the corpus generation does not count towards the peak.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/encode/internal/synth"
	"github.com/rivalbench/rival/indexed"
)

func main() {
	gen := flag.String("gen", "", "write a synthetic JSONL corpus to this path and exit")
	size := flag.Int64("size", 2<<30, "bytes of synthetic corpus to write with -gen")
	in := flag.String("in", "", "JSONL corpus to encode")
	out := flag.String("out", "", "output prefix; -train and -test are appended (with -split) or used as is (-split 0)")
	split := flag.Float64("split", 0.8, "train split; 0 writes one dataset with encode.File")
	workers := flag.Int("workers", 0, "encoding goroutines (0: GOMAXPROCS)")
	flag.Parse()
	if err := run(*gen, *size, *in, *out, *split, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "encodebench:", err)
		os.Exit(1)
	}
}

func run(gen string, size int64, in, out string, split float64, workers int) error {
	if gen != "" {
		f, err := os.Create(gen)
		if err != nil {
			return err
		}
		docs, err := synth.WriteCorpus(f, size, 1)
		if err != nil {
			f.Close()
			return err
		}
		fmt.Printf("wrote %s: %d documents\n", gen, docs)
		return f.Close()
	}
	if in == "" || out == "" {
		return fmt.Errorf("give -gen PATH, or -in CORPUS and -out PREFIX")
	}
	st, err := os.Stat(in)
	if err != nil {
		return err
	}
	opt := encode.Options{Encode: synth.Encode, EOD: 2, DType: indexed.Uint16, Workers: workers}
	start := time.Now()
	var stats []encode.Stats
	if split == 0 {
		s, err := encode.File(context.Background(), []string{in}, out, opt)
		if err != nil {
			return err
		}
		stats = append(stats, s)
	} else {
		tr, te, err := encode.Split(context.Background(), []string{in}, out+"-train", out+"-test", split, opt)
		if err != nil {
			return err
		}
		stats = append(stats, tr, te)
	}
	elapsed := time.Since(start)
	for _, s := range stats {
		fmt.Printf("documents=%d sequences=%d tokens=%d\n", s.Documents, s.Sequences, s.Tokens)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("input=%.1f MiB elapsed=%s throughput=%.1f MB/s workers=%d\n",
		float64(st.Size())/(1<<20), elapsed.Round(time.Millisecond), float64(st.Size())/1e6/elapsed.Seconds(), max(workers, runtime.GOMAXPROCS(0)))
	fmt.Printf("peak RSS (VmHWM)=%s go heap sys=%.1f MiB total alloc=%.1f MiB gc=%d\n",
		vmHWM(), float64(ms.HeapSys)/(1<<20), float64(ms.TotalAlloc)/(1<<20), ms.NumGC)
	return nil
}

func vmHWM() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "unavailable: " + err.Error()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unavailable"
}
