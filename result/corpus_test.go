package result

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusExpected is one entry of testdata/corpus/expected.json, written by
// oracle.py (an independent reading of the real-log excerpts in Python).
type corpusExpected struct {
	Family          string            `json:"family"`
	Env             map[string]string `json:"env"`
	Steps           []int             `json:"steps"`
	Losses          []float64         `json:"losses"`
	StepTimes       []float64         `json:"step_times"`
	TrainIters      *int              `json:"train_iters"`
	GBS             int               `json:"global_batch_size"`
	SL              int               `json:"sequence_length"`
	GPUs            int               `json:"num_gpus"`
	Warmup          int               `json:"warmup"`
	Median          float64           `json:"median_step_time"`
	Mean            float64           `json:"mean_step_time"`
	TokensPerSecGPU float64           `json:"tokens_per_second_per_gpu"`
}

// TestRealLogCorpus extracts every real-log excerpt (one per framework generation)
// and compares with the oracle's numbers.
func TestRealLogCorpus(t *testing.T) {
	data, err := os.ReadFile(logs + "corpus/expected.json")
	require.NoError(t, err)
	var want map[string]corpusExpected
	require.NoError(t, json.Unmarshal(data, &want))
	require.GreaterOrEqual(t, len(want), 10)
	for path, w := range want {
		t.Run(path, func(t *testing.T) {
			r, err := Extract(logs+path, envOf(w.Env))
			require.NoError(t, err)
			assert.Equal(t, w.Family, r.Framework.Name)
			assert.Equal(t, w.Steps, r.StepNumbers)
			require.Len(t, r.LossValues, len(w.Losses))
			for i, l := range w.Losses {
				require.NotNil(t, r.LossValues[i])
				assert.InDelta(t, l, *r.LossValues[i], 1e-9, "loss of step %d", w.Steps[i])
			}
			if r.PerformanceMetrics.StepTimeSource == "log" {
				for i, s := range w.StepTimes {
					require.NotNil(t, r.StepTimes[i])
					assert.InDelta(t, s, *r.StepTimes[i], 1e-9)
				}
			}
			assert.Equal(t, w.TrainIters, r.TrainingConfig.TrainIters)
			assert.Equal(t, w.GBS, *r.TrainingConfig.GlobalBatchSize)
			assert.Equal(t, w.SL, *r.TrainingConfig.SequenceLength)
			assert.Equal(t, w.GPUs, *r.TrainingConfig.NumGPUs)
			assert.Equal(t, w.Warmup, r.WarmupStepsExcluded)
			pm := r.PerformanceMetrics
			assert.InDelta(t, w.Median, pm.MedianStepTimeSeconds, 1e-9*w.Median)
			assert.InDelta(t, w.Mean, pm.AvgStepTimeSeconds, 1e-9*w.Mean)
			assert.InDelta(t, w.TokensPerSecGPU, pm.TokensPerSecondPerGPU, 1e-9*w.TokensPerSecGPU)
		})
	}
}
