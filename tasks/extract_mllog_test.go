package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extract reads AMD's MLPerf MLLOG result file (MI355X, llama31_8b) into a result: the batch
// size and sequence length from its events, the step times from its blocks; the GPU count,
// which MLLOG does not print, from GPUS. Without GPUS it asks for it.
func TestExtractMLLOG(t *testing.T) {
	const log = "../frameworks/logparse/testdata/real/mlperf-amd-mi355x-llama31-8b.log"
	t.Run("asks for the GPU count", func(t *testing.T) {
		t.Setenv("GPUS", "")
		var out, errOut bytes.Buffer
		err := ExtractTarget(log, false, &out, &errOut)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "GPUS")
	})
	t.Run("reads it with GPUS", func(t *testing.T) {
		t.Setenv("GPUS", "8")
		t.Setenv("MODEL", "llama")
		var out, errOut bytes.Buffer
		require.NoError(t, ExtractTarget(log, true, &out, &errOut), errOut.String())
		var r struct {
			Framework      struct{ Name string }
			TrainingConfig struct {
				GlobalBatchSize int `json:"global_batch_size"`
				SequenceLength  int `json:"sequence_length"`
				NumGPUs         int `json:"num_gpus"`
			} `json:"training_config"`
			PerformanceMetrics struct {
				TokensPerSecondPerGPU float64 `json:"tokens_per_second_per_gpu"`
			} `json:"performance_metrics"`
			StepNumbers []int `json:"step_numbers"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &r))
		t.Log(errOut.String())
		assert.Equal(t, "mlperf", r.Framework.Name)
		assert.Equal(t, 32, r.TrainingConfig.GlobalBatchSize)
		assert.Equal(t, 8192, r.TrainingConfig.SequenceLength)
		assert.Equal(t, 8, r.TrainingConfig.NumGPUs)
		assert.Equal(t, []int{384, 768, 1152, 1536}, r.StepNumbers)
		// Against the log's own figure: the median block (the third) has tracked_stats
		// throughput 30.61936200299813 samples/s over the 8 GPUs, × SL 8192 / 8.
		assert.InEpsilon(t, 30.61936200299813*8192/8, r.PerformanceMetrics.TokensPerSecondPerGPU, 1e-3)
	})
}

// The five MLPerf v5.1 llama31_8b logs in NVIDIA's NeMo convention extract through the target,
// each to within 0.1% of the step time it prints itself for its first block (tracked_stats
// train_step_time), with every evaluation as samples seen, loss and clock.
func TestExtractMLLOGNVIDIAConvention(t *testing.T) {
	for _, c := range []struct {
		name      string
		gpus      string
		ownStep   float64 // the log's train_step_time for block 1
		firstEval [2]float64
	}{
		{"nvidia-gb300-x8", "8", 0.3452601666731425, [2]float64{12288, 5.287302017211914}},
		{"nvidia-gb200-x72", "72", 0.1666299422865519, [2]float64{12312, 5.819808483123779}},
		{"dell-b200-x8", "8", 0.44858124391926896, [2]float64{12288, 5.206908226013184}},
		{"ufl-b200-x16", "16", 0.5657600412018459, [2]float64{24576, 4.943026542663574}},
		{"cisco-h100-x128", "128", 0.5181867397395763, [2]float64{12288, 6.595298767089844}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GPUS", c.gpus)
			t.Setenv("MODEL", "llama")
			var out, errOut bytes.Buffer
			log := "../frameworks/logparse/testdata/real/mlperf-" + c.name + "-llama31-8b.log"
			require.NoError(t, ExtractTarget(log, false, &out, &errOut), errOut.String())
			var r struct {
				StepTimes   []float64 `json:"step_times"`
				Evaluations []struct {
					SamplesSeen float64  `json:"samples_seen"`
					TokensSeen  float64  `json:"tokens_seen"`
					Loss        float64  `json:"loss"`
					WallSeconds *float64 `json:"wall_seconds"`
				} `json:"evaluations"`
				MLPerf struct {
					Status     string   `json:"status"`
					RunMinutes *float64 `json:"run_minutes"`
				} `json:"mlperf"`
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &r))
			require.NotEmpty(t, r.StepTimes)
			assert.InEpsilon(t, c.ownStep, r.StepTimes[0], 1e-3)
			require.NotEmpty(t, r.Evaluations)
			assert.Equal(t, c.firstEval[0], r.Evaluations[0].SamplesSeen)
			assert.Equal(t, c.firstEval[0]*8192, r.Evaluations[0].TokensSeen)
			assert.Equal(t, c.firstEval[1], r.Evaluations[0].Loss)
			require.NotNil(t, r.Evaluations[0].WallSeconds)
			assert.Equal(t, "success", r.MLPerf.Status)
			require.NotNil(t, r.MLPerf.RunMinutes)
			assert.Less(t, r.Evaluations[len(r.Evaluations)-1].Loss, 3.3, "the run stops at the target")
		})
	}
}

// compare measures time to a target held-out loss from extracted MLPerf logs: TARGET_LOSS 3.3
// (MLPerf's own target), every run reaching it at its last evaluation, the time to it by the
// log's clock. A misspelt TARGET_LOSS stops the task with what to write instead.
func TestCompareTimeToTargetFromMLPerfLogs(t *testing.T) {
	w, _ := newWorkspace(t, "TARGET_LOSS=3.3\n")
	out := w.path("OUTPUT_DIR")
	require.NoError(t, os.MkdirAll(out, 0o755))
	// The GPU and precision MLLOG does not print, as each submission's system description and
	// configuration give them (the University of Florida's precision is not stated).
	for _, c := range []struct{ name, gpus, gpu, precision string }{
		{"nvidia-gb300-x8", "8", "GB300", "fp4"}, {"ufl-b200-x16", "16", "B200", ""}, {"cisco-h100-x128", "128", "H100 SXM", "fp8"},
	} {
		t.Setenv("GPUS", c.gpus)
		t.Setenv("GPU", c.gpu)
		t.Setenv("PRECISION", c.precision)
		t.Setenv("MODEL", "llama")
		var res, errOut bytes.Buffer
		require.NoError(t, ExtractTarget("../frameworks/logparse/testdata/real/mlperf-"+c.name+"-llama31-8b.log", false, &res, &errOut), errOut.String())
		require.NoError(t, os.WriteFile(filepath.Join(out, c.name+".json"), res.Bytes(), 0o644))
	}
	ct, err := w.compareTask(nil)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), ct))
	report, err := os.ReadFile(ct.Outputs[0].Path)
	require.NoError(t, err)
	md := string(report)
	assert.Contains(t, md, "### Held-out loss and time to target")
	assert.Contains(t, md, "Target held-out loss 3.3 nats per token (TARGET\\_LOSS)")
	// GB300 x8: evaluations at 12,288 samples (5.2873) and 184,320 (3.2839), the clock at each
	// eval_accuracy since run_start (272.263 s and 4132.689 s); linear in loss:
	// f = (5.287302017211914-3.3)/(5.287302017211914-3.2839479446411133) = 0.991987...
	// samples 12288 + f*(184320-12288) = 182,941.6; minutes (272.263 + f*(4132.689-272.263))/60 = 68.36.
	assert.Contains(t, md, "182,942 (single run)")
	assert.Contains(t, md, "68.4 min (single run)")
	// Held against MLPerf's published scores of the same GPU, count and precision: result_0's
	// run_stop − run_start, scaled by the submission's factor as its score is, over the score.
	// GB300 (factor 1): 68.8782 / 67.373 = 1.022; Cisco H100 x128 (factor 1.0106544901065448):
	// 31.8541 × 1.01065 = 32.19 / 32.896 = 0.979. The University of Florida's states no precision.
	assert.Contains(t, md, "÷ MLPerf v5.1 NVIDIA Theia (1x NVIDIA GB300 NVL72), 8× GB300 fp4: measured 68.88 min (1 run; the score is the mean of 8 of its 10 runs, the fastest and slowest dropped) ÷ published 67.373 min = 1.022×")
	assert.Contains(t, md, "÷ MLPerf v5.1 Cisco hpf\\_n16, 128× H100 SXM fp8: measured 32.19 min (1 run, times the submission's scaling factor 1.010654 as its score is;")
	assert.Contains(t, md, "= 0.979×")
	assert.NotContains(t, md, "÷ MLPerf v5.1 University-of-Florida")
	html, err := os.ReadFile(ct.Outputs[3].Path)
	require.NoError(t, err)
	assert.Contains(t, string(html), `aria-label="held-out loss curves"`)

	w2, _ := newWorkspace(t, "TARGET_LOSS=3,3\n")
	ct2, err := w2.compareTask(nil)
	require.NoError(t, err)
	err = w2.runner.Run(context.Background(), ct2)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `TARGET_LOSS="3,3"`)
}
