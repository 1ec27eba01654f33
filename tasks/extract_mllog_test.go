package tasks

import (
	"bytes"
	"encoding/json"
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
