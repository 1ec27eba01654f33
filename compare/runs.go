package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
)

// recordsStatistics says whether a result carries the step-time statistics
// Rival's extract computes over every measured step (headline_statistic set):
// those are used as recorded; older and imported results are recomputed from
// their step series.
func recordsStatistics(r *result.Result) bool {
	return r.PerformanceMetrics.HeadlineStatistic != ""
}

// measuredSteps are the finite positive step times after the run's warm-up.
// warmup_steps_excluded counts logged steps; a series decimated to every
// step_series_stride-th logged step (the first included) starts measuring
// at entry ⌈warm-up / stride⌉.
func measuredSteps(r *result.Result) []float64 {
	stride := max(1, r.StepSeriesStride)
	w := min((max(0, r.WarmupStepsExcluded)+stride-1)/stride, len(r.StepTimes))
	var out []float64
	for _, t := range r.StepTimes[w:] {
		if t != nil && *t > 0 && finite(*t) {
			out = append(out, *t)
		}
	}
	return out
}

// droppedSteps names the measured step times that measuredSteps leaves out
// for being zero, negative or not finite (null entries are steps the log did
// not time, and are not counted): "2 step times ≤ 0 or not finite (step 7:
// -0.5 s, step 9: 0 s)"; "" when none.
func droppedSteps(r *result.Result) string {
	stride := max(1, r.StepSeriesStride)
	w := min((max(0, r.WarmupStepsExcluded)+stride-1)/stride, len(r.StepTimes))
	var bad []string
	for i, t := range r.StepTimes[w:] {
		if t == nil || (*t > 0 && finite(*t)) {
			continue
		}
		st := w + i + 1
		if w+i < len(r.StepNumbers) {
			st = r.StepNumbers[w+i]
		}
		if len(bad) < 5 {
			bad = append(bad, fmt.Sprintf("step %d: %g s", st, *t))
		} else if len(bad) == 5 {
			bad = append(bad, "…")
		}
	}
	if len(bad) == 0 {
		return ""
	}
	n := len(bad)
	if bad[n-1] == "…" {
		n = 0
		for _, t := range r.StepTimes[w:] {
			if t != nil && !(*t > 0 && finite(*t)) {
				n++
			}
		}
	}
	return fmt.Sprintf("%s zero, negative or not finite, left out of the step statistics (%s)", english.Plural(n, "step time"), strings.Join(bad, ", "))
}

// evaluate recomputes a run's figures and its sanity errors.
func evaluate(in *Input) *Run {
	r := in.Result
	pm := r.PerformanceMetrics
	run := &Run{Input: in, TPSPerGPU: pm.TokensPerSecondPerGPU, TPS: pm.TokensPerSecond, StepTime: pm.AvgStepTimeSeconds}
	fail := func(name, format string, a ...any) {
		run.Errors = append(run.Errors, result.Problem{Name: name, Detail: fmt.Sprintf(format, a...)})
	}
	gpus := gpuCount(r)
	if run.TPS == 0 && gpus > 0 {
		run.TPS = run.TPSPerGPU * float64(gpus)
	}
	switch {
	case gpus > 0 && run.TPS > 0:
		if rel := math.Abs(run.TPSPerGPU*float64(gpus)-run.TPS) / run.TPS; rel > TokensConsistencyTolerance {
			fail("tokens_per_second_inconsistent", "tokens/s/GPU %.1f × %d GPUs = %.1f but tokens/s is %.1f (%.1f%% apart)", run.TPSPerGPU, gpus, run.TPSPerGPU*float64(gpus), run.TPS, 100*rel)
		}
	case gpus == 0 && r.Platform != nil && *r.Platform != hw.PlatformCPU:
		// A whole ratio proves nothing (2×, 4×, 8× inflation all divide):
		// without a GPU count the per-GPU figure cannot be verified.
		fail("gpu_count_unrecorded", "tokens/s/GPU cannot be checked: no num_gpus, no TP×PP×CP×DP and no gpu_info.device_count is recorded; record the GPU count to compare this run")
	}
	gbs, sl := r.TrainingConfig.GlobalBatchSize, r.TrainingConfig.SequenceLength
	// tokens/s follows from the result's headline statistic: the median step
	// time where the result records it so, else the mean.
	stated, statName := run.StepTime, "mean step time"
	if recordsStatistics(r) && pm.MedianStepTimeSeconds > 0 {
		stated, statName = pm.MedianStepTimeSeconds, "median step time"
	}
	if gbs != nil && sl != nil && stated > 0 && run.TPS > 0 {
		want := float64(*gbs) * float64(*sl) / stated
		if rel := math.Abs(want-run.TPS) / want; rel > TokensConsistencyTolerance {
			fail("tokens_per_second_inconsistent", "GBS %d × SL %d / %s %.4g s = %.1f tokens/s but the result says %.1f (%.1f%% apart)", *gbs, *sl, statName, stated, want, run.TPS, 100*rel)
		}
	}
	if steps := measuredSteps(r); len(steps) > 0 && run.StepTime > 0 {
		m, tol := mean(steps), TokensConsistencyTolerance
		if r.StepSeriesStride > 1 {
			tol = DecimatedSeriesTolerance
		}
		if rel := math.Abs(m-run.StepTime) / run.StepTime; rel > tol {
			fail("step_time_inconsistent", "the %d measured steps of the step series average %.4g s but avg_step_time_seconds is %.4g s (%.1f%% apart, more than %.0f%%)", len(steps), m, run.StepTime, 100*rel, 100*tol)
		}
	}
	for _, p := range r.Problems {
		if p.Name == "tokens_per_second_inconsistent" || p.Name == "mfu_above_100_percent" {
			fail(p.Name, "flagged by the result itself: %s", p.Detail)
		}
	}
	// Rival's TFLOP/s needs only the model and the sequence length; MFU also
	// needs the GPU's dense peak (a CPU run has TFLOP/s but no MFU).
	if r.Model.Name != nil && sl != nil {
		if m, err := models.Lookup(*r.Model.Name); err == nil {
			tf := m.TrainFLOPsPerToken(*sl) * run.TPSPerGPU / 1e12
			run.TFLOPs = &tf
			if spec := resolveSpec(r); spec != "" {
				if peak, err := hw.PeakTFLOPs(spec, r.TrainingConfig.Precision); err == nil {
					mfu := 100 * tf / peak
					run.MFU, run.Peak = &mfu, &peak
					if mfu > 100 {
						fail("mfu_above_100_percent", "Rival's MFU is %.1f%% of the %s dense %s peak (%.1f TFLOP/s): check GBS, SL, GPU count, model and precision", mfu, spec, r.TrainingConfig.Precision, peak)
					}
				}
			}
		}
	}
	if !finite(run.TPSPerGPU) || run.TPSPerGPU <= 0 {
		fail("no_throughput", "tokens/s/GPU is missing or not a positive number")
	}
	run.FixedWindowTPS, run.FixedWindowNote = fixedWindowTPS(r)
	run.DroppedSteps = droppedSteps(r)
	// One name once: the result's own flag and Rival's recomputation can agree.
	seen := map[string]bool{}
	var uniq []result.Problem
	for _, e := range run.Errors {
		if !seen[e.Name+e.Detail] {
			seen[e.Name+e.Detail] = true
			uniq = append(uniq, e)
		}
	}
	run.Errors = uniq
	return run
}

// ranPath names, for Rival's fsdp trainer, the path that ran when it is not
// FSDP: the trainer records it in its version ("…; ran ddp on torch 1.13…",
// "…; ran single on torch …"), and a run labelled FSDP that ran DDP must not
// be read as FSDP. "" for other frameworks and for FSDP itself.
func ranPath(r *result.Result) string {
	switch fsdpPath(r) {
	case "ddp":
		return " (ran DDP)"
	case "single":
		return " (ran one process)"
	}
	return ""
}

// runLength is the run's iteration count: train_iters, else the last
// logged step number.
func runLength(r *result.Result) int {
	if n := r.TrainingConfig.TrainIters; n != nil && *n > 0 {
		return *n
	}
	last := 0
	for _, st := range r.StepNumbers {
		last = max(last, st)
	}
	return last
}

// fixedWindowTPS is tokens/s/GPU = GBS × SL / (mean step time of iterations
// FixedWindowFirst..FixedWindowLast) / GPUs, or nil and why not.
func fixedWindowTPS(r *result.Result) (*float64, string) {
	gbs, sl, gpus := r.TrainingConfig.GlobalBatchSize, r.TrainingConfig.SequenceLength, gpuCount(r)
	if n := runLength(r); n < FixedWindowRunLength {
		return nil, fmt.Sprintf("does not apply: ran %s, the window is defined for runs of at least %d", english.Plural(n, "iteration"), FixedWindowRunLength)
	}
	if gbs == nil || sl == nil || gpus == 0 {
		return nil, "GBS, SL or GPU count not recorded"
	}
	var ts []float64
	for i, st := range r.StepNumbers {
		if st >= FixedWindowFirst && st <= FixedWindowLast && i < len(r.StepTimes) && r.StepTimes[i] != nil && *r.StepTimes[i] > 0 && finite(*r.StepTimes[i]) {
			ts = append(ts, *r.StepTimes[i])
		}
	}
	if len(ts) != FixedWindowLast-FixedWindowFirst+1 {
		return nil, fmt.Sprintf("did not log iterations %d-%d", FixedWindowFirst, FixedWindowLast)
	}
	v := float64(*gbs) * float64(*sl) / mean(ts) / float64(gpus)
	return &v, ""
}

// runValues are the runs' tokens/s/GPU in run order.
func runValues(g *Group) []float64 {
	var out []float64
	for _, r := range g.Runs {
		out = append(out, r.TPSPerGPU)
	}
	return out
}
