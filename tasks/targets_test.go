package tasks

import (
	"testing"

	"github.com/rivalbench/rival/hw"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTrainAllSkipsRefusedCombinations(t *testing.T) {
	// PROFILE=1 titan refuses: TorchTitan's profiler cannot be set to a step range.
	w, log := newWorkspace(t, "PROFILE=1\n")
	host := hw.Host{Platform: hw.PlatformNVIDIA}
	for i := 0; i < 8; i++ {
		host.GPUs = append(host.GPUs, hw.GPU{Index: i, Model: "H100 SXM", Name: "NVIDIA H100 80GB HBM3"})
	}
	ex := &scriptedExecutor{}
	plan, err := w.planTraining(hw.PlatformNVIDIA, []string{"titan", "mega"}, []string{"mistral", "llama"}, host, ex, true)
	require.NoError(t, err)
	assert.Len(t, plan.Runs, 2, "titan is left out")
	assert.Contains(t, log.String(), "skipping titan × mistral on nvd")
	assert.Contains(t, log.String(), "skipping titan × llama on nvd")

	_, err = w.planTraining(hw.PlatformNVIDIA, []string{"titan"}, []string{"mistral"}, host, ex, false)
	require.Error(t, err, "train:run asks for exactly that combination: an error")
}
