package logparse

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// familyLog describes a benchmark log built from real lines of one family: the
// lines of the source files are repeated in order, the step number of every step
// line renumbered so that each is a new step (markers finds the numbers to
// renumber, each group 1 of each match).
type familyLog struct {
	name, family string
	sources      []string
	markers      *regexp.Regexp
	grep         string // the fixed string a grep -c reference counts
	// shift, when set, rewrites a line for repetition rep instead of markers (MLLOG numbers its
	// blocks by samples and times them by clock, so each repetition moves both on).
	shift func(line string, rep int) string
}

var familyLogs = []familyLog{
	{"megatron", Megatron, []string{"testdata/corpus/megatron-2023-multi.log", "testdata/real/megatron-2024-issue756.log"},
		regexp.MustCompile(`iteration\s+(\d+)/`), "iteration", nil},
	// The built Megatron-Core log holds a whole arguments block; repeating it is the
	// worst case for the preamble expressions.
	{"megatron-args", Megatron, []string{"testdata/built/megatron-core-8gpu.log"},
		regexp.MustCompile(`iteration\s+(\d+)/`), "iteration", nil},
	{"nemo", NeMo, []string{"testdata/real/nemo2-bionemo.log"},
		regexp.MustCompile(`iteration (\d+)/|global_step: (\d+)`), "global_step", nil},
	{name: "mlperf-amd", family: MLPerf, sources: []string{"testdata/real/mlperf-amd-mi355x-llama31-8b.log"}, grep: ":::MLLOG",
		shift: mllogShift(49152, 49152, 1_700_000)},
	{name: "mlperf-nvidia", family: MLPerf, sources: []string{"testdata/real/mlperf-nvidia-gb300-x8-llama31-8b.log"}, grep: ":::MLLOG",
		shift: mllogShift(184320, 11520, 4_200_000)},
	{"torchtitan", TorchTitan, []string{"testdata/corpus/torchtitan-2026-pr3393.log", "testdata/corpus/torchtitan-2025-pr1287.log", "testdata/real/torchtitan.log"},
		regexp.MustCompile(`step:\s*(\d+)`), "step:", nil},
}

// writeFamilyLog writes at least size bytes of fl's lines to path, whole repetitions
// of the source lines, and returns the number of repetitions.
func writeFamilyLog(tb testing.TB, fl familyLog, path string, size int64) int {
	tb.Helper()
	var lines []string
	for _, src := range fl.sources {
		b, err := os.ReadFile(src)
		if err != nil {
			tb.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			if !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var written int64
	step, reps := 0, 0
	for written < size || reps == 0 {
		reps++
		for _, l := range lines {
			if fl.shift != nil {
				l = fl.shift(l, reps-1)
			} else if loc := fl.markers.FindAllStringSubmatchIndex(l, -1); loc != nil {
				step++
				var sb strings.Builder
				prev := 0
				for _, m := range loc {
					for g := 2; g+1 < len(m); g += 2 {
						if m[g] >= 0 {
							sb.WriteString(l[prev:m[g]])
							sb.WriteString(strconv.Itoa(step))
							prev = m[g+1]
						}
					}
				}
				sb.WriteString(l[prev:])
				l = sb.String()
			}
			n, _ := w.WriteString(l + "\n")
			written += int64(n)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return reps
}

// childCPU is the CPU time of the process's waited-for children.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExtractFamily parses a log of each family built from the corpus's real
// lines (RIVAL_BENCH_LOG_BYTES bytes, default 64 MiB; 1 GiB for the figures in
// docs/measurements.md) and, in the same run, times `grep -c` of the family's step
// marker and an awk field split over the same file as the reference floor:
//
//	RIVAL_BENCH_LOG_BYTES=1073741824 GOMAXPROCS=1 go test ./frameworks/logparse -run '^$' -bench ExtractFamily -benchtime 1x -benchmem
func BenchmarkExtractFamily(b *testing.B) {
	size := int64(64 << 20)
	if v := os.Getenv("RIVAL_BENCH_LOG_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("RIVAL_BENCH_LOG_BYTES=%q is not a positive byte count", v)
		}
		size = n
	}
	for _, fl := range familyLogs {
		b.Run(fl.name, func(b *testing.B) {
			dir := b.TempDir()
			// One repetition's step count, read from a log of one repetition: every
			// repetition adds as many.
			one := filepath.Join(dir, "one.log")
			writeFamilyLog(b, fl, one, 0)
			small, err := ParseFile(one, fl.family)
			if err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(dir, fl.name+".log")
			steps := writeFamilyLog(b, fl, path, size) * small.StepCount
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				log, err := ParseFile(path, fl.family)
				if err != nil {
					b.Fatal(err)
				}
				if log.StepCount != steps {
					b.Fatalf("%d steps read, %d written", log.StepCount, steps)
				}
			}
			cpu := (cpuTime() - cpu0).Seconds() / float64(b.N)
			b.StopTimer()
			b.ReportMetric(float64(st.Size())/cpu/1e6, "MB/cpu-s")
			for _, ref := range []struct {
				metric string
				args   []string
			}{
				{"grep-MB/cpu-s", []string{"grep", "-c", "-F", fl.grep, path}},
				{"awk-MB/cpu-s", []string{"awk", "-F", "|", "{n += NF} END {print n}", path}},
			} {
				if _, err := exec.LookPath(ref.args[0]); err != nil {
					continue
				}
				c0 := childCPU()
				if out, err := exec.Command(ref.args[0], ref.args[1:]...).Output(); err != nil {
					b.Fatalf("%s: %v %s", ref.args[0], err, out)
				}
				if c := (childCPU() - c0).Seconds(); c > 0 {
					b.ReportMetric(float64(st.Size())/c/1e6, ref.metric)
				}
			}
		})
	}
}

// mllogNumbers finds the MLLOG numbers a repetition moves on.
var mllogNumbers = regexp.MustCompile(`"(time_ms|samples_count|step|epoch_num)": (\d+)`)

// mllogShift moves every sample count on by rep*samples, every metadata.step by rep*steps and
// every clock by rep*ms.
func mllogShift(samples, steps, ms int64) func(string, int) string {
	return func(l string, rep int) string {
		if rep == 0 {
			return l
		}
		return mllogNumbers.ReplaceAllStringFunc(l, func(m string) string {
			sub := mllogNumbers.FindStringSubmatch(m)
			n, _ := strconv.ParseInt(sub[2], 10, 64)
			by := samples
			switch sub[1] {
			case "time_ms":
				by = ms
			case "step":
				by = steps
			}
			return `"` + sub[1] + `": ` + strconv.FormatInt(n+int64(rep)*by, 10)
		})
	}
}
