package compare

import (
	"errors"
	"fmt"
	"github.com/rivalbench/rival/frameworks/effective"
	"math"
	"sort"
	"strings"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
)

// ErrNoResults is returned by Analyze when there is nothing to compare.
var ErrNoResults = errors.New("no results to compare: train first (`go run mage.go demo` or `go run mage.go train:cpu` on any host, `go run mage.go train:run amd prim llama` on a GPU host) or point compare:dir at a folder of result JSON files")

// Thresholds of the sanity and parity checks.
const (
	// TokensConsistencyTolerance is the largest relative difference allowed
	// between tokens/s and GBS×SL/step time (and tokens/s/GPU × GPUs), and
	// between the mean of the measured step series and the stated mean.
	TokensConsistencyTolerance = 0.02
	// LossDivergenceThreshold flags loss parity: the relative gap of the mean
	// loss over the last LossTailShare of the common steps above this is
	// divergence.
	LossDivergenceThreshold = 0.02
	// LossTailShare is the share of the common steps, at the end of the run,
	// whose mean loss is compared.
	LossTailShare = 0.10
	// MaxGroupsPlotted caps the bars per panel so the figure stays readable.
	MaxGroupsPlotted = 12
	// FixedWindowFirst and FixedWindowLast bound NVIDIA's fixed timing window
	// (iterations 35-44 of a 50-iteration run, as Megatron-Bridge's
	// performance recipes time them).
	FixedWindowFirst, FixedWindowLast = 35, 44
	// DecimatedSeriesTolerance replaces TokensConsistencyTolerance when the
	// step series keeps every step_series_stride-th step only: its mean is a
	// sample of the measured steps, not their exact mean.
	DecimatedSeriesTolerance = 0.10
	// OldSuiteWarmupShare is the warm-up rule applied to old-suite results,
	// which record none: this share of the logged steps, at least one.
	OldSuiteWarmupShare = 0.10
	// FixedWindowRunLength is the run length the fixed window belongs to: it
	// applies only to runs of at least this many iterations (in a shorter run
	// iterations 35-44 are its last steps, not a settled middle).
	FixedWindowRunLength = 50
	// PartitionShare: a GPU exposing less than this share of its datasheet
	// memory is a partition (CPX, MIG) and is compared against the whole GPU's
	// peak only with a mark.
	PartitionShare = 0.6
)

// Methodology names of a comparison.
const (
	MethodIdentical = "identical configuration"
	MethodBest      = "each platform at its best"
	NotIdentical    = "not identical configuration"
)

// GroupKey is what makes runs repetitions of one another: runs whose recorded
// configuration (Setup) differs are never pooled, whatever their fingerprints.
type GroupKey struct {
	Platform, GPU, Framework, Model, Dataset, ConfigFingerprint string
	// Setup is the recorded configuration line (precision, SL, GBS, MBS,
	// parallelism, GPU count); unrecorded fields read "?".
	Setup string
}

// Run is one usable result with Rival's recomputed figures.
type Run struct {
	Input     *Input
	TPSPerGPU float64 // tokens/s/GPU
	TPS       float64 // tokens/s over all GPUs
	StepTime  float64 // mean step time, seconds
	// TFLOPs and MFU are Rival's (models.TrainFLOPsPerToken × tokens/s/GPU
	// over the dense peak); nil when the model or the GPU is unknown.
	TFLOPs, MFU *float64
	Peak        *float64
	Errors      []result.Problem // sanity errors: the run is left out of stats and plots
	// FixedWindowTPS is tokens/s/GPU over iterations FixedWindowFirst to
	// FixedWindowLast; nil (FixedWindowNote says why) when the run is shorter
	// than FixedWindowRunLength, did not log them or lacks GBS/SL/GPUs.
	FixedWindowTPS  *float64
	FixedWindowNote string
	// Outlier is the run's modified z-score of tokens/s/GPU within its group
	// when it is an outlier (see OutlierZ), 0 otherwise.
	Outlier float64
	// DroppedSteps says which logged step times were left out of the step
	// statistics for being zero, negative or not finite; empty when none.
	DroppedSteps string
}

// Group is every repetition of one configuration on one platform.
type Group struct {
	Key        GroupKey
	Label      string // "MI300X Primus"
	ModelLabel string // "Llama 3.1 8B"
	Runs       []*Run
	TPS        Summary // tokens/s/GPU over runs
	TotalTPS   Summary // tokens/s over runs
	StepTime   Summary // mean step time over runs, seconds
	StepMedian float64 // pooled measured steps of all runs
	StepP10    float64
	StepP90    float64
	// StepStatsRecorded: median/p10/p90 are the results' own (over every
	// measured step), not recomputed from the step series.
	StepStatsRecorded bool
	StepSamples       []float64 // pooled measured step times (sorted)
	TFLOPs, MFU       *float64  // Rival's, mean over runs
	// TFLOPsRuns summarises Rival's model TFLOP/s/GPU over runs (N is 0
	// when the model or SL is unknown).
	TFLOPsRuns Summary
	// FLOPsPerToken is the model's training FLOPs per token at the group's
	// SL (models.TrainFLOPsPerToken); nil when the model or SL is unknown.
	FLOPsPerToken *float64
	FrameworkTF   *float64 // framework's own printed TFLOP/s/GPU, mean over runs that print it
	FrameworkMFU  *float64
	Peak          *float64
	Precision     string
	NumGPUs       int

	// Setup is the configuration line: precision and FP8 recipe, SL, GBS,
	// MBS, GA, TP/PP/CP/DP, DDP or FSDP, recompute.
	Setup string
	// Stack is the software stack: framework and version, image digest.
	Stack string
	// Proxy is a small stand-in model; CPU a run without a GPU. Neither gets
	// a time-to-train or a cost.
	Proxy, CPU bool
	// Partition is set when the run used a GPU partition (CPX, MIG) while MFU
	// is against the whole GPU's peak.
	Partition string

	AllocatedMiB, ReservedMiB, DeviceUsedMiB *float64 // max over runs
	GPUMemoryMiB                             *float64
	MemoryShare                              *float64 // largest of reserved/used over GPU memory, 0-1

	TokensPerWh *float64
	PowerWatts  float64
	PowerSource string // "sampled" or "TDP estimate"

	Price         *Price
	CostPer1T     *float64 // USD
	GPUHoursPer1T float64
	DaysFor1T     float64 // on NumGPUs GPUs; 0 for proxies and CPU runs
	DaysFor15T    float64

	Config map[string]string // fairness fields → value
	// Marked is true when no group of another platform it is compared with
	// has an identical configuration: every comparison of it is
	// "not identical configuration".
	Marked bool
}

// Metrics a speedup is computed on.
const (
	MetricTokens = "tokens/s/GPU"
	MetricFLOPs  = "model TFLOP/s/GPU"
)

// Comparison is a cross-platform speedup: Faster's tokens/s/GPU over
// Slower's, or their model FLOP/s when the work per token differs.
type Comparison struct {
	Faster, Slower *Group
	Ratio          Ratio
	// Metric is MetricTokens, or MetricFLOPs when the two groups do
	// different work per token (SL, model); WorkDiffers then says how.
	Metric      string
	WorkDiffers string
	// RunsNeeded is, for an inconclusive ratio (interval includes 1), the
	// runs per side that would decide at the observed spread (see
	// RunsNeeded).
	RunsNeeded int
	Method     string // MethodIdentical or MethodBest
	Identical  bool
	Why        string // every field that differs ("GBS 384 vs 128, ..."), when not identical
	// Stack says how the software stacks differ ("frameworks differ"), empty
	// when framework and version are equal.
	Stack string
	// Evidence is the verify:results verdict on the two groups' first runs.
	Evidence string
	// FixedWindow is the speedup over NVIDIA's fixed window; nil (with
	// FixedWindowNote saying why) when a side lacks those iterations.
	FixedWindow     *Ratio
	FixedWindowNote string
}

// LossParity compares the loss curves of two groups on identical data and seed.
type LossParity struct {
	A, B      *Group
	Steps     int // common steps compared after warm-up
	Warmup    int // leading common steps skipped
	MaxGap    float64
	AtStep    int
	Diverged  bool
	Available bool // false when the curves share no step after warm-up
	// PrecisionOnly is true when the groups differ in precision only
	// (BF16 against FP8): a convergence check, not a reproduction.
	PrecisionOnly bool
	// TailGap is |mean(a) − mean(b)| / ((mean(a)+mean(b))/2) over the last
	// TailSteps common steps: the figure Diverged is decided on.
	TailGap   float64
	TailSteps int
}

// ModelSection gathers a model's groups and comparisons.
type ModelSection struct {
	Name, Label  string
	Groups       []*Group
	Headlines    []Comparison
	Comparisons  []Comparison
	NoComparison string // set when fewer than two platforms ran this model
	Fairness     []FairnessRow
	Identical    []string // fairness fields recorded and equal across all groups
	Unrecorded   []string // fairness fields no group recorded
	// Declared are the differences a framework of this section does not let Rival remove
	// (frameworks/effective); every report that compares the framework shows them.
	Declared []effective.Declared
	Parity   []LossParity
}

// FairnessRow is one configuration field that differs between groups.
type FairnessRow struct {
	Field  string
	Values []string // aligned with ModelSection.Groups
}

// RunError is a result reported by name and kept out of statistics and plots.
type RunError struct {
	Source string
	Name   string
	Detail string
}

// Report is everything compare writes.
type Report struct {
	Inputs []*Input
	// Skipped lists what Load could not use; the caller sets it (Analyze only
	// sees usable inputs) so the report shows it.
	Skipped []Problem
	// ConfigDefaults are the configuration keys' defaults; the caller sets
	// them so reproduce commands name only the keys a run changed (nil:
	// every recorded key is named).
	ConfigDefaults map[string]string
	Errors         []RunError
	Groups         []*Group
	Models         []*ModelSection
	Prices         PriceTable
	// Warnings are what a reader must see before trusting a figure: noisy
	// hosts, outlier runs, dropped step times, implausible prices, results
	// that disagree with their training log.
	Warnings []string
	// LogChecks says, by input source, what checking the result against
	// its training log found (see SetLogChecks); nil when no check ran.
	LogChecks map[string]LogCheck
	// Platforms seen among usable runs, sorted.
	Platforms []string
	// History is every workload measured on more than one stack, host or
	// date (history.go); nil when there is none.
	History *History
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// recordsStatistics says whether a result carries the step-time statistics
// Rival's extract computes over every measured step (headline_statistic set):
// those are used as recorded; older and imported results are recomputed from
// their step series.
func recordsStatistics(r *result.Result) bool {
	return r.PerformanceMetrics.HeadlineStatistic != ""
}

// gpuCount is the run's GPU count: num_gpus, else TP×PP×CP×DP when all four
// are recorded, else gpu_info.device_count; 0 when unknown.
func gpuCount(r *result.Result) int {
	if r.TrainingConfig.NumGPUs != nil && *r.TrainingConfig.NumGPUs > 0 {
		return *r.TrainingConfig.NumGPUs
	}
	p := r.ParallelismConfig
	if p.TensorParallel != nil && p.PipelineParallel != nil && p.ContextParallel != nil && p.DataParallel != nil {
		if n := *p.TensorParallel * *p.PipelineParallel * *p.ContextParallel * *p.DataParallel; n > 0 {
			return n
		}
	}
	if r.GPUInfo.DeviceCount != nil && *r.GPUInfo.DeviceCount > 0 {
		return *r.GPUInfo.DeviceCount
	}
	return 0
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
	return fmt.Sprintf("%s zero, negative or not finite, left out of the step statistics (%s)", plural(n, "step time"), strings.Join(bad, ", "))
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
	if r.Framework.Name != "fsdp" || r.Framework.Version == nil {
		return ""
	}
	_, rest, ok := strings.Cut(*r.Framework.Version, "; ran ")
	if !ok {
		return ""
	}
	path, _, _ := strings.Cut(rest, " ")
	switch path {
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
		return nil, fmt.Sprintf("does not apply: ran %s, the window is defined for runs of at least %d", plural(n, "iteration"), FixedWindowRunLength)
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

// Analyze groups the inputs, computes every figure and every comparison.
func Analyze(inputs []Input, prices PriceTable) (*Report, error) {
	if len(inputs) == 0 {
		return nil, ErrNoResults
	}
	if prices.Prices == nil {
		prices = DefaultPrices()
	}
	rep := &Report{Prices: prices}
	byKey := map[GroupKey]*Group{}
	var order []GroupKey
	platforms := map[string]bool{}
	for i := range inputs {
		in := &inputs[i]
		rep.Inputs = append(rep.Inputs, in)
		run := evaluate(in)
		if len(run.Errors) > 0 {
			for _, e := range run.Errors {
				rep.Errors = append(rep.Errors, RunError{Source: in.Source, Name: e.Name, Detail: e.Detail})
			}
			continue
		}
		key := groupKey(in.Result)
		g, ok := byKey[key]
		if !ok {
			g = &Group{Key: key, Label: shortGPU(key.GPU) + cpuName(in.Result) + " " + frameworkLabel(key.Framework) + ranPath(in.Result), ModelLabel: modelLabel(in.Result)}
			byKey[key] = g
			order = append(order, key)
		}
		g.Runs = append(g.Runs, run)
		platforms[key.Platform] = true
	}
	for p := range platforms {
		rep.Platforms = append(rep.Platforms, p)
	}
	sort.Strings(rep.Platforms)
	for _, k := range order {
		g := byKey[k]
		g.compute(prices)
		rep.Groups = append(rep.Groups, g)
	}
	sort.SliceStable(rep.Groups, func(i, j int) bool {
		a, b := rep.Groups[i], rep.Groups[j]
		if a.ModelLabel != b.ModelLabel {
			return a.ModelLabel < b.ModelLabel
		}
		return a.TPS.Mean > b.TPS.Mean
	})
	disambiguate(rep.Groups)
	rep.buildModels()
	rep.warn()
	rep.History = BuildHistory(rep.Groups, DefaultHistoryThreshold)
	return rep, nil
}

// warn gathers what a reader must see before trusting a figure: implausible
// prices, groups whose runs spread more than NoisyHostCV, outlier runs and
// step times left out of the statistics.
func (rep *Report) warn() {
	rep.Warnings = append(rep.Warnings, rep.Prices.Warnings...)
	for _, g := range rep.Groups {
		if cv := g.TPS.CV(); cv > NoisyHostCV {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("noisy host: the %d runs of %s spread %.1f%% (SD / mean of tokens/s/GPU), above the %.0f%% a quiet host stays within; rerun on an idle host (no other jobs, fixed clocks) or with more runs", g.TPS.N, g.Label, 100*cv, 100*NoisyHostCV))
		}
		med := median(runValues(g))
		for _, run := range g.Runs {
			if run.Outlier > 0 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("outlier run: %s of %s has %s tokens/s/GPU against the group's median %s (modified z-score %.1f, above %.1f: |x − median| > %.1f × 1.4826 × MAD); it is kept in the statistics: look for a straggler node or a throttled GPU and rerun it", run.Input.Source, g.Label, num(run.TPSPerGPU, 1), num(med, 1), run.Outlier, OutlierZ, OutlierZ))
			}
			if run.DroppedSteps != "" {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %s", run.Input.Source, run.DroppedSteps))
			}
		}
	}
}

// runValues are the runs' tokens/s/GPU in run order.
func runValues(g *Group) []float64 {
	var out []float64
	for _, r := range g.Runs {
		out = append(out, r.TPSPerGPU)
	}
	return out
}
