package training

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
)

// A run on GPUs 0-3 of an 8-GPU machine: 300 W while it starts and
// compiles, 650 W over the measured steps, 200 W while it shuts down; GPUs
// 4-7 idle at 60 W. Only the samples inside the measured window and only
// GPUs 0-3 count: 650 W (all samples on all GPUs would give 234.5 W).
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
		s := powerSample{at: t0.Add(time.Duration(i) * 5 * time.Second)}
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
	pm := summarisePower("nvidia-smi", 5*time.Second, samples, t0.Add(21*time.Second), t0.Add(40*time.Second), true, []int{0, 1, 2, 3})
	require.NotNil(t, pm.AvgPowerWattsPerGPU)
	assert.Equal(t, 4, pm.Samples)
	assert.InDelta(t, 650, *pm.AvgPowerWattsPerGPU, 1e-9)
	assert.InDelta(t, 650, *pm.MaxPowerWattsPerGPU, 1e-9)
}

func TestPowerNoSamplesInWindow(t *testing.T) {
	now := time.Now()
	pm := summarisePower("amd-smi", 5*time.Second, nil, now, now.Add(time.Minute), true, nil)
	assert.Zero(t, pm.Samples)
	assert.Nil(t, pm.AvgPowerWattsPerGPU)
	pm = summarisePower("none", 5*time.Second, nil, now, now, true, nil)
	assert.Equal(t, "none", pm.Source)
	assert.Zero(t, pm.IntervalSeconds)
}

func TestStepClockWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &stepClock{}
	lines := []string{
		"number of parameters: 1",
		"step:  1  loss:  9.0",
		"step:  2  loss:  8.0",
		"step:  2  loss:  8.0", // another rank repeats step 2
		"step:  3  loss:  7.0",
		"done",
	}
	for i, l := range lines {
		c.line(l, t0.Add(time.Duration(i)*time.Second))
	}
	from, to, ok := c.window(1)
	require.True(t, ok)
	assert.Equal(t, t0.Add(1*time.Second), from, "the measured step 2 starts when warm-up step 1 ends")
	assert.Equal(t, t0.Add(4*time.Second), to)
	from, _, ok = c.window(0)
	require.True(t, ok)
	assert.Equal(t, t0.Add(1*time.Second), from)
	_, _, ok = c.window(3)
	assert.False(t, ok, "no measured step")
}

func TestRunGPUs(t *testing.T) {
	host := hw.Host{GPUs: []hw.GPU{{Index: 0}, {Index: 1}}}
	assert.Equal(t, []int{2, 3}, runGPUs(map[string]string{"CUDA_VISIBLE_DEVICES": "2,3"}, host))
	assert.Equal(t, []int{0, 1}, runGPUs(map[string]string{"CUDA_VISIBLE_DEVICES": "GPU-uuid"}, host))
	assert.Equal(t, []int{0, 1}, runGPUs(nil, host))
	assert.Nil(t, runGPUs(nil, hw.Host{}))
}
