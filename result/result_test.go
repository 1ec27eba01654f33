package result

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/hw"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.json")

const logs = "../frameworks/logparse/testdata/"

// cases gives each log fixture the facts a user would pass to extract. The facts for
// the real lines are what their sources state (model, GPU) or, where silent, test
// inputs; the built logs' facts match how they were generated.
var cases = []struct {
	log string
	env map[string]string
}{
	{"real/megatron-2024-issue756.log", map[string]string{"GPUS": "8", "SL": "4096", "PLATFORM": "nvd", "GPU": "H100 SXM"}},
	{"real/megatron-old-no-timestamp.log", map[string]string{"GPUS": "128", "SL": "2048"}},
	{"real/primus-legacy-2025.log", map[string]string{"SL": "4096", "PLATFORM": "amd", "GPU": "MI325X", "MODEL": "llama"}},
	{"real/megatron-bridge-dgxc-h100.log", map[string]string{"GPUS": "8", "SL": "8192", "PLATFORM": "nvd", "GPU": "H100 SXM", "MODEL": "llama", "PRECISION": "bf16"}},
	{"real/nemo2-bionemo.log", map[string]string{"GPUS": "1", "SL": "1024", "PLATFORM": "nvd"}},
	{"real/torchtitan.log", map[string]string{"GPUS": "8", "SL": "8192", "GBS": "8", "PLATFORM": "nvd", "GPU": "H100 SXM", "MODEL": "llama", "PRECISION": "bf16"}},
	{"built/megatron-core-8gpu.log", map[string]string{"PLATFORM": "nvd", "GPU": "H100 SXM", "MODEL": "llama", "PRECISION": "bf16"}},
	{"built/megatron-torchrun-ranks.log", map[string]string{"GPUS": "8", "SL": "2048", "MODEL": "llama-proxy", "PLATFORM": "nvd", "GPU": "NVIDIA H100 80GB HBM3"}},
	{"built/rival-fsdp.log", map[string]string{"GPUS": "1", "SL": "128", "MODEL": "qwen-proxy", "PLATFORM": "cpu", "PRECISION": "bf16"}},
	{"built/primus-2026-ansi.log", map[string]string{"SL": "8192", "MODEL": "llama", "PLATFORM": "amd", "GPU": "MI300X", "PRECISION": "bf16"}},
	{"built/primus-legacy-mem-first.log", map[string]string{"SL": "4096", "MODEL": "llama", "PLATFORM": "amd", "GPU": "MI325X", "PRECISION": "bf16", "FRAMEWORK": "prim"}},
	{"built/nemo2-llama-8gpu.log", map[string]string{"SL": "8192", "MODEL": "llama", "PLATFORM": "nvd", "GPU": "H100 SXM", "PRECISION": "bf16"}},
	{"built/megatron-bridge-llama-8gpu.log", map[string]string{"GPUS": "8", "SL": "8192", "GBS": "128", "MODEL": "llama", "PLATFORM": "nvd", "GPU": "H100 SXM", "PRECISION": "bf16"}},
	{"built/megatron-bridge-steptime-only.log", map[string]string{"GPUS": "64", "SL": "8192", "GBS": "512", "MODEL": "llama", "PLATFORM": "nvd", "GPU": "B200", "PRECISION": "fp8"}},
	{"built/torchtitan-llama-8gpu.log", map[string]string{"GPUS": "8", "MODEL": "llama", "PLATFORM": "nvd", "GPU": "H100 SXM", "PRECISION": "bf16"}},
	// MLPerf Training's Llama 3.1 8B rows on Blackwell Ultra train in FP4: MFU against the FP4 peak.
	{"built/megatron-core-0.19-gptmodel-deprecated.log", map[string]string{"SL": "8192", "MODEL": "llama", "PLATFORM": "nvd", "GPU": "GB300", "PRECISION": "fp4"}},
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestGoldenResults extracts every fixture, validates it against the schema and
// compares it with its golden file (-update rewrites them).
func TestGoldenResults(t *testing.T) {
	for _, c := range cases {
		t.Run(c.log, func(t *testing.T) {
			r, err := Extract(logs+c.log, envOf(c.env))
			require.NoError(t, err)
			r.Log.Source = c.log
			got, err := json.MarshalIndent(r, "", "  ")
			require.NoError(t, err)
			require.NoError(t, Validate(got))
			golden := filepath.Join("testdata", "golden", strings.ReplaceAll(strings.TrimSuffix(c.log, ".log"), "/", "-")+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -update to create it")
			require.NoError(t, Validate(want), "the golden file itself must validate")
			assert.JSONEq(t, string(want), string(got))
		})
	}
}

func names(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestNumbers(t *testing.T) {
	t.Run("tokens/s from GBS, SL, step time; MFU from the causal formula", func(t *testing.T) {
		r, err := Extract(logs+"built/megatron-core-8gpu.log", envOf(map[string]string{"GPU": "H100 SXM", "MODEL": "llama", "PRECISION": "bf16", "PLATFORM": "nvd"}))
		require.NoError(t, err)
		pm := r.PerformanceMetrics
		assert.Equal(t, 1, r.WarmupStepsExcluded, "step 1 takes 14.9 s, the others about 5.2 s")
		assert.Equal(t, int64(64*4096), pm.TokensPerStep)
		assert.Equal(t, "median_step_time", pm.HeadlineStatistic)
		assert.InDelta(t, float64(64*4096)/pm.MedianStepTimeSeconds, pm.TokensPerSecond, 1e-6)
		assert.InDelta(t, float64(64*4096)/pm.AvgStepTimeSeconds/8, pm.TokensPerSecondPerGPUMean, 1e-6)
		assert.InDelta(t, pm.TokensPerSecond/8, pm.TokensPerSecondPerGPU, 1e-9)
		require.NotNil(t, pm.TFLOPsPerGPU)
		assert.InDelta(t, *pm.ModelFLOPsPerToken*pm.TokensPerSecondPerGPU/1e12, *pm.TFLOPsPerGPU, 1e-9)
		assert.InDelta(t, 100**pm.TFLOPsPerGPU/989.4, *pm.MFUPercent, 1e-9)
		assert.LessOrEqual(t, pm.P10StepTimeSeconds, pm.MedianStepTimeSeconds)
		assert.LessOrEqual(t, pm.MedianStepTimeSeconds, pm.P90StepTimeSeconds)
		assert.Nil(t, r.LossValues[16], "the nan loss is null")
		assert.Contains(t, names(r.Problems), "nan_iterations")
		assert.Equal(t, 8, *r.TrainingConfig.NumGPUs, "from the log's world size")
		assert.InDelta(t, 61487.98583984375, *r.MemoryMetrics.PeakAllocatedMiB, 1e-9)
	})
	t.Run("warm-up from the data: the first step, then leading slow ones, never all", func(t *testing.T) {
		assert.Equal(t, 1, warmupFound([]float64{5, 1, 1, 1, 1}, 1, 5))
		assert.Equal(t, 3, warmupFound([]float64{30.5, 15.6, 0.9, 0.5, 0.5}, 0.5, 5))
		assert.Equal(t, 0, warmupFound([]float64{1}, 1, 1))
		assert.Equal(t, 1, warmupFound([]float64{9, 9}, 9, 2))
	})
	t.Run("torchtitan step time derived from tps", func(t *testing.T) {
		r, err := Extract(logs+"built/torchtitan-llama-8gpu.log", envOf(map[string]string{"GPUS": "8", "MODEL": "llama", "GPU": "H100 SXM"}))
		require.NoError(t, err)
		assert.Equal(t, "derived_from_framework_tokens_per_second", r.PerformanceMetrics.StepTimeSource)
		assert.Contains(t, names(r.Problems), "step_time_derived")
		assert.Contains(t, names(r.Problems), "precision_assumed")
	})
	t.Run("implausible facts are flagged", func(t *testing.T) {
		r, err := Extract(logs+"built/primus-legacy-mem-first.log", envOf(map[string]string{"SL": "65536", "MODEL": "llama", "GPU": "MI325X", "GPUS": "8"}))
		require.NoError(t, err)
		ps := names(r.Problems)
		assert.Contains(t, ps, "tokens_per_second_inconsistent")
		assert.Contains(t, ps, "gpu_count_mismatch", "the log says 64 GPUs")
		r, err = Extract(logs+"real/torchtitan.log", envOf(map[string]string{"GPUS": "8", "SL": "8192", "GBS": "8", "MODEL": "llama", "GPU": "H100 SXM"}))
		require.NoError(t, err)
		assert.NotContains(t, names(r.Problems), "mfu_above_100_percent")
		r, err = Extract(logs+"built/rival-fsdp.log", envOf(map[string]string{"GPUS": "1", "SL": "1000000", "MODEL": "llama", "GPU": "H100 SXM"}))
		require.NoError(t, err)
		assert.Contains(t, names(r.Problems), "mfu_above_100_percent")
	})
	t.Run("host facts", func(t *testing.T) {
		log, err := logparse.ParseFile(logs+"real/megatron-bridge-dgxc-h100.log", "")
		require.NoError(t, err)
		host := &hw.Host{Platform: "nvd", GPUs: make([]hw.GPU, 8)}
		for i := range host.GPUs {
			host.GPUs[i] = hw.GPU{Index: i, Vendor: hw.VendorNVIDIA, Name: "NVIDIA H100 80GB HBM3", Model: "H100 SXM", MemoryMiB: 81559}
		}
		r, err := Build(log, Facts{Host: host, SeqLen: 8192, Model: "llama", FrameworkRequested: "prim", Framework: "nemo"})
		require.NoError(t, err)
		assert.Equal(t, "nemo", r.Framework.Name)
		assert.Equal(t, "prim", *r.Framework.Requested)
		assert.Equal(t, 8, *r.GPUInfo.DeviceCount)
		assert.Equal(t, int64(81559), *r.GPUInfo.MemoryPerGPUMiB)
		assert.Equal(t, host.Fingerprint(), *r.HardwareFingerprint)
		assert.Equal(t, "nvd", *r.Platform)
	})
}

func TestMissingFacts(t *testing.T) {
	for _, c := range []struct {
		log  string
		env  map[string]string
		want string
	}{
		{"real/torchtitan.log", map[string]string{"GPUS": "8", "SL": "8192"}, "tokens/s needs the global batch size: the log does not print it; set GBS="},
		{"real/nemo2-bionemo.log", map[string]string{"GPUS": "1"}, "set SL="},
		{"real/nemo2-bionemo.log", map[string]string{"SL": "1024"}, "set GPUS="},
		// Every missing fact in one message, not one per run of extract.
		{"real/nemo2-bionemo.log", nil, "tokens/s needs the sequence length and the GPU count: the log does not print them; set SL=<tokens per sequence, e.g. 2048> GPUS=<GPUs in the run, e.g. 8>"},
		{"real/torchtitan.log", map[string]string{"SL": "8192"}, "needs the global batch size and the GPU count"},
		{"real/nemo2-bionemo.log", map[string]string{"SL": "x"}, `SL="x" is not a positive integer`},
		{"real/nemo2-bionemo.log", map[string]string{"SL": "1", "GPUS": "1", "PRECISION": "fp2"}, "use bf16, fp16, fp8 or fp4"},
		{"built/no-steps.log", nil, "no training steps found in ../frameworks/logparse/testdata/built/no-steps.log"},
		{"real/nemo2-bionemo.log", map[string]string{"SL": "1", "GPUS": "1", "PLATFORM": "tpu"}, "set PLATFORM"},
	} {
		_, err := Extract(logs+c.log, envOf(c.env))
		require.Error(t, err, c.log)
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestValidateRejects(t *testing.T) {
	r, err := Extract(logs+"built/rival-fsdp.log", envOf(map[string]string{"GPUS": "1", "SL": "128"}))
	require.NoError(t, err)
	good, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, Validate(good))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(good, &doc))
	for name, mutate := range map[string]func(map[string]any){
		"number as string": func(d map[string]any) {
			d["performance_metrics"].(map[string]any)["tokens_per_second"] = "12"
		},
		"fake zero GPUs": func(d map[string]any) { d["training_config"].(map[string]any)["num_gpus"] = 0 },
		"missing field":  func(d map[string]any) { delete(d, "step_times") },
		"unknown field":  func(d map[string]any) { d["tokens"] = 1 },
		"bad platform":   func(d map[string]any) { d["platform"] = "tpu" },
	} {
		var d map[string]any
		require.NoError(t, json.Unmarshal(good, &d))
		mutate(d)
		b, _ := json.Marshal(d)
		assert.Error(t, Validate(b), name)
	}
	assert.Error(t, Validate([]byte("{")))
}
