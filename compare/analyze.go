package compare

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
)

// ErrNoResults is returned by Analyze when there is nothing to compare.
var ErrNoResults = errors.New("no results to compare: run a training target first (e.g. `mage train:run amd prim llama`) or point compare:dir at a folder of result JSON files")

// Thresholds of the sanity and parity checks.
const (
	// TokensConsistencyTolerance is the largest relative difference allowed
	// between tokens/s and GBS×SL/step time (and tokens/s/GPU × GPUs).
	TokensConsistencyTolerance = 0.02
	// LossDivergenceThreshold flags loss parity: the largest relative gap
	// |a−b|/((|a|+|b|)/2) after warm-up above this is divergence.
	LossDivergenceThreshold = 0.05
	// MaxGroupsPlotted caps the bars per panel so the figure stays readable.
	MaxGroupsPlotted = 12
)

// Methodology names of a comparison.
const (
	MethodIdentical = "identical configuration"
	MethodBest      = "each platform at its best"
	NotIdentical    = "not identical configuration"
)

// GroupKey is what makes runs repetitions of one another.
type GroupKey struct {
	Platform, GPU, Framework, Model, Dataset, ConfigFingerprint string
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
}

// Group is every repetition of one configuration on one platform.
type Group struct {
	Key          GroupKey
	Label        string // "MI300X Primus"
	ModelLabel   string // "Llama 3.1 8B"
	Runs         []*Run
	TPS          Summary // tokens/s/GPU over runs
	TotalTPS     Summary // tokens/s over runs
	StepTime     Summary // mean step time over runs, seconds
	StepMedian   float64 // pooled measured steps of all runs
	StepP10      float64
	StepP90      float64
	StepSamples  []float64 // pooled measured step times (sorted)
	TFLOPs, MFU  *float64  // Rival's, mean over runs
	FrameworkTF  *float64  // framework's own printed TFLOP/s/GPU, mean over runs that print it
	FrameworkMFU *float64
	Peak         *float64
	Precision    string
	NumGPUs      int

	AllocatedMiB, ReservedMiB, DeviceUsedMiB *float64 // max over runs
	GPUMemoryMiB                             *float64
	MemoryShare                              *float64 // largest of reserved/used over GPU memory, 0-1

	TokensPerWh *float64
	PowerWatts  float64
	PowerSource string // "sampled" or "TDP estimate"

	Price         *Price
	CostPer1T     *float64 // USD
	GPUHoursPer1T float64
	DaysFor1T     float64 // on NumGPUs GPUs
	DaysFor15T    float64

	Config map[string]string // fairness fields → value ("mixed: a | b" if runs differ)
	// Marked is true when this group's dataset or config fingerprint differs
	// from another group of its model (or is unknown): not identical configuration.
	Marked bool
}

// Comparison is a cross-platform speedup: Faster's tokens/s/GPU over Slower's.
type Comparison struct {
	Faster, Slower *Group
	Ratio          Ratio
	Method         string // MethodIdentical or MethodBest
	Identical      bool
	Why            string // what differs when not identical
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
}

// ModelSection gathers a model's groups and comparisons.
type ModelSection struct {
	Name, Label  string
	Groups       []*Group
	Headlines    []Comparison
	Comparisons  []Comparison
	NoComparison string // set when fewer than two platforms ran this model
	Fairness     []FairnessRow
	Identical    []string // fairness fields equal across all groups
	Parity       []LossParity
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
	Errors  []RunError
	Groups  []*Group
	Models  []*ModelSection
	Prices  PriceTable
	// Platforms seen among usable runs, sorted.
	Platforms []string
}

// fairnessFields are compared between groups, in this order.
var fairnessFields = []string{
	"precision", "tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel",
	"global_batch_size", "micro_batch_size", "sequence_length", "num_gpus",
	"dataset", "dataset_fingerprint", "tokenizer_fingerprint", "config_fingerprint",
	"framework", "framework_version", "image_digest",
}

func strOr(p *string, d string) string {
	if p == nil || *p == "" {
		return d
	}
	return *p
}

func intStr(p *int) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

func configOf(r *result.Result) map[string]string {
	prec := r.TrainingConfig.Precision
	if r.TrainingConfig.PrecisionAssumed {
		prec += " (assumed)"
	}
	return map[string]string{
		"precision":             strOr(&prec, "unknown"),
		"tensor_parallel":       intStr(r.ParallelismConfig.TensorParallel),
		"pipeline_parallel":     intStr(r.ParallelismConfig.PipelineParallel),
		"context_parallel":      intStr(r.ParallelismConfig.ContextParallel),
		"data_parallel":         intStr(r.ParallelismConfig.DataParallel),
		"global_batch_size":     intStr(r.TrainingConfig.GlobalBatchSize),
		"micro_batch_size":      intStr(r.TrainingConfig.MicroBatchSize),
		"sequence_length":       intStr(r.TrainingConfig.SequenceLength),
		"num_gpus":              intStr(r.TrainingConfig.NumGPUs),
		"dataset":               strOr(r.Dataset.Name, "unknown"),
		"dataset_fingerprint":   strOr(r.Dataset.Fingerprint, "unknown"),
		"tokenizer_fingerprint": strOr(r.TokenizerFingerprint, "unknown"),
		"config_fingerprint":    strOr(r.ConfigFingerprint, "unknown"),
		"framework":             r.Framework.Name,
		"framework_version":     strOr(r.Framework.Version, "unknown"),
		"image_digest":          strOr(r.ImageDigest, "unknown"),
	}
}

var frameworkNames = map[string]string{
	"megatron": "Megatron-LM", "megatron-lm": "Megatron-LM", "mega": "Megatron-LM",
	"primus": "Primus", "prim": "Primus", "nemo": "NeMo", "nemo2": "NeMo",
	"megatron-bridge": "Megatron-Bridge", "bridge": "Megatron-Bridge", "mbridge": "Megatron-Bridge",
	"torchtitan": "TorchTitan", "titan": "TorchTitan", "fsdp": "FSDP",
}

func frameworkLabel(name string) string {
	if l, ok := frameworkNames[strings.ToLower(name)]; ok {
		return l
	}
	return name
}

func platformOf(r *result.Result) string { return strOr(r.Platform, "unknown") }

func gpuOf(r *result.Result) string {
	if s := resolveSpec(r); s != "" {
		return s
	}
	if platformOf(r) == "cpu" && r.GPUInfo.DeviceName == nil {
		return "CPU"
	}
	return strOr(r.GPUInfo.DeviceName, "unknown GPU")
}

func modelKey(r *result.Result) string { return strOr(r.Model.Name, "unknown") }

func modelLabel(r *result.Result) string {
	if r.Model.DisplayName != nil {
		return *r.Model.DisplayName
	}
	if r.Model.Name != nil {
		if m, err := models.Lookup(*r.Model.Name); err == nil {
			return m.DisplayName
		}
		return *r.Model.Name
	}
	return "unknown model"
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// evaluate recomputes a run's figures and its sanity errors.
func evaluate(in *Input) *Run {
	r := in.Result
	pm := r.PerformanceMetrics
	run := &Run{Input: in, TPSPerGPU: pm.TokensPerSecondPerGPU, TPS: pm.TokensPerSecond, StepTime: pm.AvgStepTimeSeconds}
	fail := func(name, format string, a ...any) {
		run.Errors = append(run.Errors, result.Problem{Name: name, Detail: fmt.Sprintf(format, a...)})
	}
	gpus := 0
	if r.TrainingConfig.NumGPUs != nil {
		gpus = *r.TrainingConfig.NumGPUs
	}
	if run.TPS == 0 && gpus > 0 {
		run.TPS = run.TPSPerGPU * float64(gpus)
	}
	if gpus > 0 && run.TPS > 0 {
		if rel := math.Abs(run.TPSPerGPU*float64(gpus)-run.TPS) / run.TPS; rel > TokensConsistencyTolerance {
			fail("tokens_per_second_inconsistent", "tokens/s/GPU %.1f × %d GPUs = %.1f but tokens/s is %.1f (%.1f%% apart)", run.TPSPerGPU, gpus, run.TPSPerGPU*float64(gpus), run.TPS, 100*rel)
		}
	}
	gbs, sl := r.TrainingConfig.GlobalBatchSize, r.TrainingConfig.SequenceLength
	if gbs != nil && sl != nil && run.StepTime > 0 && run.TPS > 0 {
		want := float64(*gbs) * float64(*sl) / run.StepTime
		if rel := math.Abs(want-run.TPS) / want; rel > TokensConsistencyTolerance {
			fail("tokens_per_second_inconsistent", "GBS %d × SL %d / step time %.4g s = %.1f tokens/s but the result says %.1f (%.1f%% apart)", *gbs, *sl, run.StepTime, want, run.TPS, 100*rel)
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
		r := in.Result
		key := GroupKey{
			Platform: platformOf(r), GPU: gpuOf(r), Framework: r.Framework.Name, Model: modelKey(r),
			Dataset:           strOr(r.Dataset.Name, "unknown") + "@" + strOr(r.Dataset.Fingerprint, "unknown"),
			ConfigFingerprint: strOr(r.ConfigFingerprint, "unknown"),
		}
		g, ok := byKey[key]
		if !ok {
			g = &Group{Key: key, Label: shortGPU(key.GPU) + " " + frameworkLabel(key.Framework), ModelLabel: modelLabel(r)}
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
	return rep, nil
}

// shortGPU drops the form factor for headlines ("H100 SXM" → "H100").
func shortGPU(gpu string) string {
	return strings.TrimSuffix(gpu, " SXM")
}

// disambiguate extends labels that would otherwise repeat within a model with
// what tells the groups apart: the config fingerprint, then the dataset.
func disambiguate(groups []*Group) {
	for _, extra := range []func(*Group) string{
		func(g *Group) string { return "cfg " + truncate(g.Key.ConfigFingerprint, 10) },
		func(g *Group) string { return "data " + truncate(g.Key.Dataset, 16) },
		func(g *Group) string { return g.Key.Platform },
	} {
		count := map[string]int{}
		for _, g := range groups {
			count[g.ModelLabel+"|"+g.Label]++
		}
		for _, g := range groups {
			if count[g.ModelLabel+"|"+g.Label] > 1 {
				g.Label += " [" + extra(g) + "]"
			}
		}
	}
}

func (g *Group) compute(prices PriceTable) {
	var tps, total, step []float64
	var tf, mfu, ftf, fmfu []float64
	var pooled []float64
	configs := map[string][]string{}
	for _, run := range g.Runs {
		r := run.Input.Result
		tps = append(tps, run.TPSPerGPU)
		total = append(total, run.TPS)
		if run.StepTime > 0 {
			step = append(step, run.StepTime)
		}
		if run.TFLOPs != nil {
			tf = append(tf, *run.TFLOPs)
		}
		if run.MFU != nil {
			mfu = append(mfu, *run.MFU)
			g.Peak = run.Peak
		}
		pm := r.PerformanceMetrics
		if pm.FrameworkReportedTFLOPsPerGPU != nil && finite(*pm.FrameworkReportedTFLOPsPerGPU) {
			ftf = append(ftf, *pm.FrameworkReportedTFLOPsPerGPU)
		}
		if pm.FrameworkReportedMFUPercent != nil && finite(*pm.FrameworkReportedMFUPercent) {
			fmfu = append(fmfu, *pm.FrameworkReportedMFUPercent)
		}
		w := min(max(0, r.WarmupStepsExcluded), len(r.StepTimes))
		for _, t := range r.StepTimes[w:] {
			if t != nil && *t > 0 && finite(*t) {
				pooled = append(pooled, *t)
			}
		}
		mm := r.MemoryMetrics
		g.AllocatedMiB = maxPtr(g.AllocatedMiB, mm.PeakAllocatedMiB)
		g.ReservedMiB = maxPtr(g.ReservedMiB, mm.PeakReservedMiB)
		g.DeviceUsedMiB = maxPtr(g.DeviceUsedMiB, mm.PeakDeviceUsedMiB)
		if r.GPUInfo.MemoryPerGPUMiB != nil {
			v := float64(*r.GPUInfo.MemoryPerGPUMiB)
			g.GPUMemoryMiB = &v
		} else if mm.DeviceTotalMiB != nil {
			g.GPUMemoryMiB = mm.DeviceTotalMiB
		}
		for k, v := range configOf(r) {
			if !contains(configs[k], v) {
				configs[k] = append(configs[k], v)
			}
		}
		g.Precision = r.TrainingConfig.Precision
		if r.TrainingConfig.NumGPUs != nil {
			g.NumGPUs = *r.TrainingConfig.NumGPUs
		}
	}
	g.Config = map[string]string{}
	for k, vs := range configs {
		sort.Strings(vs)
		if len(vs) == 1 {
			g.Config[k] = vs[0]
		} else {
			g.Config[k] = "mixed: " + strings.Join(vs, " | ")
		}
	}
	g.TPS, g.TotalTPS, g.StepTime = summarize(tps), summarize(total), summarize(step)
	sort.Float64s(pooled)
	g.StepSamples = pooled
	if len(pooled) > 0 {
		g.StepMedian, g.StepP10, g.StepP90 = percentile(pooled, 0.5), percentile(pooled, 0.1), percentile(pooled, 0.9)
	} else if len(g.Runs) == 1 {
		pm := g.Runs[0].Input.Result.PerformanceMetrics
		g.StepMedian, g.StepP10, g.StepP90 = pm.MedianStepTimeSeconds, pm.P10StepTimeSeconds, pm.P90StepTimeSeconds
	}
	g.TFLOPs, g.MFU = meanPtr(tf), meanPtr(mfu)
	g.FrameworkTF, g.FrameworkMFU = meanPtr(ftf), meanPtr(fmfu)
	if g.GPUMemoryMiB != nil && *g.GPUMemoryMiB > 0 {
		used := g.ReservedMiB
		if g.DeviceUsedMiB != nil && (used == nil || *g.DeviceUsedMiB > *used) {
			used = g.DeviceUsedMiB
		}
		if used == nil {
			used = g.AllocatedMiB
		}
		if used != nil {
			s := *used / *g.GPUMemoryMiB
			g.MemoryShare = &s
		}
	}

	// Energy: sampled power when every run has it, else the GPU's TDP.
	first := g.Runs[0].Input
	var watts []float64
	for _, run := range g.Runs {
		if w := sampledPower(run.Input.Result); w > 0 {
			watts = append(watts, w)
		}
	}
	switch {
	case len(watts) == len(g.Runs):
		g.PowerWatts, g.PowerSource = mean(watts), "sampled"
	case first.Result.GPUInfo.TDPWatts != nil && *first.Result.GPUInfo.TDPWatts > 0:
		g.PowerWatts, g.PowerSource = *first.Result.GPUInfo.TDPWatts, "TDP estimate"
	default:
		if s, ok := hw.LookupSpec(g.Key.GPU); ok && s.TDPWatts > 0 {
			g.PowerWatts, g.PowerSource = s.TDPWatts, "TDP estimate"
		}
	}
	if g.PowerWatts > 0 {
		v := g.TPS.Mean * 3600 / g.PowerWatts
		g.TokensPerWh = &v
	}

	// Time and money for 1T tokens: GPU-hours = 10^12 / (tokens/s/GPU × 3600).
	g.GPUHoursPer1T = 1e12 / (g.TPS.Mean * 3600)
	if g.NumGPUs > 0 {
		g.DaysFor1T = g.GPUHoursPer1T / float64(g.NumGPUs) / 24
		g.DaysFor15T = 15 * g.DaysFor1T
	}
	if p, ok := prices.Lookup(g.Key.GPU); ok {
		g.Price = &p
		c := g.GPUHoursPer1T * p.USDPerGPUHour
		g.CostPer1T = &c
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func maxPtr(cur, v *float64) *float64 {
	if v == nil || !finite(*v) {
		return cur
	}
	if cur == nil || *v > *cur {
		x := *v
		return &x
	}
	return cur
}

func meanPtr(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	m := mean(xs)
	return &m
}

// identical says whether two groups ran on the same data with the same
// configuration; unknown fingerprints cannot prove it.
func identical(a, b *Group) (bool, string) {
	var why []string
	ra, rb := a.Runs[0].Input.Result, b.Runs[0].Input.Result
	for _, f := range []struct {
		name string
		x, y *string
	}{
		{"dataset fingerprint", ra.Dataset.Fingerprint, rb.Dataset.Fingerprint},
		{"config fingerprint", ra.ConfigFingerprint, rb.ConfigFingerprint},
	} {
		switch {
		case f.x == nil || f.y == nil:
			why = append(why, f.name+" unknown")
		case *f.x != *f.y:
			why = append(why, f.name+" differs")
		}
	}
	return len(why) == 0, strings.Join(why, ", ")
}

func (rep *Report) buildModels() {
	byModel := map[string]*ModelSection{}
	var names []string
	for _, g := range rep.Groups {
		s, ok := byModel[g.Key.Model]
		if !ok {
			s = &ModelSection{Name: g.Key.Model, Label: g.ModelLabel}
			byModel[g.Key.Model] = s
			names = append(names, g.Key.Model)
		}
		s.Groups = append(s.Groups, g)
	}
	sort.Slice(names, func(i, j int) bool { return byModel[names[i]].Label < byModel[names[j]].Label })
	for _, n := range names {
		s := byModel[n]
		s.compare()
		s.fairness()
		s.parity()
		rep.Models = append(rep.Models, s)
	}
}

func (s *ModelSection) compare() {
	// Every group is marked unless it is identical to every other group.
	for _, g := range s.Groups {
		for _, h := range s.Groups {
			if g != h {
				if ok, _ := identical(g, h); !ok {
					g.Marked = true
				}
			}
		}
		if len(s.Groups) == 1 {
			if ok, _ := identical(g, g); !ok {
				g.Marked = true
			}
		}
	}
	platforms := map[string]bool{}
	for _, g := range s.Groups {
		platforms[g.Key.Platform] = true
	}
	if len(platforms) < 2 {
		var only []string
		for p := range platforms {
			only = append(only, p)
		}
		s.NoComparison = fmt.Sprintf("only %s results for %s: there is no cross-platform comparison", strings.Join(only, ", "), s.Label)
		return
	}
	mk := func(a, b *Group) Comparison {
		if b.TPS.Mean > a.TPS.Mean {
			a, b = b, a
		}
		ok, why := identical(a, b)
		c := Comparison{Faster: a, Slower: b, Ratio: ratioOfMeans(a.TPS, b.TPS), Identical: ok, Why: why, Method: MethodBest}
		if ok {
			c.Method = MethodIdentical
		}
		return c
	}
	for i, a := range s.Groups {
		for _, b := range s.Groups[i+1:] {
			if a.Key.Platform != b.Key.Platform {
				s.Comparisons = append(s.Comparisons, mk(a, b))
			}
		}
	}
	// Headline 1: each platform's best group against the other platforms' best.
	best := map[string]*Group{}
	var plats []string
	for _, g := range s.Groups {
		if cur, ok := best[g.Key.Platform]; !ok || g.TPS.Mean > cur.TPS.Mean {
			if !ok {
				plats = append(plats, g.Key.Platform)
			}
			best[g.Key.Platform] = g
		}
	}
	sort.Strings(plats)
	for i, p := range plats {
		for _, q := range plats[i+1:] {
			c := mk(best[p], best[q])
			c.Method = MethodBest
			if c.Identical {
				c.Method = MethodIdentical
			}
			s.Headlines = append(s.Headlines, c)
		}
	}
	// Headline 2: the fastest identical-configuration pair, when the best-vs-best
	// pair is not identical.
	var bestIdent *Comparison
	for i := range s.Comparisons {
		c := &s.Comparisons[i]
		if c.Identical && (bestIdent == nil || c.Faster.TPS.Mean+c.Slower.TPS.Mean > bestIdent.Faster.TPS.Mean+bestIdent.Slower.TPS.Mean) {
			bestIdent = c
		}
	}
	if bestIdent != nil {
		dup := false
		for _, h := range s.Headlines {
			if h.Faster == bestIdent.Faster && h.Slower == bestIdent.Slower {
				dup = true
			}
		}
		if !dup {
			s.Headlines = append(s.Headlines, *bestIdent)
		}
	}
}

func (s *ModelSection) fairness() {
	for _, f := range fairnessFields {
		vals := make([]string, len(s.Groups))
		differ := false
		for i, g := range s.Groups {
			vals[i] = g.Config[f]
			if i > 0 && vals[i] != vals[0] || strings.HasPrefix(vals[i], "mixed: ") {
				differ = true
			}
		}
		if differ {
			s.Fairness = append(s.Fairness, FairnessRow{Field: f, Values: vals})
		} else {
			s.Identical = append(s.Identical, f)
		}
	}
}

// parity compares loss curves for every cross-platform pair of groups with
// identical dataset and config fingerprints (the config covers the seed),
// using each group's first run (sorted by source).
func (s *ModelSection) parity() {
	for i, a := range s.Groups {
		for _, b := range s.Groups[i+1:] {
			if a.Key.Platform == b.Key.Platform {
				continue
			}
			if ok, _ := identical(a, b); !ok || !sameSeed(firstRun(a), firstRun(b)) {
				continue
			}
			s.Parity = append(s.Parity, lossParity(a, b))
		}
	}
}

func firstRun(g *Group) *result.Result {
	best := g.Runs[0]
	for _, r := range g.Runs[1:] {
		if r.Input.Source < best.Input.Source {
			best = r
		}
	}
	return best.Input.Result
}

func lossByStep(r *result.Result) map[int]float64 {
	m := map[int]float64{}
	for i, l := range r.LossValues {
		if l == nil || !finite(*l) || i >= len(r.StepNumbers) {
			continue
		}
		m[r.StepNumbers[i]] = *l
	}
	return m
}

func lossParity(a, b *Group) LossParity {
	ra, rb := firstRun(a), firstRun(b)
	la, lb := lossByStep(ra), lossByStep(rb)
	var steps []int
	for st := range la {
		if _, ok := lb[st]; ok {
			steps = append(steps, st)
		}
	}
	sort.Ints(steps)
	warm := max(ra.WarmupStepsExcluded, rb.WarmupStepsExcluded, len(steps)/10)
	lp := LossParity{A: a, B: b, Warmup: min(warm, len(steps))}
	for _, st := range steps[lp.Warmup:] {
		x, y := la[st], lb[st]
		den := (math.Abs(x) + math.Abs(y)) / 2
		if den == 0 {
			continue
		}
		gap := math.Abs(x-y) / den
		lp.Steps++
		if gap > lp.MaxGap || !lp.Available {
			lp.MaxGap, lp.AtStep = gap, st
		}
		lp.Available = true
	}
	lp.Diverged = lp.Available && lp.MaxGap > LossDivergenceThreshold
	return lp
}

// sampledPower is the mean per-GPU power a run's sampler recorded, or 0.
func sampledPower(r *result.Result) float64 {
	pm := r.PowerMetrics
	if pm == nil || pm.Source == "none" || pm.Samples == 0 || pm.AvgPowerWattsPerGPU == nil || !finite(*pm.AvgPowerWattsPerGPU) {
		return 0
	}
	return *pm.AvgPowerWattsPerGPU
}

// sameSeed is false only when both runs record a SEED and they differ.
func sameSeed(a, b *result.Result) bool {
	if a.Provenance == nil || b.Provenance == nil {
		return true
	}
	x, okA := a.Provenance.Config["SEED"]
	y, okB := b.Provenance.Config["SEED"]
	return !okA || !okB || x == y
}
