package tasks

import (
	"testing"

	"github.com/rivalbench/rival/hw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrainAllSkipsRefusedCombinations(t *testing.T) {
	w, log := newWorkspace(t, "")
	host := hw.Host{Platform: hw.PlatformNVIDIA}
	for i := 0; i < 8; i++ {
		host.GPUs = append(host.GPUs, hw.GPU{Index: i, Model: "H100 SXM", Name: "NVIDIA H100 80GB HBM3"})
	}
	ex := &scriptedExecutor{}
	plan, err := w.planTraining(hw.PlatformNVIDIA, []string{"titan", "mega"}, []string{"qwen", "llama"}, host, ex, true)
	require.NoError(t, err)
	assert.Len(t, plan.Runs, 3, "titan × qwen is left out")
	assert.Contains(t, log.String(), "skipping titan × qwen on nvd")

	_, err = w.planTraining(hw.PlatformNVIDIA, []string{"titan"}, []string{"qwen"}, host, ex, false)
	require.Error(t, err, "train:run asks for exactly that combination: an error")
}
