package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/executor"
)

// pacedExecutor is a trainer whose GPUs draw a known power in each phase: it
// writes the wattage a fake nvidia-smi reports into phase before each phase,
// starts up for a while, prints its step lines, then shuts down for a while.
type pacedExecutor struct {
	phase string
	steps int
}

func (p *pacedExecutor) Kind() executor.Kind { return "scripted" }
func (p *pacedExecutor) ImageDigest() string { return "" }
func (p *pacedExecutor) Place(dirs []executor.PathMap) []executor.PathMap {
	return executor.Host{}.Place(dirs)
}
func (p *pacedExecutor) set(w int) {
	os.WriteFile(p.phase+".tmp", fmt.Appendf(nil, "%d", w), 0o644)
	os.Rename(p.phase+".tmp", p.phase)
}
func (p *pacedExecutor) Run(ctx context.Context, l core.Launch, maps []executor.PathMap, onLine func(string)) (executor.Info, error) {
	if n := len(l.Command); n > 0 && l.Command[n-1] == "--check" {
		echoDigest(l, onLine) // the preflight
		onLine("preflight ok: paced")
		return executor.Info{}, nil
	}
	p.set(300) // start-up, index build, compilation
	onLine("number of parameters: 12345")
	time.Sleep(400 * time.Millisecond)
	p.set(650)
	for i := 1; i <= p.steps; i++ {
		time.Sleep(50 * time.Millisecond)
		onLine(fmt.Sprintf(" iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: 1.000000E-03 | global batch size: %5d | lm loss: %.6E | loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations:   0 | number of nan iterations:   0 |",
			i, p.steps, i*4, 40.0, 4, 10.0-float64(i)*0.1))
	}
	// Still 650 W a while after the last step line: a query started inside
	// the window reads the training power even on a slow, loaded host.
	time.Sleep(500 * time.Millisecond)
	p.set(200) // shutdown
	time.Sleep(400 * time.Millisecond)
	return executor.Info{}, nil
}

// The energy figure covers the measured steps only, whatever the log's
// buffering: a run that starts up at 300 W, trains at 650 W and shuts down
// at 200 W records 650 W, sampled by the platform's smi tool.
func TestTrainPowerCoversMeasuredStepsOnly(t *testing.T) {
	t.Setenv("RIVAL_POWER_INTERVAL", "10ms")
	bin := t.TempDir()
	phase := filepath.Join(bin, "phase")
	smi := "#!/bin/sh\nw=$(cat " + phase + ")\necho \"0, $w, 1000\"\necho \"1, 60, 10\"\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(smi), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	w, _ := newWorkspace(t, "")
	ex := &pacedExecutor{phase: phase, steps: 12}
	in := newTrainInputs(t, w, ex)
	in.Platform = hw.PlatformNVIDIA
	in.Host = hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0}}}
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	data, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	var r result.Result
	require.NoError(t, json.Unmarshal(data, &r))
	require.NotNil(t, r.PowerMetrics)
	assert.Equal(t, "nvidia-smi", r.PowerMetrics.Source)
	assert.InDelta(t, 0.01, r.PowerMetrics.IntervalSeconds, 1e-12, "RIVAL_POWER_INTERVAL, as the result records it")
	require.NotNil(t, r.PowerMetrics.AvgPowerWattsPerGPU, "samples in the measured window")
	assert.GreaterOrEqual(t, r.PowerMetrics.Samples, 3)
	assert.InDelta(t, 650, *r.PowerMetrics.AvgPowerWattsPerGPU, 1e-9, "only measured steps, only GPU 0")
	assert.InDelta(t, 650, *r.PowerMetrics.MaxPowerWattsPerGPU, 1e-9)
}

// A power interval that is not a positive duration stops the workspace from opening, naming the
// variable, rather than sampling at a rate nobody asked for.
func TestPowerIntervalMustBeADuration(t *testing.T) {
	for _, v := range []string{"fast", "0s", "-1s", "5"} {
		t.Setenv("RIVAL_POWER_INTERVAL", v)
		_, err := openWorkspace(t.TempDir(), false, io.Discard)
		require.Error(t, err, v)
		assert.Contains(t, err.Error(), "RIVAL_POWER_INTERVAL=")
		assert.Contains(t, err.Error(), "positive duration")
	}
}
