package training

import (
	"testing"
	"time"

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

// A Run or Site left at its zero value is refused before anything is built, rather than sampling
// power in a tight loop or skipping the TP×PP×DP check.
func TestTaskRefusesZeroValues(t *testing.T) {
	in := Run{Platform: "cpu", Framework: "fsdp", Model: "mistral-proxy", Dataset: "docs",
		Workload: Workload{Fair: core.Fair{TP: 1, PP: 1, DP: 1}, NNodes: 1}}
	_, err := Task(in, Site{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "train train_cpu_fsdp_mistral-proxy_docs: the power sampling interval is 0s")
	in.Workload.NNodes = 0
	_, err = Task(in, Site{PowerInterval: time.Second})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NNODES is 0")
}
