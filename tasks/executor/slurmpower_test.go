package executor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/slurm"
)

// TestSlurmPowerFromNodes: a Slurm run's power comes from its nodes' files, the measured
// window only. Node a: 300 W before the window, 640/660 W and 600/620 W in it; node b: 700/720 W
// in it, 200 W after. Mean in the window, by hand: (640+660+600+620+700+720)/6 = 656.67.
func TestSlurmPowerFromNodes(t *testing.T) {
	run := t.TempDir()
	write := func(node, text string) {
		require.NoError(t, os.MkdirAll(filepath.Join(run, "nodes", node), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(run, "nodes", node, slurm.PowerFile), []byte(text), 0o644))
	}
	write("a", "@ 99.5\n0, 300, 10\n1, 300, 10\n@ 101\n0, 640, 20\n1, 660, 20\n@ 102\n0, 600, 30\n1, 620, 30\n")
	write("b", "@ 101.5\n0, 700, 40\n1, 720, 40\n@ 104\n0, 200, 10\n1, 200, 10\n")

	pm := SlurmPower(context.Background(), run, hw.PlatformNVIDIA, time.Unix(100, 0), time.Unix(103, 0), true)
	assert.Equal(t, "nvidia-smi", pm.Source)
	assert.Equal(t, 3, pm.Samples)
	require.NotNil(t, pm.AvgPowerWattsPerGPU)
	assert.InDelta(t, 656.67, *pm.AvgPowerWattsPerGPU, 0.01)
	assert.Equal(t, 720.0, *pm.MaxPowerWattsPerGPU)
	assert.Equal(t, 40.0, *pm.MaxMemoryUsedMiB)
	assert.Equal(t, 1.0, pm.IntervalSeconds)

	// No node recorded anything (the tool is missing on the nodes): not sampled.
	empty := SlurmPower(context.Background(), t.TempDir(), hw.PlatformNVIDIA, time.Unix(100, 0), time.Unix(103, 0), true)
	assert.Equal(t, "none", empty.Source)
	assert.Nil(t, empty.AvgPowerWattsPerGPU)
	// No measured step was dated: samples exist but none counts.
	undated := SlurmPower(context.Background(), run, hw.PlatformNVIDIA, time.Time{}, time.Time{}, false)
	assert.Equal(t, 0, undated.Samples)
	assert.Nil(t, undated.AvgPowerWattsPerGPU)
	// A cpu run has no power tool.
	assert.Equal(t, "none", SlurmPower(context.Background(), run, hw.PlatformCPU, time.Unix(100, 0), time.Unix(103, 0), true).Source)
}
