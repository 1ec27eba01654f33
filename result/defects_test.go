package result

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeLog writes lines to a log file in a temporary folder.
func writeLog(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "train.log")
	require.NoError(t, os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return p
}

// primusLine is an iteration line as Primus 2026 prints it behind its loguru prefix.
func primusLine(n, total int, ms, tokens float64) string {
	return fmt.Sprintf("[20260110 08:01:%02d][rank-7/8][INFO ] [---------trainer.py:1432] : [2026-01-10 08:01:02] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f/%.1f | compute per GPU (TFLOP/s/GPU): 1.2 (avg 1.2)  | tokens/s/GPU inst/harmonic mean: %.1f/%.1f | learning rate: 2.000000E-05 | global batch size:     8 | lm loss: 1.010000E+01 | loss scale: 1.0 | grad norm: 0.900 | number of skipped iterations:   0 | number of nan iterations:   0 | hip mem usage/free/total/usage_ratio: 150.78GB/41.20GB/191.98GB/78.54%%",
		n%60, n, total, n*8, ms, ms, tokens, tokens)
}

func TestWarmupOutliers(t *testing.T) {
	t.Run("primus smoke run: two slow first steps", func(t *testing.T) {
		times := []float64{30500, 15600, 513.2, 512.8, 513.5, 512.9, 513.1, 513.0, 512.7, 513.3}
		lines := []string{"[20260110 08:01:02][rank-0/8][INFO ] [---------trainer.py:1432] : [Patch:megatron.training_log] ThroughputAverageExtension initialized with seq_len: 256 world_size: 8 log_avg_skip_iterations: 2 log_avg_reset_interval: 1000"}
		for i, ms := range times {
			lines = append(lines, primusLine(i+1, 10, ms, 8*256/8/(ms/1000)))
		}
		r, err := Extract(writeLog(t, lines...), envOf(map[string]string{"SL": "256", "PLATFORM": "amd", "GPU": "MI300X", "MODEL": "llama-proxy", "PRECISION": "bf16"}))
		require.NoError(t, err)
		pm := r.PerformanceMetrics
		assert.Equal(t, 2, r.WarmupStepsExcluded)
		assert.Equal(t, "median_step_time", pm.HeadlineStatistic)
		// 8 sequences × 256 tokens / 8 GPUs / 0.51305 s (median of the eight steady steps)
		assert.InDelta(t, 256/0.51305, pm.TokensPerSecondPerGPU, 0.01)
		assert.NotContains(t, names(r.Problems), "tokens_per_second_inconsistent")
	})
	t.Run("graph-capture step in the middle: the median holds, the mean is flagged", func(t *testing.T) {
		var lines []string
		for n := 1; n <= 12; n++ {
			ms := 1000.0 + float64(n%3)
			switch n {
			case 1:
				ms = 5000
			case 6:
				ms = 5100 // CUDA graph capture
			}
			lines = append(lines, fmt.Sprintf("Step Time : %.3fs GPU utilization: 1412.6MODEL_TFLOP/s/GPU", ms/1000),
				fmt.Sprintf(" [2025-11-02 10:00:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): 1412.6 | learning rate: 1.000000E-04 | global batch size:   256 | lm loss: 1.093504E+01 | loss scale: 1.0 | grad norm: 5.123 | number of skipped iterations:   0 | number of nan iterations:   0 |",
					n, n, 12, n*256, ms))
		}
		r, err := Extract(writeLog(t, lines...), envOf(map[string]string{"GPUS": "8", "SL": "8192", "PLATFORM": "nvd", "GPU": "B200", "MODEL": "llama", "PRECISION": "bf16"}))
		require.NoError(t, err)
		pm := r.PerformanceMetrics
		assert.Equal(t, 1, r.WarmupStepsExcluded)
		assert.InDelta(t, 1.001, pm.MedianStepTimeSeconds, 1e-9)
		assert.InDelta(t, 256*8192/8/1.001, pm.TokensPerSecondPerGPU, 1e-6)
		assert.Greater(t, pm.AvgStepTimeSeconds, 1.3)
		assert.Contains(t, names(r.Problems), "step_time_outliers")
	})
}

func TestLogFactsWin(t *testing.T) {
	t.Run("primus prefixed seq_length disagrees with SL", func(t *testing.T) {
		p := writeLog(t,
			"[20260110 08:00:01][rank-0/8][INFO ] [-------arguments.py:412] :   seq_length ...................................... 4096",
			primusLine(1, 3, 900, 4551), primusLine(2, 3, 900, 4551), primusLine(3, 3, 900, 4551))
		r, err := Extract(p, envOf(map[string]string{"SL": "2048", "PLATFORM": "amd"}))
		require.NoError(t, err)
		assert.Equal(t, 4096, *r.TrainingConfig.SequenceLength)
		assert.Contains(t, names(r.Problems), "sequence_length_mismatch")
	})
	t.Run("FRAMEWORK relabelling a Megatron log is a problem", func(t *testing.T) {
		r, err := Extract(logs+"built/megatron-core-8gpu.log", envOf(map[string]string{"FRAMEWORK": "primus"}))
		require.NoError(t, err)
		assert.Equal(t, "primus", r.Framework.Name)
		assert.Contains(t, names(r.Problems), "framework_mismatch")
	})
	t.Run("Megatron-DeepSpeed is named", func(t *testing.T) {
		line := " iteration       %d/     100 | consumed samples:          640 | consumed tokens:      1310720 | elapsed time per iteration (ms): 2071.2 | learning rate: 1.500E-04 | global batch size:    64 | lm loss: 7.801432E+00 | loss scale: 4096.0 | actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 30.900 | TFLOPs: 152.07 |"
		r, err := Extract(writeLog(t, fmt.Sprintf(line, 10), fmt.Sprintf(line, 20)), envOf(map[string]string{"GPUS": "8"}))
		require.NoError(t, err)
		assert.Equal(t, "megatron-deepspeed", r.Framework.Name)
		assert.Equal(t, 2048, *r.TrainingConfig.SequenceLength)
	})
}

func TestNeMoFields(t *testing.T) {
	line := "Training epoch 0, iteration %d/99 | lr: 3e-05 | global_batch_size: 128 | global_step: %d | reduced_train_loss: 6.512 | train_step_timing in s: 6.25 | consumed_samples: %d | TFLOPS_per_GPU: 1.25e+03 | tokens_per_sec_per_gpu: 2.62e+03 | max_memory_reserved: 6.5e+10 | max_memory_allocated: 5.9e+10"
	var lines []string
	for n := 40; n < 46; n++ {
		lines = append(lines, fmt.Sprintf(line, n, n, (n+1)*128))
	}
	r, err := Extract(writeLog(t, lines...), envOf(map[string]string{"GPUS": "64", "SL": "8192", "PLATFORM": "nvd", "GPU": "H100 SXM", "MODEL": "llama", "PRECISION": "bf16"}))
	require.NoError(t, err)
	assert.Equal(t, 100, *r.TrainingConfig.TrainIters)
	pm := r.PerformanceMetrics
	require.NotNil(t, pm.FrameworkReportedTokensPerSecondPerGPU)
	assert.InDelta(t, 2620, *pm.FrameworkReportedTokensPerSecondPerGPU, 1e-9)
	require.NotNil(t, pm.FrameworkTokensPerSecondGapPercent)
	// 128 × 8192 / 6.25 s / 64 GPUs = 2621.44 tokens/s/GPU
	assert.InDelta(t, 100*(2620-2621.44)/2621.44, *pm.FrameworkTokensPerSecondGapPercent, 1e-9)
	require.NotNil(t, r.MemoryMetrics.PeakReservedMiB)
	assert.InDelta(t, 6.5e10/(1<<20), *r.MemoryMetrics.PeakReservedMiB, 1e-6)
}

func TestFP16(t *testing.T) {
	r, err := Extract(logs+"real/megatron-2024-issue756.log", envOf(map[string]string{"PRECISION": "fp16", "GPUS": "8", "SL": "4096", "GPU": "H100 SXM", "MODEL": "llama", "PLATFORM": "nvd"}))
	require.NoError(t, err)
	assert.Equal(t, "fp16", r.TrainingConfig.Precision)
	assert.InDelta(t, 989.4, *r.GPUInfo.PeakTFLOPsDense, 1e-9)
	r, err = Extract(logs+"built/primus-2026-ansi.log", envOf(map[string]string{"PRECISION": "FP16", "GPU": "MI300X", "MODEL": "llama", "PLATFORM": "amd"}))
	require.NoError(t, err)
	assert.InDelta(t, 1307.4, *r.GPUInfo.PeakTFLOPsDense, 1e-9)
}

func TestMoEParameters(t *testing.T) {
	line := " [2025-06-01 10:00:0%d] iteration        %d/      10 | consumed samples:          %d | elapsed time per iteration (ms): 2500.0 | learning rate: 1.000000E-04 | global batch size:   256 | lm loss: 1.093504E+01 | loss scale: 1.0 | grad norm: 5.123 | number of skipped iterations:   0 | number of nan iterations:   0 |"
	p := writeLog(t,
		"  expert_model_parallel_size ...................... 8",
		" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 3228954112",
		"Total number of parameters in billions: 15.82",
		fmt.Sprintf(line, 1, 1, 256), fmt.Sprintf(line, 2, 2, 512))
	r, err := Extract(p, envOf(map[string]string{"GPUS": "8", "SL": "4096"}))
	require.NoError(t, err)
	assert.Equal(t, int64(15_820_000_000), *r.Model.ParameterCount)
	assert.False(t, *r.Model.ParameterCountExact)
}

// TestFP16FromLog: a Megatron fp16 run says so in its arguments; without PRECISION
// the result is fp16 (not an assumed bf16), and a PRECISION that disagrees is a problem.
func TestFP16FromLog(t *testing.T) {
	line := " iteration        %d/      10 | consumed samples:          %d | elapsed time per iteration (ms): 2500.0 | learning rate: 1.000000E-04 | global batch size:   256 | lm loss: 1.093504E+01 | loss scale: 65536.0 | grad norm: 5.123 | number of skipped iterations:   0 | number of nan iterations:   0 |"
	p := writeLog(t,
		"  bf16 ............................................ False",
		"  fp16 ............................................ True",
		"  fp8 ............................................. None",
		fmt.Sprintf(line, 1, 256), fmt.Sprintf(line, 2, 512))
	r, err := Extract(p, envOf(map[string]string{"GPUS": "8", "SL": "2048", "GPU": "MI300X", "PLATFORM": "amd"}))
	require.NoError(t, err)
	assert.Equal(t, "fp16", r.TrainingConfig.Precision)
	assert.False(t, r.TrainingConfig.PrecisionAssumed)
	assert.InDelta(t, 1307.4, *r.GPUInfo.PeakTFLOPsDense, 1e-9)
	r, err = Extract(p, envOf(map[string]string{"GPUS": "8", "SL": "2048", "PRECISION": "bf16"}))
	require.NoError(t, err)
	assert.Equal(t, "fp16", r.TrainingConfig.Precision)
	assert.Contains(t, names(r.Problems), "precision_mismatch")
}

// megatronLines are Megatron-LM iteration lines with the given step times (ms).
func megatronLines(ms ...string) []string {
	var out []string
	for i, v := range ms {
		out = append(out, fmt.Sprintf(" iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %s | learning rate: 1.000000E-04 | global batch size:     8 | lm loss: 1.010000E+01 | loss scale: 1.0 | grad norm: 0.900 | number of skipped iterations:   0 | number of nan iterations:   0 |",
			i+1, len(ms), (i+1)*8, v))
	}
	return out
}

func TestAbsurdHeadline(t *testing.T) {
	// 1e-300 ms is a finite step time, but 1/step time overflows to +Inf
	path := writeLog(t, megatronLines("1e-300", "1e-300", "1e-300", "1e-300")...)
	_, err := Extract(path, envOf(map[string]string{"GPUS": "8", "SL": "4096"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "step time")
}

func TestFactBounds(t *testing.T) {
	path := writeLog(t, megatronLines("1000", "1000", "1000")...)
	for _, c := range []struct{ name, gbs, sl, gpus, field string }{
		{"tokens per step wraps int64", "9223372036854775", "8192", "8", "GBS"},
		{"huge sequence length", "", "1099511627776", "8", "SL"},
		{"huge GPU count", "", "4096", "1099511627776", "GPUS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Extract(path, envOf(map[string]string{"GBS": c.gbs, "SL": c.sl, "GPUS": c.gpus, "FRAMEWORK": "megatron"}))
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), c.field)
		})
	}
}
