package training

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
)

func TestCheckParallelism(t *testing.T) {
	f := core.Fair{TP: 2, PP: 1, DP: 4}
	assert.NoError(t, checkParallelism(f, 8))
	assert.NoError(t, checkParallelism(f, 0), "no GPU count: nothing to check")
	err := checkParallelism(f, 4)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TP×PP×DP = 2×1×4 = 8, but the run has 4 GPUs; set DP=2")
}
