package tasks

import (
	"context"
	"os/exec"
	"sync"
	"time"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
)

// powerInterval is how often GPU power and memory are sampled during a run.
const powerInterval = 5 * time.Second

// powerSampler polls the platform's smi tool while a run trains.
type powerSampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	source  string
	samples []hw.PowerSample
}

// startPowerSampler begins sampling on GPU platforms; on the cpu platform
// (or when enabled is false) it records nothing.
func startPowerSampler(ctx context.Context, platform string, enabled bool) *powerSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &powerSampler{cancel: cancel, done: make(chan struct{}), source: "none"}
	tool, args := hw.PowerQuery(platform)
	if !enabled || tool == "" {
		close(s.done)
		return s
	}
	if _, err := exec.LookPath(tool); err != nil {
		close(s.done)
		return s
	}
	s.source = tool
	go func() {
		defer close(s.done)
		t := time.NewTicker(powerInterval)
		defer t.Stop()
		for {
			out, err := exec.CommandContext(ctx, tool, args...).Output()
			if err == nil {
				if sample, err := hw.ParsePowerSample(platform, out); err == nil {
					s.mu.Lock()
					s.samples = append(s.samples, sample)
					s.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends sampling and summarises it.
func (s *powerSampler) stop() *result.PowerMetrics {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return summarisePower(s.source, s.samples)
}

func summarisePower(source string, samples []hw.PowerSample) *result.PowerMetrics {
	pm := &result.PowerMetrics{Source: source, Samples: len(samples), IntervalSeconds: powerInterval.Seconds()}
	if len(samples) == 0 {
		if source == "none" {
			pm.IntervalSeconds = 0
		}
		return pm
	}
	var sum, maxW, maxMem float64
	n := 0
	for _, s := range samples {
		for _, w := range s.PowerWatts {
			sum += w
			n++
			maxW = max(maxW, w)
		}
		for _, m := range s.MemoryUsedMiB {
			maxMem = max(maxMem, m)
		}
	}
	if n > 0 {
		avg := sum / float64(n)
		pm.AvgPowerWattsPerGPU, pm.MaxPowerWattsPerGPU = &avg, &maxW
	}
	if maxMem > 0 {
		pm.MaxMemoryUsedMiB = &maxMem
	}
	return pm
}
