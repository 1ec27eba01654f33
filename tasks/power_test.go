package tasks

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
)

// A run on GPUs 0-3 of an 8-GPU machine: 300 W while it starts and
// compiles, 650 W over the 20 s of measured steps, 200 W while it shuts
// down; GPUs 4-7 idle at 60 W. Only the four samples inside the measured
// window and only GPUs 0-3 count: 650 W (all samples on all GPUs would
// give 234.5 W).
func TestPowerOnlyMeasuredStepsAndRunGPUs(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var samples []powerSample
	for i := 0; i <= 10; i++ {
		w := 300.0
		switch {
		case i > 8:
			w = 200
		case i > 4:
			w = 650
		}
		s := powerSample{at: t0.Add(time.Duration(i) * 5 * time.Second), logSize: int64(min(i, 8) * 100)}
		for g := 0; g < 8; g++ {
			if g < 4 {
				s.PowerWatts = append(s.PowerWatts, w)
			} else {
				s.PowerWatts = append(s.PowerWatts, 60)
			}
			s.MemoryUsedMiB = append(s.MemoryUsedMiB, 1000)
		}
		samples = append(samples, s)
	}
	// The log reaches its final size at sample 8 (t0+40 s); 20 s of measured
	// steps put the window at [20 s, 40 s]: samples 4 to 8. Sample 4 sits on
	// the boundary at 300 W, so trim it with 19 s.
	pm := summarisePower("nvidia-smi", samples, 19*time.Second, []int{0, 1, 2, 3})
	require.NotNil(t, pm.AvgPowerWattsPerGPU)
	assert.Equal(t, 4, pm.Samples)
	assert.InDelta(t, 650, *pm.AvgPowerWattsPerGPU, 1e-9)
	assert.InDelta(t, 650, *pm.MaxPowerWattsPerGPU, 1e-9)
}

func TestPowerNoSamplesInWindow(t *testing.T) {
	pm := summarisePower("amd-smi", nil, time.Minute, nil)
	assert.Zero(t, pm.Samples)
	assert.Nil(t, pm.AvgPowerWattsPerGPU)
	pm = summarisePower("none", nil, time.Minute, nil)
	assert.Equal(t, "none", pm.Source)
	assert.Zero(t, pm.IntervalSeconds)
}

func TestRunGPUs(t *testing.T) {
	host := hw.Host{GPUs: []hw.GPU{{Index: 0}, {Index: 1}}}
	assert.Equal(t, []int{2, 3}, runGPUs(map[string]string{"CUDA_VISIBLE_DEVICES": "2,3"}, host))
	assert.Equal(t, []int{0, 1}, runGPUs(map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-uuid"}, host))
	assert.Equal(t, []int{0, 1}, runGPUs(nil, host))
	assert.Nil(t, runGPUs(nil, hw.Host{}))
}

func TestMeasuredDuration(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	r := &result.Result{WarmupStepsExcluded: 1, StepTimes: []*float64{f(30), f(2), nil, f(2.5)}}
	assert.Equal(t, 4500*time.Millisecond, measuredDuration(r))
}
