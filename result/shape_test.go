package result

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A log of Rival's fsdp trainer on one H100 (torch 2.11, CUDA 13.0) that
// trained Mistral 7B's widths with 8 of its 32 layers. Named MODEL=mistral,
// extract used to put the 32-layer FLOPs on it and print an MFU of 168%.
// The log's own exact parameter count shows the shape: no MFU from the
// wrong model, a problem that says why, and the throughput unchanged.
// Expected figures from the log by hand (awk over the 13 measured steps:
// median 965.4 ms; 4 × 8192 tokens per step).
func TestLoggedShapeDiffersFromModel(t *testing.T) {
	env := map[string]string{"GPUS": "1", "SL": "8192", "GBS": "4", "MBS": "1", "PRECISION": "bf16",
		"MODEL": "mistral", "PLATFORM": "nvd", "FRAMEWORK": "fsdp", "GPU": "H100 SXM"}
	r, err := Extract(logs+"real/rival-fsdp-h100-mistral8l.log", envOf(env))
	require.NoError(t, err)
	assert.Contains(t, names(r.Problems), "model_shape_differs")
	assert.NotContains(t, names(r.Problems), "mfu_above_100_percent")
	pm := r.PerformanceMetrics
	assert.Nil(t, pm.MFUPercent, "no MFU from another model's FLOPs")
	assert.Nil(t, pm.TFLOPsPerGPU)
	assert.InDelta(t, 32768/0.9654, pm.TokensPerSecondPerGPU, 0.5)
	require.NotNil(t, r.Model.ParameterCount)
	assert.Equal(t, int64(2007044096), *r.Model.ParameterCount)

	// The proxy of the same family is not this shape either; the full model with
	// its own count (a log that trained all 32 layers) stays untouched: the
	// tolerance only forgives vocabulary padding.
	env["MODEL"] = "mistral-proxy"
	r, err = Extract(logs+"real/rival-fsdp-h100-mistral8l.log", envOf(env))
	require.NoError(t, err)
	assert.Contains(t, names(r.Problems), "model_shape_differs")
}
