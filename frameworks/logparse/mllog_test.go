package logparse

import (
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
`, "none gives global_batch_size"},
		{"no blocks", `:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "POINT_IN_TIME", "key": "global_batch_size", "value": 32, "metadata": {}}
:::MLLOG {"namespace": "", "time_ms": 2, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}
`, "no block_start/block_stop pair with samples_count"},
		{"not JSON", ":::MLLOG {\"key\": \"global_batch_size\", \"value\": 32\n", "1 of them are not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.log), "")
			require.ErrorIs(t, err, ErrNoSteps)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "global_batch_size event and block_start/block_stop pairs with metadata.samples_count")
		})
	}
}
