package training

import (
	"testing"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mega's and prim's preflights run on stand-ins in a container without devices; nemo's imports the
// image's real GPU stack and keeps the run's devices.
func TestPreflightDevices(t *testing.T) {
	ex := &executor.Docker{Platform: hw.PlatformNVIDIA}
	for fw, devices := range map[string]bool{"mega": false, "nemo": true} {
		host := hw.Host{Platform: hw.PlatformNVIDIA}
		for i := 0; i < 8; i++ {
			host.GPUs = append(host.GPUs, hw.GPU{Index: i})
		}
		l, err := frameworks.Build(core.Request{Platform: hw.PlatformNVIDIA, Framework: fw, Model: "llama", Host: host,
			Fair: core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, TP: 1, PP: 1, TrainIters: 10, WarmupSteps: 1,
				LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: "bf16"},
			DataPrefix: "/rival/data/x", TokenizerPath: "/rival/tokenizer", OutputDir: "/rival/run", DataCacheDir: "/rival/cache"})
		require.NoError(t, err)
		require.NotNil(t, l.Preflight, fw)
		pex, ok := preflightExecutor(ex, *l.Preflight).(*executor.Docker)
		require.True(t, ok, fw)
		want := hw.PlatformCPU
		if devices {
			want = hw.PlatformNVIDIA
		}
		assert.Equal(t, want, pex.Platform, fw)
	}
}
