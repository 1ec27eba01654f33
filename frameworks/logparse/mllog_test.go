package logparse

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AMD's MLPerf Training v5.1 llama31_8b log (MI355X): four blocks of 12,288 samples at
// GBS 32. Each block is one step, numbered by the iteration it ends at, with the block's
// wall time over its 384 iterations; expected values by hand from the events' time_ms:
// (1759966614209 - 1759966206549) ms / 384 = 1.06161458... s.
func TestMLLOGRealLines(t *testing.T) {
	log, err := ParseFile("testdata/real/mlperf-amd-mi355x-llama31-8b.log", "")
	require.NoError(t, err)
	assert.Equal(t, MLPerf, log.Framework)
	require.Equal(t, 4, log.StepCount)
	want := []struct {
		step int
		secs float64
	}{
		{384, 407.660 / 384}, {768, 401.421 / 384}, {1152, 401.420 / 384}, {1536, 401.264 / 384},
	}
	for i, w := range want {
		assert.Equal(t, w.step, log.Steps[i].Step)
		assert.InDelta(t, w.secs, f64(t, log.Steps[i].StepTimeSeconds), 1e-9)
		assert.Nil(t, log.Steps[i].Loss, "eval_accuracy is not the training loss")
	}
	require.NotNil(t, log.Preamble.GlobalBatchSize)
	assert.Equal(t, 32, *log.Preamble.GlobalBatchSize)
	require.NotNil(t, log.Preamble.SeqLength)
	assert.Equal(t, 8192, *log.Preamble.SeqLength)
}

// A log of MLLOG events without what blocks need is refused with exactly what is missing.
func TestMLLOGRefusalSaysWhatIsMissing(t *testing.T) {
	for _, tc := range []struct{ name, log, want string }{
		{"no batch size", `:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_START", "key": "block_start", "value": null, "metadata": {"samples_count": 0}}
:::MLLOG {"namespace": "", "time_ms": 2000, "event_type": "INTERVAL_END", "key": "block_stop", "value": null, "metadata": {"samples_count": 64}}
`, "number their samples but none gives global_batch_size"},
		{"no blocks", `:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "global_batch_size", "value": 32, "metadata": {}}
:::MLLOG {"namespace": "", "time_ms": 2, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}
`, "no block_start/block_stop pair was found"},
		{"not JSON", ":::MLLOG {\"key\": \"global_batch_size\", \"value\": 32\n", "1 of them are not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.log), "")
			require.ErrorIs(t, err, ErrNoSteps)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "block_start/block_stop pairs numbered by metadata.step or metadata.samples_count")
		})
	}
}

// Six real MLPerf Training v5.1 llama31_8b result logs, in all three block conventions, read
// against the numbers testdata/real/mlperf_expected.py (stdlib Python, not Rival's code) computes
// from the same files (python3 testdata/real/mlperf_expected.py > testdata/real/mlperf-expected.json).
// Each block's step time is within 0.1% of the train_step_time the log itself prints for that
// block, where it prints one.
func TestMLLOGConventions(t *testing.T) {
	raw, err := os.ReadFile("testdata/real/mlperf-expected.json")
	require.NoError(t, err)
	var want map[string]struct {
		GBS        int     `json:"global_batch_size"`
		Convention string  `json:"convention"`
		Status     string  `json:"run_status"`
		Minutes    float64 `json:"run_minutes"`
		Blocks     []struct {
			Last    float64   `json:"last_sample"`
			Mean    float64   `json:"mean_step_time_s"`
			Summary []float64 `json:"block_summary_train_step_time"`
		} `json:"blocks"`
		Evals []struct {
			Samples float64 `json:"samples_count"`
			Value   float64 `json:"value"`
		} `json:"evals"`
	}
	require.NoError(t, json.Unmarshal(raw, &want))
	require.Len(t, want, 6)
	convention := map[string]string{"length+step": "step", "start-offset": "start-offset", "cumulative": "cumulative"}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			log, err := ParseFile("testdata/real/mlperf-"+name+"-llama31-8b.log", "")
			require.NoError(t, err)
			assert.Equal(t, MLPerf, log.Framework)
			require.NotNil(t, log.MLPerf)
			assert.Equal(t, "llama31_8b", log.MLPerf.Benchmark)
			assert.Equal(t, convention[w.Convention], log.MLPerf.BlockConvention)
			require.NotNil(t, log.Preamble.GlobalBatchSize)
			assert.Equal(t, w.GBS, *log.Preamble.GlobalBatchSize)
			require.Len(t, log.Steps, len(w.Blocks))
			for i, b := range w.Blocks {
				st := log.Steps[i]
				assert.Equal(t, int(b.Last)/w.GBS, st.Step)
				got := f64(t, st.StepTimeSeconds)
				assert.InDelta(t, b.Mean, got, 1e-9)
				for _, own := range b.Summary {
					assert.InEpsilon(t, own, got, 0.001, "block %d: the log's own train_step_time", i)
				}
			}
			// AMD's eval_accuracy numbers samples one batch short of the block's end; Rival takes
			// the eval_start's count, the block's end, as every other convention prints.
			require.Len(t, log.Evaluations, len(w.Evals))
			for i, e := range w.Evals {
				got := log.Evaluations[i]
				assert.Equal(t, e.Value, got.Loss)
				require.NotNil(t, got.Samples)
				assert.InDelta(t, e.Samples, float64(*got.Samples), float64(w.GBS))
				assert.Equal(t, int(*got.Samples)/w.GBS, got.Step)
				require.NotNil(t, got.ClockSeconds)
			}
			if w.Status != "" {
				assert.Equal(t, w.Status, log.MLPerf.Status)
				require.NotNil(t, log.MLPerf.RunSeconds)
				assert.InDelta(t, w.Minutes*60, *log.MLPerf.RunSeconds, 1e-6)
				last := log.Evaluations[len(log.Evaluations)-1]
				assert.LessOrEqual(t, *last.ClockSeconds, *log.MLPerf.RunSeconds)
			}
		})
	}
}

// NVIDIA's NeMo convention prints the target; the run stops at the first evaluation at or below it.
func TestMLLOGTarget(t *testing.T) {
	log, err := ParseFile("testdata/real/mlperf-nvidia-gb300-x8-llama31-8b.log", MLPerf)
	require.NoError(t, err)
	// target_accuracy is not among the events the excerpt kept; the final evaluation is.
	last := log.Evaluations[len(log.Evaluations)-1]
	assert.Less(t, last.Loss, 3.3)
	assert.Equal(t, int64(184320), *last.Samples)
	assert.Equal(t, 11520, last.Step)
}
