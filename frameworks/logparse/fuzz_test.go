package logparse

import (
	"math"
	"os"
	"strings"
	"testing"
)

// fuzzFamily seeds a fuzz target with one family's fixtures and checks the parser
// never panics, and that a successful parse always has steps in increasing order.
func fuzzFamily(f *testing.F, framework string, seeds ...string) {
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
		for _, line := range strings.Split(string(b), "\n") {
			f.Add(line)
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, fw := range []string{"", framework} {
			log, err := Parse(strings.NewReader(in), fw)
			if err != nil {
				continue
			}
			if len(log.Steps) == 0 || log.StepCount < len(log.Steps) {
				t.Fatalf("success with %d steps kept in full of %d", len(log.Steps), log.StepCount)
			}
			if len(log.Steps) > HeadSteps || len(log.Curve) > CurvePoints {
				t.Fatalf("unbounded: %d steps in full, %d curve points", len(log.Steps), len(log.Curve))
			}
			if len(log.Evaluations) > MaxEvaluations {
				t.Fatalf("unbounded: %d evaluations", len(log.Evaluations))
			}
			for _, e := range log.Evaluations {
				if math.IsNaN(e.Loss) || math.IsInf(e.Loss, 0) {
					t.Fatalf("evaluation at step %d with loss %v", e.Step, e.Loss)
				}
			}
			for i := 1; i < len(log.Steps); i++ {
				if log.Steps[i].Step <= log.Steps[i-1].Step {
					t.Fatalf("steps out of order: %d after %d", log.Steps[i].Step, log.Steps[i-1].Step)
				}
			}
		}
	})
}

func FuzzMegatron(f *testing.F) {
	fuzzFamily(f, Megatron, "testdata/real/megatron-2024-issue756.log", "testdata/built/megatron-torchrun-ranks.log",
		"testdata/real/megatron-megablocks-rocm-blog-validation.log")
}

func FuzzPrimus(f *testing.F) {
	fuzzFamily(f, Primus, "testdata/real/primus-legacy-2025.log", "testdata/built/primus-legacy-mem-first.log")
}

func FuzzNeMo(f *testing.F) {
	fuzzFamily(f, NeMo, "testdata/real/nemo2-bionemo.log", "testdata/real/nemo2-evo2-validation.log")
}

func FuzzMegatronBridge(f *testing.F) {
	fuzzFamily(f, MegatronBridge, "testdata/real/megatron-bridge-dgxc-h100.log", "testdata/built/megatron-bridge-steptime-only.log")
}

func FuzzMegatronDeepSpeed(f *testing.F) {
	fuzzFamily(f, MegatronDeepSpeed, "testdata/corpus/megatron-deepspeed.log")
}

func FuzzTorchTitan(f *testing.F) {
	fuzzFamily(f, TorchTitan, "testdata/real/torchtitan.log", "testdata/built/torchtitan-llama-8gpu.log")
}

func FuzzMLPerf(f *testing.F) {
	fuzzFamily(f, MLPerf, "testdata/real/mlperf-amd-mi355x-llama31-8b.log", "testdata/real/mlperf-nvidia-gb200-x72-llama31-8b.log")
}
