package training

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
)

// powerSample is one reading with the time the query was started.
type powerSample struct {
	at time.Time
	hw.PowerSample
}

// stepClock records when each step line of a run was seen while the run's
// output streamed in: the wall-clock dates of its steps, independent of how
// the log file is buffered.
type stepClock struct {
	mu    sync.Mutex
	seen  map[int]bool // step numbers seen
	first []time.Time  // when each distinct step number was first seen, in order
	last  time.Time    // when the latest step line was seen
}

// stepNumber reads the step number of a training step line: the lines
// logparse.ProgressLine reads (Megatron-format iteration lines of
// Megatron-LM, Primus, Megatron-Bridge and Rival's fsdp trainer, TorchTitan
// "step:" lines, NeMo progress lines) and other NeMo/Lightning "global_step"
// lines.
func stepNumber(line string) (int, bool) {
	if pr, ok := logparse.ProgressLine(line); ok {
		return pr.Step, true
	}
	if m := nemoStep.FindStringSubmatch(line); m != nil {
		n, err := strconv.Atoi(m[1])
		return n, err == nil
	}
	return 0, false
}

var nemoStep = regexp.MustCompile(`global_step[=:]\s*(\d+)`)

// line notes the time of a step line (other lines are ignored). Lines of
// other ranks repeating a step number keep its first date.
func (c *stepClock) line(l string, at time.Time) {
	n, ok := stepNumber(l)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = at
	if c.seen == nil {
		c.seen = map[int]bool{}
	}
	if !c.seen[n] {
		c.seen[n] = true
		c.first = append(c.first, at)
	}
}

// window is the span of the measured steps: from the start of the first
// measured step (the line that ended the last of the warmup excluded steps;
// the first measured step's own line when none was excluded) to the last
// step line. ok is false when the run printed no measured step.
func (c *stepClock) window(warmup int) (from, to time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if warmup < 0 || warmup >= len(c.first) {
		return from, to, false
	}
	return c.first[max(0, warmup-1)], c.last, true
}

// powerSampler polls the platform's smi tool while a run trains.
type powerSampler struct {
	interval time.Duration
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	source   string
	samples  []powerSample
}

// startPowerSampler begins sampling every interval on GPU platforms; on the cpu platform
// (or when enabled is false) it records nothing.
func startPowerSampler(ctx context.Context, platform string, enabled bool, interval time.Duration) *powerSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &powerSampler{interval: interval, cancel: cancel, done: make(chan struct{}), source: "none"}
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
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			at := time.Now()
			out, err := exec.CommandContext(ctx, tool, args...).Output()
			if err == nil {
				if sample, err := hw.ParsePowerSample(platform, out); err == nil {
					s.mu.Lock()
					s.samples = append(s.samples, powerSample{at: at, PowerSample: sample})
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

// halt ends sampling.
func (s *powerSampler) halt() {
	s.cancel()
	<-s.done
}

// summary summarises the samples taken between from and to (the measured
// steps), on the run's GPUs only (gpus: indices in the tool's listing; nil
// means all it lists). ok false (no measured step was dated) keeps no sample.
func (s *powerSampler) summary(from, to time.Time, ok bool, gpus []int) *result.PowerMetrics {
	s.halt()
	s.mu.Lock()
	defer s.mu.Unlock()
	return summarisePower(s.source, s.interval, s.samples, from, to, ok, gpus)
}

func summarisePower(source string, interval time.Duration, samples []powerSample, from, to time.Time, ok bool, gpus []int) *result.PowerMetrics {
	pm := &result.PowerMetrics{Source: source, IntervalSeconds: interval.Seconds()}
	if source == "none" {
		pm.IntervalSeconds = 0
		return pm
	}
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
