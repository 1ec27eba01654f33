package tasks

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
)

// powerInterval is how often GPU power and memory are sampled during a run.
const powerInterval = 5 * time.Second

// powerSample is one reading with when it was taken and how long the run's
// log was then (the log stops growing when the last step is written).
type powerSample struct {
	at      time.Time
	logSize int64
	hw.PowerSample
}

// powerSampler polls the platform's smi tool while a run trains.
type powerSampler struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	source  string
	logPath string
	samples []powerSample
}

// startPowerSampler begins sampling on GPU platforms; on the cpu platform
// (or when enabled is false) it records nothing. logPath is the run's log,
// whose growth dates the last step.
func startPowerSampler(ctx context.Context, platform string, enabled bool, logPath string) *powerSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &powerSampler{cancel: cancel, done: make(chan struct{}), source: "none", logPath: logPath}
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
					s.samples = append(s.samples, powerSample{at: time.Now(), logSize: fileSize(s.logPath), PowerSample: sample})
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

func fileSize(path string) int64 {
	if st, err := os.Stat(path); err == nil {
		return st.Size()
	}
	return -1
}

// halt ends sampling.
func (s *powerSampler) halt() {
	s.cancel()
	<-s.done
}

// summary summarises the samples taken while the measured steps ran, on the
// run's GPUs only (gpus: indices in the tool's listing; nil means all it
// lists).
func (s *powerSampler) summary(measured time.Duration, gpus []int) *result.PowerMetrics {
	s.halt()
	s.mu.Lock()
	defer s.mu.Unlock()
	return summarisePower(s.source, s.samples, measured, gpus)
}

// measuredWindow is [end − measured, end], end being the first sample taken
// once the log had reached its final length: start-up, index building,
// compilation and warm-up steps fall before it, shutdown after.
func measuredWindow(samples []powerSample, measured time.Duration) (from, to time.Time, ok bool) {
	if len(samples) == 0 || measured <= 0 {
		return from, to, false
	}
	final := samples[len(samples)-1].logSize
	for _, s := range samples {
		if s.logSize == final {
			to = s.at
			break
		}
	}
	return to.Add(-measured), to, true
}

func summarisePower(source string, samples []powerSample, measured time.Duration, gpus []int) *result.PowerMetrics {
	pm := &result.PowerMetrics{Source: source, IntervalSeconds: powerInterval.Seconds()}
	if source == "none" {
		pm.IntervalSeconds = 0
		return pm
	}
	from, to, ok := measuredWindow(samples, measured)
	if !ok {
		return pm
	}
	use := func(i int) bool {
		if gpus == nil {
			return true
		}
		for _, g := range gpus {
			if g == i {
				return true
			}
		}
		return false
	}
	var sum, maxW, maxMem float64
	n := 0
	for _, s := range samples {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		pm.Samples++
		for i, w := range s.PowerWatts {
			if use(i) {
				sum += w
				n++
				maxW = max(maxW, w)
			}
		}
		for i, m := range s.MemoryUsedMiB {
			if use(i) {
				maxMem = max(maxMem, m)
			}
		}
	}
	if n > 0 {
		avg := sum / float64(n)
		pm.AvgPowerWattsPerGPU, pm.MaxPowerWattsPerGPU = &avg, &maxW
	} else {
		pm.Samples = 0
	}
	if maxMem > 0 {
		pm.MaxMemoryUsedMiB = &maxMem
	}
	return pm
}

// runGPUs are the indices of the GPUs a run uses: the ones a
// CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES list in
// env names (numeric lists only), else the host's detected GPUs; nil when
// neither says.
func runGPUs(env map[string]string, host hw.Host) []int {
	for _, k := range []string{"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"} {
		v, ok := env[k]
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		var out []int
		for _, f := range strings.Split(v, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				out = nil
				break
			}
			out = append(out, i)
		}
		if out != nil {
			return out
		}
	}
	var out []int
	for _, g := range host.GPUs {
		out = append(out, g.Index)
	}
	return out
}

// measuredDuration is the total time of a result's measured steps.
func measuredDuration(r *result.Result) time.Duration {
	var sum float64
	for i, t := range r.StepTimes {
		if i >= r.WarmupStepsExcluded && t != nil && *t > 0 {
			sum += *t
		}
	}
	return time.Duration(sum * float64(time.Second))
}
