package logparse

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json from the parser's output")

// fixtures lists every log under testdata/real and testdata/built that has steps.
func fixtures(t testing.TB) []string {
	var out []string
	for _, dir := range []string{"real", "built"} {
		m, err := filepath.Glob(filepath.Join("testdata", dir, "*.log"))
		require.NoError(t, err)
		for _, f := range m {
			if filepath.Base(f) != "no-steps.log" {
				out = append(out, f)
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// TestGolden parses every fixture and compares with its golden JSON
// (go test ./frameworks/logparse -run TestGolden -update rewrites them).
func TestGolden(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f, func(t *testing.T) {
			log, err := ParseFile(f, "")
			require.NoError(t, err)
			log.Source = filepath.ToSlash(f)
			got, err := json.MarshalIndent(log, "", "  ")
			require.NoError(t, err)
			golden := filepath.Join("testdata", "golden", filepath.Base(filepath.Dir(f))+"-"+strings.TrimSuffix(filepath.Base(f), ".log")+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create it")
			assert.JSONEq(t, string(want), string(got))
		})
	}
}

func f64(t *testing.T, p *float64) float64 {
	t.Helper()
	require.NotNil(t, p)
	return *p
}

func TestRealLines(t *testing.T) {
	t.Run("megatron 2024 with memory line", func(t *testing.T) {
		log, err := ParseFile("testdata/real/megatron-2024-issue756.log", "")
		require.NoError(t, err)
		assert.Equal(t, Megatron, log.Framework)
		require.Len(t, log.Steps, 1)
		s := log.Steps[0]
		assert.Equal(t, 2, s.Step)
		assert.Equal(t, "2024-04-06 02:55:45", s.Timestamp)
		assert.InDelta(t, 5.6301, f64(t, s.StepTimeSeconds), 1e-9)
		assert.InDelta(t, 231.9, f64(t, s.TFLOPsPerGPU), 1e-9)
		assert.InDelta(t, 4e-7, f64(t, s.LearningRate), 1e-18)
		assert.InDelta(t, 2.021530, f64(t, s.Loss), 1e-9)
		assert.InDelta(t, 6.895, f64(t, s.GradNorm), 1e-9)
		assert.Equal(t, "1.087362E+00", s.Extra["load_balancing_loss"])
		assert.Equal(t, 0, *s.NaNIterations)
		require.Len(t, log.Memory, 1)
		assert.Equal(t, 1, log.Memory[0].Rank)
		assert.InDelta(t, 54250.97802734375, f64(t, log.Memory[0].AllocatedMiB), 1e-9) // Megatron's MB is MiB
		assert.InDelta(t, 61480.0, f64(t, log.Memory[0].MaxReservedMiB), 1e-9)
		assert.Equal(t, 128, *log.Preamble.GlobalBatchSize)
	})
	t.Run("megatron without timestamp", func(t *testing.T) {
		log, err := ParseFile("testdata/real/megatron-old-no-timestamp.log", "megatron")
		require.NoError(t, err)
		assert.Equal(t, 122, log.Steps[0].Step)
		assert.Equal(t, 250000, *log.Steps[0].TotalSteps)
		assert.InDelta(t, 9.150e-6, f64(t, log.Steps[0].LearningRate), 1e-15)
		assert.InDelta(t, 86.5452, f64(t, log.Steps[0].StepTimeSeconds), 1e-9)
	})
	t.Run("primus legacy: X/Y takes X, GB is GiB", func(t *testing.T) {
		log, err := ParseFile("testdata/real/primus-legacy-2025.log", "")
		require.NoError(t, err)
		assert.Equal(t, Primus, log.Framework)
		// two lines from different runs: rank-63/64 outranks rank-7/8
		require.NotNil(t, log.Rank)
		assert.Equal(t, 63, *log.Rank)
		require.Len(t, log.Steps, 1)
		s := log.Steps[0]
		assert.Equal(t, 424, s.Step)
		assert.InDelta(t, 16.6013, f64(t, s.StepTimeSeconds), 1e-9)
		assert.InDelta(t, 11.9, f64(t, s.TFLOPsPerGPU), 1e-9)
		assert.InDelta(t, 246.7, f64(t, s.TokensPerSecondPerGPU), 1e-9)
		assert.InDelta(t, 253.38*1024, f64(t, s.MemDeviceUsedMiB), 1e-6)
		assert.InDelta(t, 255.98*1024, f64(t, s.MemDeviceTotalMiB), 1e-6)
		assert.InDelta(t, 0.9898, f64(t, s.MemUsedFraction), 1e-9)
		assert.Equal(t, 1, log.Stats.OtherRankLines)
		assert.Equal(t, 64, *log.Preamble.WorldSize, "the kept rank's world size")
	})
	t.Run("megatron-bridge memory in GB of 1e9 bytes", func(t *testing.T) {
		log, err := ParseFile("testdata/real/megatron-bridge-dgxc-h100.log", "")
		require.NoError(t, err)
		assert.Equal(t, MegatronBridge, log.Framework)
		require.Len(t, log.Memory, 1)
		assert.InDelta(t, 51.072e9/(1<<20), f64(t, log.Memory[0].AllocatedMiB), 1e-6)
		assert.InDelta(t, 194.41e9/(1<<20), f64(t, log.Memory[0].MaxAllocatedMiB), 1e-6)
		assert.Equal(t, "571", log.Memory[0].Extra["mem-allocated-count"])
		assert.InDelta(t, 20.2891, f64(t, log.Steps[0].StepTimeSeconds), 1e-9)
	})
	t.Run("nemo", func(t *testing.T) {
		log, err := ParseFile("testdata/real/nemo2-bionemo.log", "")
		require.NoError(t, err)
		assert.Equal(t, NeMo, log.Framework)
		s := log.Steps[0]
		assert.Equal(t, 121, s.Step, "iteration 120 counts from 0")
		assert.Equal(t, 150, *s.TotalSteps, "NeMo prints max_steps-1")
		assert.InDelta(t, 3e-5, f64(t, s.LearningRate), 1e-15)
		assert.InDelta(t, 0.03146, f64(t, s.StepTimeSeconds), 1e-12)
		assert.InDelta(t, 1.233, f64(t, s.Loss), 1e-12)
		assert.Equal(t, 1, *s.GlobalBatchSize)
		assert.Equal(t, "4.106", s.Extra["val_loss"])
	})
	t.Run("torchtitan", func(t *testing.T) {
		log, err := ParseFile("testdata/real/torchtitan.log", "")
		require.NoError(t, err)
		assert.Equal(t, TorchTitan, log.Framework)
		s := log.Steps[0]
		assert.Equal(t, 20, s.Step)
		assert.InDelta(t, 4376, f64(t, s.TokensPerSecondPerGPU), 1e-9)
		assert.InDelta(t, 253.41, f64(t, s.TFLOPsPerGPU), 1e-9)
		assert.InDelta(t, 25.62, f64(t, s.MFUPercent), 1e-9)
		assert.InDelta(t, 48.87*1024, f64(t, s.MemMaxReservedMiB), 1e-9)
		assert.Nil(t, s.StepTimeSeconds, "TorchTitan prints no step time")
	})
}

func TestBuiltLogs(t *testing.T) {
	t.Run("megatron core: args, params, nan step, truncated last line", func(t *testing.T) {
		log, err := ParseFile("testdata/built/megatron-core-8gpu.log", "")
		require.NoError(t, err)
		pre := log.Preamble
		assert.Equal(t, int64(8030261248), *pre.ParameterCount)
		assert.True(t, pre.ParameterCountExact)
		assert.Equal(t, 8, *pre.WorldSize)
		assert.Equal(t, 4096, *pre.SeqLength)
		assert.Equal(t, 1, *pre.MicroBatchSize)
		assert.Equal(t, 64, *pre.GlobalBatchSize)
		assert.Equal(t, 1, *pre.TensorParallel)
		assert.Len(t, log.Steps, 39, "step 40 is cut mid-way")
		assert.Equal(t, 1, log.Stats.CutLines)
		nan := log.Steps[16]
		assert.Equal(t, 17, nan.Step)
		assert.Nil(t, nan.Loss)
		assert.ElementsMatch(t, []string{"loss", "grad_norm"}, nan.NonFinite)
		assert.Equal(t, 1, *nan.NaNIterations)
		assert.Equal(t, 2, log.Stats.NonFiniteValues)
		assert.Len(t, log.Memory, 8)
	})
	t.Run("torchrun labels: highest rank kept", func(t *testing.T) {
		log, err := ParseFile("testdata/built/megatron-torchrun-ranks.log", "")
		require.NoError(t, err)
		require.NotNil(t, log.Rank)
		assert.Equal(t, 7, *log.Rank)
		assert.Len(t, log.Steps, 12)
		assert.Equal(t, 3, log.Stats.OtherRankLines)
		assert.Equal(t, "2026-01-05 09:00:01.123457", log.Steps[0].Timestamp)
		for _, s := range log.Steps {
			assert.Less(t, *s.Loss, 99.0)
		}
	})
	t.Run("rival fsdp line", func(t *testing.T) {
		line := `[2026-11-22 10:00:00] iteration        5/     100 | consumed samples:          40 | elapsed time per iteration (ms): 812.3 | throughput per GPU (TFLOP/s/GPU): 0.1 | learning rate: 3.000000E-04 | global batch size:     8 | lm loss: 9.876543E+00 | loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |`
		log, err := Parse(strings.NewReader(line), "fsdp")
		require.NoError(t, err)
		assert.Equal(t, Megatron, log.Framework)
		s := log.Steps[0]
		assert.Equal(t, 5, s.Step)
		assert.InDelta(t, 0.8123, f64(t, s.StepTimeSeconds), 1e-12)
		assert.InDelta(t, 9.876543, f64(t, s.Loss), 1e-12)
		assert.InDelta(t, 3e-4, f64(t, s.LearningRate), 1e-15)
		assert.InDelta(t, 40, f64(t, s.ConsumedSamples), 0)
		assert.Equal(t, 8, *s.GlobalBatchSize)
	})
	t.Run("primus 2026: ansi, avg forms, memory last, echoed lines", func(t *testing.T) {
		log, err := ParseFile("testdata/built/primus-2026-ansi.log", "")
		require.NoError(t, err)
		assert.Equal(t, Primus, log.Framework)
		assert.Len(t, log.Steps, 25)
		assert.Equal(t, 25, log.Stats.DuplicateSteps)
		s := log.Steps[0]
		assert.InDelta(t, 31.0, f64(t, s.StepTimeSeconds), 1e-9)
		assert.InDelta(t, 203.7, f64(t, s.TFLOPsPerGPU), 1e-9)
		assert.InDelta(t, 4228.1, f64(t, s.TokensPerSecondPerGPU), 1e-9)
		assert.InDelta(t, 150.78*1024, f64(t, s.MemDeviceUsedMiB), 1e-6)
		assert.Equal(t, 8, *log.Preamble.WorldSize)
	})
	t.Run("primus legacy: mem usages first", func(t *testing.T) {
		log, err := ParseFile("testdata/built/primus-legacy-mem-first.log", "prim")
		require.NoError(t, err)
		assert.Equal(t, Primus, log.Framework)
		assert.InDelta(t, 0.8131, f64(t, log.Steps[0].MemUsedFraction), 1e-12)
		assert.Equal(t, 64, *log.Preamble.WorldSize)
	})
	t.Run("nemo: Lightning preamble, 1.2e+04, validation lines", func(t *testing.T) {
		log, err := ParseFile("testdata/built/nemo2-llama-8gpu.log", "")
		require.NoError(t, err)
		assert.Equal(t, 8, *log.Preamble.WorldSize)
		assert.Equal(t, int64(8e9), *log.Preamble.ParameterCount)
		assert.False(t, log.Preamble.ParameterCountExact)
		assert.Len(t, log.Steps, 30)
		assert.Equal(t, 3, log.Stats.DuplicateSteps, "the val_loss lines repeat their iteration")
		assert.InDelta(t, 14.2, f64(t, log.Steps[0].StepTimeSeconds), 1e-12)
		assert.Equal(t, 128, *log.Preamble.GlobalBatchSize)
	})
	t.Run("bridge: Step Time paired with the next iteration line", func(t *testing.T) {
		log, err := ParseFile("testdata/built/megatron-bridge-llama-8gpu.log", "")
		require.NoError(t, err)
		assert.Equal(t, MegatronBridge, log.Framework)
		require.Len(t, log.Steps, 15)
		s := log.Steps[0]
		assert.False(t, s.NumberInferred)
		assert.InDelta(t, 125.37, f64(t, s.StepTimeSeconds), 1e-9)
		assert.NotNil(t, s.TFLOPsPerGPU)
	})
	t.Run("bridge: Step Time lines alone", func(t *testing.T) {
		log, err := ParseFile("testdata/built/megatron-bridge-steptime-only.log", "")
		require.NoError(t, err)
		require.Len(t, log.Steps, 6)
		assert.True(t, log.Steps[5].NumberInferred)
		assert.Equal(t, 6, log.Steps[5].Step)
	})
	t.Run("torchtitan: prefix, colours, validation skipped", func(t *testing.T) {
		log, err := ParseFile("testdata/built/torchtitan-llama-8gpu.log", "titan")
		require.NoError(t, err)
		assert.Len(t, log.Steps, 7)
		assert.Equal(t, int64(8030261248), *log.Preamble.ParameterCount)
		assert.Equal(t, 8192, *log.Preamble.SeqLength)
		assert.Equal(t, 8, *log.Preamble.GlobalBatchSize)
		assert.Equal(t, 0, *log.Rank)
	})
}

func TestBadInput(t *testing.T) {
	t.Run("no steps", func(t *testing.T) {
		_, err := ParseFile("testdata/built/no-steps.log", "")
		require.Error(t, err)
		assert.True(t, errors.Is(err, ErrNoSteps))
		assert.Contains(t, err.Error(), "no training steps found in testdata/built/no-steps.log")
	})
	t.Run("wrong framework asked", func(t *testing.T) {
		_, err := ParseFile("testdata/real/nemo2-bionemo.log", "torchtitan")
		require.ErrorIs(t, err, ErrNoSteps)
		assert.Contains(t, err.Error(), "look like nemo")
	})
	t.Run("unknown framework", func(t *testing.T) {
		_, err := Parse(strings.NewReader(""), "jax")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `unknown framework "jax"`)
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := ParseFile("testdata/nope.log", "")
		require.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("cut lines of every family are skipped", func(t *testing.T) {
		in := strings.Join([]string{
			" iteration        1/      10 | consumed samples: 8 | elapsed time per iteration (ms): 100.0 | lm loss: 1.0E+00 |",
			" iteration        2/      10 | consumed samples: 16 | elapsed time per itera",
			"Training epoch 0, iteration 3/10 | lr: 3e-",
			"step:  4  loss:  1.0000  memory:  1.00GiB(1.00%)  tps: 1,0",
			"Step Time : 1.00s GPU utiliz",
			" iteration        5/      10 | consumed samples: 40 | elapsed time per iteration (ms): 100.0 | lm loss: 1.0E+00 |",
		}, "\n")
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Len(t, log.Steps, 2)
		assert.Equal(t, 4, log.Stats.CutLines)
	})
	t.Run("long line is bounded", func(t *testing.T) {
		in := strings.Repeat("x", 3*MaxLineBytes) + "\n iteration 1/ 2 | elapsed time per iteration (ms): 5.0 |\n"
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Equal(t, 1, log.Stats.LongLines)
		assert.Len(t, log.Steps, 1)
	})
	t.Run("carriage returns and CRLF", func(t *testing.T) {
		in := "progress 10%\rprogress 20%\r iteration 1/ 2 | elapsed time per iteration (ms): 5.0 |\r\n"
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Len(t, log.Steps, 1)
	})
}

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in     string
		want   float64
		finite bool
		ok     bool
	}{
		{"812.3", 812.3, true, true},
		{" 9.150E-06 ", 9.15e-6, true, true},
		{"13372.8/13364.7", 13372.8, true, true},
		{"496.3 (avg 496.1)", 496.3, true, true},
		{"4,376", 4376, true, true},
		{"1.2e+04", 12000, true, true},
		{"153.81GB", 153.81, true, true},
		{"60.09%", 60.09, true, true},
		{"48.87GiB", 48.87, true, true},
		{"9.09s", 9.09, true, true},
		{"nan", 0, false, true},
		{"-inf", 0, false, true},
		{"N/A", 0, false, false},
		{"", 0, false, false},
		{"abc", 0, false, false},
	} {
		got, finite, ok := number(c.in)
		assert.Equal(t, c.ok, ok, c.in)
		assert.Equal(t, c.finite, finite, c.in)
		if c.finite {
			assert.InDelta(t, c.want, got, 1e-12, c.in)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{"": "", "AUTO": "", "prim": Primus, "fsdp": Megatron, "mbridge": MegatronBridge, "nemo2": NeMo, "titan": TorchTitan} {
		got, err := Canonical(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
}

// Every framework of the framework table, by name and alias, reads as the family its runs print,
// except where the name is a log format's own ("nemo" stays NeMo 2's format for extract).
func TestCanonicalReadsTheFrameworkTable(t *testing.T) {
	for _, f := range core.Frameworks() {
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			fam, err := Canonical(n)
			require.NoError(t, err, "framework %s (name %q)", f.Name, n)
			want := f.LogFamily
			switch n {
			case "nemo", "nemo2", "nemo-2":
				want = NeMo
			}
			assert.Equal(t, want, fam, "framework %s (name %q)", f.Name, n)
		}
	}
	fam, err := Canonical("mega")
	require.NoError(t, err)
	assert.Equal(t, Megatron, fam)
}

// Megatron Core 0.19 warns in every run's log that GPTModel is deprecated for HybridModel: the line
// is known to extract, and a log with it reads exactly as the same log without it, for the Megatron
// family and for each framework that prints Megatron's lines.
func TestGPTModelDeprecationWarningIsKnown(t *testing.T) {
	data, err := os.ReadFile("testdata/built/megatron-core-0.19-gptmodel-deprecated.log")
	require.NoError(t, err)
	var kept []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(l, "GPTModel IS DEPRECATED") {
			kept = append(kept, l)
		}
	}
	require.Less(t, len(kept), len(strings.SplitAfter(string(data), "\n")), "the fixture holds the warning")
	for _, fw := range []string{"", "megatron", "primus", "megatron-bridge"} {
		with, err := Parse(strings.NewReader(string(data)), fw)
		require.NoError(t, err, fw)
		without, err := Parse(strings.NewReader(strings.Join(kept, "")), fw)
		require.NoError(t, err, fw)
		assert.Equal(t, without.Stats.Lines+1, with.Stats.Lines, "framework %q: the one line more is read", fw)
		with.Stats.Lines = without.Stats.Lines
		if !assert.True(t, reflect.DeepEqual(without, with), "framework %q: the warning changes what is read", fw) {
			continue
		}
		assert.Equal(t, 10, with.StepCount, "framework %q", fw)
	}
}
