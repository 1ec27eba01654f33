package executor

import (
	"testing"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLocalEnvGivesTheOnlyNode: on one host the executors give a launch that reads its rendezvous from
// the environment the only node's values, and refuse a launch laid out for several nodes.
func TestLocalEnvGivesTheOnlyNode(t *testing.T) {
	host := hw.Host{Platform: hw.PlatformAMD}
	for i := 0; i < 8; i++ {
		host.GPUs = append(host.GPUs, hw.GPU{Index: i})
	}
	req := core.Request{Platform: hw.PlatformAMD, Framework: "prim", Model: "llama", Host: host,
		Fair: core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, GBS: 64, TP: 1, PP: 1, DP: 8, TrainIters: 10, WarmupSteps: 1,
			LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: "bf16"},
		DataPrefix: "/rival/data/x", TokenizerPath: "/rival/tokenizer", OutputDir: "/rival/run", DataCacheDir: "/rival/cache"}
	l, err := frameworks.Build(req)
	require.NoError(t, err)
	d := &Docker{Platform: hw.PlatformAMD}
	rs, err := d.Spec(l, nil)
	require.NoError(t, err)
	for _, want := range []string{"NNODES=1", "GPUS_PER_NODE=8", "NODE_RANK=0", "MASTER_ADDR=localhost", "MASTER_PORT=29500"} {
		assert.Contains(t, rs.Env, want)
	}
	req.NNodes, req.Fair.DP, req.Fair.GBS = 2, 16, 128
	l, err = frameworks.Build(req)
	require.NoError(t, err)
	_, err = d.Spec(l, nil)
	require.ErrorContains(t, err, "laid out for 2 nodes")
}
