package result

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// Facts carries what the log may not say. Zero values mean "not given"; where the log
// prints a value too, the log wins (it is what ran) and a disagreement is a Problem.
type Facts struct {
	GPUs      int
	SeqLen    int
	GBS       int
	MBS       int
	Precision string // "bf16", "fp8" or "fp32" (CPU runs); empty assumes bf16 and says so
	Platform  string // "nvd", "amd", "cpu"
	Host      *hw.Host
	GPUModel  string // spec key ("H100 SXM") or the name a tool prints
	Model     string // registry key ("llama", "qwen-proxy", ...)

	Framework          string // what ran; empty uses the log's family
	FrameworkVersion   string
	FrameworkRequested string

	TP, PP, CP int

	DatasetName, DatasetFingerprint string
	TokenizerFingerprint            string
	ConfigFingerprint               string
	ImageDigest                     string
	RivalVersion                    string

	// WarmupSteps overrides the default warm-up (10% of logged steps, at least 1);
	// nil uses the default.
	WarmupSteps *int
}

// ErrMissingFact is wrapped by Build's errors for a fact neither the log nor Facts gives.
var ErrMissingFact = errors.New("missing fact")

func strp(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func intp(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func f64p(v float64) *float64 { return &v }

// pick returns the log's value when printed, else the fact; a disagreement is noted.
func pick(r *Result, name, env string, logged *int, fact int) *int {
	if logged != nil {
		if fact != 0 && fact != *logged {
			r.problem(name+"_mismatch", fmt.Sprintf("the log prints %d but %s=%d was given; the log's value is used", *logged, env, fact))
		}
		return intp(*logged)
	}
	return intp(fact)
}

func (r *Result) problem(name, detail string) {
	r.Problems = append(r.Problems, Problem{Name: name, Detail: detail})
}

// Build turns a parsed log and the facts around it into a Result. It fails, naming the
// fact, when tokens per second cannot be computed.
func Build(log *logparse.Log, facts Facts) (*Result, error) {
	if log == nil || len(log.Steps) == 0 {
		return nil, fmt.Errorf("build result: the log has no training steps")
	}
	r := &Result{
		SchemaVersion:        SchemaVersion,
		RivalVersion:         strp(facts.RivalVersion),
		ImageDigest:          strp(facts.ImageDigest),
		ConfigFingerprint:    strp(facts.ConfigFingerprint),
		TokenizerFingerprint: strp(facts.TokenizerFingerprint),
		Dataset:              Dataset{Name: strp(facts.DatasetName), Fingerprint: strp(facts.DatasetFingerprint)},
		Problems:             []Problem{},
	}
	r.Framework = Framework{Name: log.Framework, Version: strp(facts.FrameworkVersion), Requested: strp(facts.FrameworkRequested)}
	if facts.Framework != "" {
		r.Framework.Name = facts.Framework
	}
	pre := log.Preamble

	// Shape of the run.
	tc := &r.TrainingConfig
	tc.GlobalBatchSize = pick(r, "global_batch_size", "GBS", pre.GlobalBatchSize, facts.GBS)
	tc.MicroBatchSize = pick(r, "micro_batch_size", "MBS", pre.MicroBatchSize, facts.MBS)
	tc.SequenceLength = pick(r, "sequence_length", "SL", pre.SeqLength, facts.SeqLen)
	tc.TrainIters = pre.TrainIters
	tc.StepsLogged = len(log.Steps)
	hostGPUs := 0
	if facts.Host != nil {
		hostGPUs = len(facts.Host.GPUs)
	}
	gpus := facts.GPUs
	if gpus == 0 {
		gpus = hostGPUs
	}
	tc.NumGPUs = pick(r, "gpu_count", "GPUS", pre.WorldSize, gpus)
	tc.Precision = strings.ToLower(facts.Precision)
	if tc.Precision == "" {
		tc.Precision, tc.PrecisionAssumed = "bf16", true
		r.problem("precision_assumed", "no precision given; bf16 assumed for the MFU peak (set PRECISION=bf16|fp8)")
	}
	r.ParallelismConfig = ParallelismConfig{
		TensorParallel:   pick(r, "tensor_parallel", "TP", pre.TensorParallel, facts.TP),
		PipelineParallel: pick(r, "pipeline_parallel", "PP", pre.PipelineParallel, facts.PP),
		ContextParallel:  pick(r, "context_parallel", "CP", pre.ContextParallel, facts.CP),
		DataParallel:     intp(derefOr(pre.DataParallel, 0)),
	}

	if err := r.hardware(facts); err != nil {
		return nil, err
	}
	model, haveModel := r.model(facts, pre)
	r.series(log)
	r.logInfo(log)
	if err := r.performance(log, facts, model, haveModel); err != nil {
		return nil, err
	}
	r.memory(log)
	return r, nil
}

func derefOr(p *int, d int) int {
	if p == nil {
		return d
	}
	return *p
}

// hardware fills platform, gpu_info and the fingerprint from the host or the facts.
func (r *Result) hardware(f Facts) error {
	platform := f.Platform
	name := f.GPUModel
	var mem int64
	if f.Host != nil {
		if platform == "" {
			platform = f.Host.Platform
		}
		fp := f.Host.Fingerprint()
		r.HardwareFingerprint = &fp
		if len(f.Host.GPUs) > 0 {
			g := f.Host.GPUs[0]
			if name == "" {
				name = g.Model
				if name == "" {
					name = g.Name
				}
			}
			if g.MemoryMiB > 0 {
				mem = g.MemoryMiB
			}
		}
	}
	switch platform {
	case "", "nvd", "amd", "cpu":
	default:
		return fmt.Errorf("build result: platform %q is not one of nvd, amd, cpu (set PLATFORM)", platform)
	}
	r.Platform = strp(platform)
	gi := &r.GPUInfo
	gi.DeviceCount = r.TrainingConfig.NumGPUs
	gi.DeviceName = strp(name)
	if mem > 0 {
		gi.MemoryPerGPUMiB = &mem
	}
	spec := specModel(name, platform)
	if spec == "" {
		if name != "" {
			r.problem("gpu_model_unknown", fmt.Sprintf("%q is not in the spec table (%s); MFU is not computed", name, strings.Join(hw.SpecModels(), ", ")))
		} else if platform != "cpu" {
			r.problem("gpu_model_unknown", "no GPU model given (set GPU=\"H100 SXM\" or similar); MFU is not computed")
		}
		return nil
	}
	gi.SpecModel = &spec
	s, _ := hw.LookupSpec(spec)
	if s.TDPWatts > 0 {
		gi.TDPWatts = f64p(s.TDPWatts)
	}
	if gi.MemoryPerGPUMiB == nil && s.MemoryGiB > 0 {
		// the datasheet's HBM capacity (binary GiB); detection's figure wins when known
		m := s.MemoryMiB()
		gi.MemoryPerGPUMiB = &m
	}
	if peak, err := hw.PeakTFLOPs(spec, r.TrainingConfig.Precision); err == nil {
		gi.PeakTFLOPsDense = &peak
	} else {
		r.problem("peak_unknown", err.Error())
	}
	return nil
}

// specModel resolves a user- or tool-given GPU name to a spec table key.
func specModel(name, platform string) string {
	if name == "" {
		return ""
	}
	if _, ok := hw.LookupSpec(name); ok {
		return name
	}
	vendors := []string{hw.VendorNVIDIA, hw.VendorAMD}
	if platform == "amd" {
		vendors = []string{hw.VendorAMD}
	} else if platform == "nvd" {
		vendors = []string{hw.VendorNVIDIA}
	}
	for _, v := range vendors {
		if k := hw.CanonicalModel(v, name, 0); k != "" {
			return k
		}
	}
	return ""
}

// model fills the model block from the registry and the log's parameter count.
func (r *Result) model(f Facts, pre logparse.Preamble) (models.Model, bool) {
	r.Model.ParameterCount = pre.ParameterCount
	if pre.ParameterCount != nil {
		exact := pre.ParameterCountExact
		r.Model.ParameterCountExact = &exact
	}
	if f.Model == "" {
		r.problem("model_unknown", "no model given (set MODEL=llama|qwen|mistral or a proxy name); tflops_per_gpu and mfu_percent are not computed")
		return models.Model{}, false
	}
	m, err := models.Lookup(f.Model)
	if err != nil {
		r.problem("model_unknown", err.Error())
		r.Model.Name = strp(f.Model)
		return models.Model{}, false
	}
	proxy := m.Proxy
	r.Model.Name, r.Model.DisplayName, r.Model.Proxy = strp(m.Name), strp(m.DisplayName), &proxy
	if r.Model.ParameterCount == nil {
		n := m.Params()
		exact := true
		r.Model.ParameterCount, r.Model.ParameterCountExact = &n, &exact
	}
	return m, true
}

// series copies the per-step arrays.
func (r *Result) series(log *logparse.Log) {
	n := len(log.Steps)
	r.StepNumbers = make([]int, n)
	r.StepTimes = make([]*float64, n)
	r.LossValues = make([]*float64, n)
	r.LearningRates = make([]*float64, n)
	r.GradNorms = make([]*float64, n)
	for i, s := range log.Steps {
		r.StepNumbers[i] = s.Step
		r.StepTimes[i] = s.StepTimeSeconds
		r.LossValues[i] = s.Loss
		r.LearningRates[i] = s.LearningRate
		r.GradNorms[i] = s.GradNorm
	}
}

func (r *Result) logInfo(log *logparse.Log) {
	li := LogInfo{
		Source:            log.Source,
		FrameworkDetected: strp(log.Detected),
		Rank:              log.Rank,
		Stats:             log.Stats,
	}
	for _, s := range log.Steps {
		li.SkippedIterations += derefOr(s.SkippedIterations, 0)
		li.NaNIterations += derefOr(s.NaNIterations, 0)
	}
	r.Log = li
	if li.NaNIterations > 0 {
		r.problem("nan_iterations", fmt.Sprintf("%d iterations had nan/inf gradients", li.NaNIterations))
	}
	if li.SkippedIterations > 0 {
		r.problem("skipped_iterations", fmt.Sprintf("%d iterations were skipped by the optimizer", li.SkippedIterations))
	}
	if li.NonFiniteValues > 0 {
		r.problem("non_finite_values", fmt.Sprintf("%d logged values were nan or inf (null in the series)", li.NonFiniteValues))
	}
	if li.CutLines > 0 {
		r.problem("cut_lines", fmt.Sprintf("%d step lines were cut mid-way and skipped", li.CutLines))
	}
}

// warmup is the number of leading logged steps left out of the statistics.
func warmup(n int, override *int) int {
	w := max(1, n/10)
	if override != nil {
		w = max(0, *override)
	}
	return min(w, max(0, n-1))
}

// performance computes the step-time statistics, throughput, TFLOP/s and MFU.
func (r *Result) performance(log *logparse.Log, f Facts, m models.Model, haveModel bool) error {
	tc := r.TrainingConfig
	need := func(what, env, example string) error {
		return fmt.Errorf("%w: tokens/s needs %s: the log does not print it; set %s=%s", ErrMissingFact, what, env, example)
	}
	if tc.GlobalBatchSize == nil {
		return need("the global batch size", "GBS", "<sequences per step, e.g. 64>")
	}
	if tc.SequenceLength == nil {
		return need("the sequence length", "SL", "<tokens per sequence, e.g. 2048>")
	}
	if tc.NumGPUs == nil {
		return fmt.Errorf("%w: tokens/s per GPU needs the GPU count: the log does not print it; set GPUS=<GPUs in the run, e.g. 8>", ErrMissingFact)
	}
	gbs, sl, gpus := *tc.GlobalBatchSize, *tc.SequenceLength, *tc.NumGPUs
	tokensPerStep := int64(gbs) * int64(sl)

	n := len(log.Steps)
	w := warmup(n, f.WarmupSteps)
	if w == 0 && n > 0 && (f.WarmupSteps == nil || *f.WarmupSteps > 0) {
		r.problem("warmup_included", fmt.Sprintf("only %d logged step(s): no warm-up step could be excluded", n))
	}
	r.WarmupStepsExcluded = w
	measured := log.Steps[w:]

	pm := &r.PerformanceMetrics
	pm.StepTimeSource = "log"
	var times []float64
	for _, s := range measured {
		if s.StepTimeSeconds != nil && *s.StepTimeSeconds > 0 {
			times = append(times, *s.StepTimeSeconds)
		}
	}
	if len(times) == 0 {
		// TorchTitan prints tokens/s per device, not step time.
		for _, s := range measured {
			if s.TokensPerSecondPerGPU != nil && *s.TokensPerSecondPerGPU > 0 {
				times = append(times, float64(tokensPerStep)/(*s.TokensPerSecondPerGPU*float64(gpus)))
			}
		}
		pm.StepTimeSource = "derived_from_framework_tokens_per_second"
	}
	if len(times) == 0 {
		return fmt.Errorf("build result: no measured step in %s prints a step time or tokens/s (%d steps, %d warm-up)", log.Source, n, w)
	}
	if pm.StepTimeSource != "log" {
		r.problem("step_time_derived", "the log prints no step time; it is derived from the framework's tokens/s per GPU, GBS, SL and GPUS")
	}
	if len(times) < 5 {
		r.problem("few_measured_steps", fmt.Sprintf("statistics over %d step(s) only", len(times)))
	}
	st := describe(times)
	pm.MeasuredSteps = len(times)
	pm.AvgStepTimeSeconds, pm.MedianStepTimeSeconds = st.mean, st.median
	pm.P10StepTimeSeconds, pm.P90StepTimeSeconds = st.p10, st.p90
	pm.MinStepTimeSeconds, pm.MaxStepTimeSeconds, pm.StdStepTimeSeconds = st.min, st.max, st.std
	pm.StepsPerSecond = 1 / st.mean
	pm.TokensPerStep = tokensPerStep
	pm.TokensPerSecond = float64(tokensPerStep) / st.mean
	pm.TokensPerSecondPerGPU = pm.TokensPerSecond / float64(gpus)

	pm.FrameworkReportedTFLOPsPerGPU = meanOf(measured, func(s logparse.Step) *float64 { return s.TFLOPsPerGPU })
	pm.FrameworkReportedTokensPerSecondPerGPU = meanOf(measured, func(s logparse.Step) *float64 { return s.TokensPerSecondPerGPU })
	pm.FrameworkReportedMFUPercent = meanOf(measured, func(s logparse.Step) *float64 { return s.MFUPercent })

	if haveModel {
		fpt := m.TrainFLOPsPerToken(sl)
		pm.ModelFLOPsPerToken = &fpt
		tf := fpt * pm.TokensPerSecondPerGPU / 1e12
		pm.TFLOPsPerGPU = &tf
		if peak := r.GPUInfo.PeakTFLOPsDense; peak != nil && *peak > 0 {
			mfu := 100 * tf / *peak
			pm.MFUPercent = &mfu
			if mfu > 100 {
				r.problem("mfu_above_100_percent", fmt.Sprintf("MFU %.1f%% exceeds the %s dense %s peak: check GBS, SL, GPUS, MODEL and GPU", mfu, *r.GPUInfo.SpecModel, tc.Precision))
			}
		}
	}
	if fw := pm.FrameworkReportedTokensPerSecondPerGPU; fw != nil && pm.StepTimeSource == "log" {
		if rel := math.Abs(*fw-pm.TokensPerSecondPerGPU) / pm.TokensPerSecondPerGPU; rel > 0.10 {
			r.problem("tokens_per_second_inconsistent", fmt.Sprintf(
				"the framework prints %.1f tokens/s/GPU but GBS×SL/step time/GPUS gives %.1f (%.0f%% apart): check GBS, SL and GPUS",
				*fw, pm.TokensPerSecondPerGPU, 100*rel))
		}
	}
	return nil
}

// meanOf averages a per-step value over the steps that print it; nil when none does.
func meanOf(steps []logparse.Step, get func(logparse.Step) *float64) *float64 {
	sum, n := 0.0, 0
	for _, s := range steps {
		if v := get(s); v != nil {
			sum += *v
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return f64p(sum / float64(n))
}

type summary struct{ mean, median, p10, p90, min, max, std float64 }

// describe summarises step times; percentiles interpolate linearly between order
// statistics (numpy's default), so results match a pandas reading of step_times.
func describe(xs []float64) summary {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	var ss float64
	for _, x := range s {
		ss += (x - mean) * (x - mean)
	}
	std := 0.0
	if len(s) > 1 {
		std = math.Sqrt(ss / float64(len(s)-1))
	}
	return summary{mean: mean, median: quantile(s, 0.5), p10: quantile(s, 0.1), p90: quantile(s, 0.9), min: s[0], max: s[len(s)-1], std: std}
}

func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// memory takes per-GPU peaks over the steps and the one-off memory reports.
func (r *Result) memory(log *logparse.Log) {
	mm := &r.MemoryMetrics
	upd := func(dst **float64, v *float64) {
		if v != nil && (*dst == nil || *v > **dst) {
			*dst = f64p(*v)
		}
	}
	for _, s := range log.Steps {
		upd(&mm.PeakAllocatedMiB, s.MemMaxAllocatedMiB)
		upd(&mm.PeakAllocatedMiB, s.MemAllocatedMiB)
		upd(&mm.PeakReservedMiB, s.MemMaxReservedMiB)
		upd(&mm.PeakReservedMiB, s.MemReservedMiB)
		upd(&mm.PeakDeviceUsedMiB, s.MemDeviceUsedMiB)
		upd(&mm.DeviceTotalMiB, s.MemDeviceTotalMiB)
		upd(&mm.PeakUsedFraction, s.MemUsedFraction)
	}
	for _, n := range log.Memory {
		upd(&mm.PeakAllocatedMiB, n.MaxAllocatedMiB)
		upd(&mm.PeakAllocatedMiB, n.AllocatedMiB)
		upd(&mm.PeakReservedMiB, n.MaxReservedMiB)
		upd(&mm.PeakReservedMiB, n.ReservedMiB)
	}
}
