package result

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/rivalbench/rival/cache"
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
	Precision string // "bf16", "fp16", "fp8", "fp4" or "fp32" (CPU runs); empty assumes bf16 and says so
	Platform  string // "nvd", "amd", "cpu"
	Host      *hw.Host
	GPUModel  string // spec key ("H100 SXM") or the name a tool prints
	Model     string // registry key ("llama", "qwen-proxy", ...)

	Framework          string // what ran; empty uses the log's family
	FrameworkVersion   string
	FrameworkRequested string
	Stack              string // the pinned image of the run's stack (core.Pin.Name); empty on cpu

	TP, PP, CP int

	DatasetName, DatasetFingerprint string
	TokenizerFingerprint            string
	ConfigFingerprint               string
	ImageDigest                     string
	RivalVersion                    string

	// WarmupSteps overrides the warm-up found from the data (see warmupFound); nil
	// uses it. At most logparse.HeadSteps steps can be excluded.
	WarmupSteps *int

	// LogDigest is "blake3:<hex>" of the log file the result is built
	// from (LogDigest computes it); it is recorded as log.digest.
	LogDigest string
}

// LogDigest is "blake3:<hex>" of the file at path: the digest a result
// records of its training log, and the key the cache stores the log under.
func LogDigest(path string) (string, error) {
	d, _, err := cache.HashFile(path)
	if err != nil {
		return "", fmt.Errorf("digest of the log %s: %w", path, err)
	}
	return "blake3:" + d.String(), nil
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
	if log == nil || log.StepCount == 0 || len(log.Steps) == 0 {
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
	r.Framework = Framework{Name: log.Framework, Version: strp(facts.FrameworkVersion), Requested: strp(facts.FrameworkRequested), Stack: facts.Stack}
	if log.Detected != "" && log.Framework != log.Detected {
		r.problem("framework_mismatch", fmt.Sprintf("the log's lines look like %s but it was read as %s (FRAMEWORK or the run's configuration says so); the label %s is used", log.Detected, log.Framework, log.Framework))
	}
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
	tc.StepsLogged = log.StepCount
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
	if lp := logPrecision(pre.Args); lp != "" && tc.Precision != "fp32" {
		// The arguments the log prints are what ran (fp32 is the CPU trainer's own choice).
		if tc.Precision != "" && tc.Precision != lp {
			r.problem("precision_mismatch", fmt.Sprintf("the log's arguments say %s but PRECISION=%s was given; the log's value is used", lp, tc.Precision))
		}
		tc.Precision = lp
	}
	if tc.Precision == "" {
		tc.Precision, tc.PrecisionAssumed = "bf16", true
		r.problem("precision_assumed", "no precision given; bf16 assumed for the MFU peak (set PRECISION=bf16|fp16|fp8|fp4)")
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
	r.evaluations(log)
	r.logInfo(log)
	r.Log.Digest = facts.LogDigest
	if err := r.performance(log, facts, model, haveModel); err != nil {
		return nil, err
	}
	r.memory(log)
	return r, nil
}

// noTimeAdvice says, for a log whose steps print no time, what to do:
// NeMo's progress lines have no end marker, so a wrapped one cannot be
// rejoined by the parser as Megatron's "|"-terminated lines can.
func noTimeAdvice(log *logparse.Log) string {
	switch log.Framework {
	case logparse.NeMo:
		return ": NeMo prints train_step_timing at the end of its progress line, and a wrapped line loses it; " + logparse.NeMoRejoinAdvice
	case logparse.Megatron, logparse.Primus, logparse.MegatronBridge, logparse.MegatronDeepSpeed:
		return ": the iteration lines carry no \"elapsed time per iteration\"; if they were wrapped, rejoin them (extract -v names the lines) and extract again"
	}
	return ""
}

// joinAnd is "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
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
			if g.Driver != "" {
				d := g.Driver
				r.GPUInfo.DriverVersion = &d
			}
		}
	}
	switch platform {
	case "", hw.PlatformNVIDIA, hw.PlatformAMD, hw.PlatformCPU:
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
		} else if platform != hw.PlatformCPU {
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
	if got := r.loggedShapeDiffers(m, pre); got != "" {
		r.problem("model_shape_differs", got)
		return m, false
	}
	if r.Model.ParameterCount == nil {
		n := m.Params()
		exact := true
		r.Model.ParameterCount, r.Model.ParameterCountExact = &n, &exact
	}
	return m, true
}

// shapeTolerance is how far a logged whole-model parameter count may stand from
// the registry's before the log is taken to have trained another shape: vocabulary
// padding (Qwen 2.5's 151,680 rows against config.json's 152,064) moves a count by
// under 0.3% even on the proxies; a changed layer count or width moves it by far more.
const shapeTolerance = 0.02

// loggedShapeDiffers says why the model the log printed is not MODEL, or "" when
// it is or cannot be told: only an exact count from one rank holding the whole
// model (TP = PP = 1) is a whole-model count.
func (r *Result) loggedShapeDiffers(m models.Model, pre logparse.Preamble) string {
	if pre.ParameterCount == nil || !pre.ParameterCountExact {
		return ""
	}
	one := func(p *int) bool { return p == nil || *p == 1 }
	if !one(r.ParallelismConfig.TensorParallel) || !one(r.ParallelismConfig.PipelineParallel) {
		return ""
	}
	want, got := float64(m.Params()), float64(*pre.ParameterCount)
	if want <= 0 || math.Abs(got-want)/want <= shapeTolerance {
		return ""
	}
	return fmt.Sprintf("the log's model has %d parameters, %s has %d (%+.0f%%): the run trained another shape "+
		"(fewer layers or other widths), so tflops_per_gpu and mfu_percent are not computed; "+
		"set MODEL to the model the log trained, or compare such runs by tokens/s only",
		*pre.ParameterCount, m.DisplayName, m.Params(), 100*(got-want)/want)
}

// series copies the step curve: every step, or every log.CurveStride-th step of a
// log with more than logparse.CurvePoints steps.
func (r *Result) series(log *logparse.Log) {
	n := len(log.Curve)
	r.StepNumbers = make([]int, n)
	r.StepTimes = make([]*float64, n)
	r.LossValues = make([]*float64, n)
	r.LearningRates = make([]*float64, n)
	r.GradNorms = make([]*float64, n)
	r.StepSeriesStride = max(1, log.CurveStride)
	for i, s := range log.Curve {
		r.StepNumbers[i] = s.Step
		r.StepTimes[i] = s.StepTimeSeconds
		r.LossValues[i] = s.Loss
		r.LearningRates[i] = s.LearningRate
		r.GradNorms[i] = s.GradNorm
	}
	if r.StepSeriesStride > 1 {
		r.problem("step_series_decimated", fmt.Sprintf("%d steps logged: the step arrays hold every %dth step; the statistics use all of them", log.StepCount, r.StepSeriesStride))
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
	li.SkippedIterations += log.Tail.SkippedIterations
	li.NaNIterations += log.Tail.NaNIterations
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

// WarmupFactor: a leading step is warm-up while its time is above this multiple of
// the median of the steps after the first.
const WarmupFactor = 1.2

// warmupFound finds the warm-up from the data: the first step (it carries start-up
// work in every framework) and then every leading step slower than WarmupFactor ×
// the median of the rest, among the steps kept in full; never all steps. times[i]
// is 0 where step i printed no time.
func warmupFound(times []float64, ref float64, n int) int {
	if n <= 1 {
		return 0
	}
	w := 1
	for w < len(times) && times[w] > WarmupFactor*ref {
		w++
	}
	return min(w, n-1)
}

// stepTimes gives a per-step time reader: printed times, or times derived from the
// framework's tokens/s per GPU when no step prints one (TorchTitan).
func headTimes(steps []logparse.Step, derived bool, k float64) []float64 {
	out := make([]float64, len(steps))
	for i, s := range steps {
		switch {
		case !derived && s.StepTimeSeconds != nil && *s.StepTimeSeconds > 0:
			out[i] = *s.StepTimeSeconds
		case derived && s.TokensPerSecondPerGPU != nil && *s.TokensPerSecondPerGPU > 0:
			out[i] = k / *s.TokensPerSecondPerGPU
		}
	}
	return out
}

// performance computes the step-time statistics, throughput, TFLOP/s and MFU. The
// headline (tokens_per_second and the rest) uses the median step time of the
// measured steps, which a few slow steps (graph capture, checkpointing, a stall)
// cannot move; the mean is kept alongside.
func (r *Result) performance(log *logparse.Log, f Facts, m models.Model, haveModel bool) error {
	tc := r.TrainingConfig
	// Every missing fact at once: asking for one, then the next, costs a
	// run of extract per fact.
	var what, set []string
	for _, m := range []struct {
		missing        bool
		what, env, val string
	}{
		{tc.GlobalBatchSize == nil, "the global batch size", "GBS", "<sequences per step, e.g. 64>"},
		{tc.SequenceLength == nil, "the sequence length", "SL", "<tokens per sequence, e.g. 2048>"},
		{tc.NumGPUs == nil, "the GPU count", "GPUS", "<GPUs in the run, e.g. 8>"},
	} {
		if m.missing {
			what = append(what, m.what)
			set = append(set, m.env+"="+m.val)
		}
	}
	if len(what) > 0 {
		return fmt.Errorf("%w: tokens/s needs %s: the log does not print %s; set %s", ErrMissingFact, joinAnd(what), map[bool]string{true: "it", false: "them"}[len(what) == 1], strings.Join(set, " "))
	}
	gbs, sl, gpus := *tc.GlobalBatchSize, *tc.SequenceLength, *tc.NumGPUs
	for _, v := range []struct {
		name string
		n    int
	}{{"GBS", gbs}, {"SL", sl}, {"GPUS", gpus}} {
		if v.n <= 0 || v.n > factLimit[v.name] {
			return fmt.Errorf("build result from %s: %s=%d is outside 1..%d, more than any training run uses; check the log or the environment", log.Source, v.name, v.n, factLimit[v.name])
		}
	}
	tokensPerStep := int64(gbs) * int64(sl)
	// A derived step time is tokens per step / (tokens/s per GPU × GPUs).
	k := float64(tokensPerStep) / float64(gpus)

	pm := &r.PerformanceMetrics
	pm.StepTimeSource = "log"
	derived := false
	var printed logparse.Aggregate
	for i := range log.Steps {
		printed.AddStep(&log.Steps[i])
	}
	printed.Merge(&log.Tail)
	if printed.StepTime.Count() == 0 {
		if printed.InvTokensPerGPU.Count() == 0 {
			return fmt.Errorf("build result: no step in %s prints a step time or tokens/s (%d steps)%s", log.Source, log.StepCount, noTimeAdvice(log))
		}
		// TorchTitan prints tokens/s per device, not step time.
		derived = true
		pm.StepTimeSource = "derived_from_framework_tokens_per_second"
		r.problem("step_time_derived", "the log prints no step time; it is derived from the framework's tokens/s per GPU, GBS, SL and GPUS")
	}

	n := log.StepCount
	head := headTimes(log.Steps, derived, k)
	var w int
	if f.WarmupSteps != nil {
		w = min(max(0, *f.WarmupSteps), len(log.Steps), max(0, n-1))
		r.warmupRule = fmt.Sprintf("the run's configuration names %d warm-up step(s)", *f.WarmupSteps)
	} else {
		// the median of every step after the first, in the head's unit
		sc, tail := 1.0, log.Tail.StepTime
		if derived {
			sc, tail = k, log.Tail.InvTokensPerGPU
		}
		var rest logparse.Dist
		for _, t := range head[min(1, len(head)):] {
			rest.Add(t / sc)
		}
		rest.Merge(&tail)
		ref := rest.Summary().Median * sc
		w = warmupFound(head, ref, n)
		r.warmupRule = fmt.Sprintf("the first logged step, and every following step slower than %.1f× the median of the steps after the first (%.4g s)", WarmupFactor, ref)
		if w == 0 && n > 0 {
			r.problem("warmup_included", fmt.Sprintf("only %d logged step(s): no warm-up step could be excluded", n))
		}
		if w > 1 {
			r.problem("warmup_found", fmt.Sprintf("the first %d steps are slower than %.1f× the median of the others and are left out as warm-up", w, WarmupFactor))
		}
	}
	r.WarmupStepsExcluded = w

	var measured logparse.Aggregate
	for i := w; i < len(log.Steps); i++ {
		measured.AddStep(&log.Steps[i])
	}
	measured.Merge(&log.Tail)
	dist := measured.StepTime
	scale := 1.0
	if derived {
		dist, scale = measured.InvTokensPerGPU, k
	}
	if dist.Count() == 0 {
		return fmt.Errorf("build result: no measured step in %s prints a step time or tokens/s (%d steps, %d warm-up)", log.Source, n, w)
	}
	if dist.Count() < 5 {
		r.problem("few_measured_steps", fmt.Sprintf("statistics over %d step(s) only", dist.Count()))
	}
	st := dist.Summary()
	pm.MeasuredSteps = st.Count
	pm.AvgStepTimeSeconds, pm.MedianStepTimeSeconds = st.Mean*scale, st.Median*scale
	pm.P10StepTimeSeconds, pm.P90StepTimeSeconds = st.P10*scale, st.P90*scale
	pm.MinStepTimeSeconds, pm.MaxStepTimeSeconds, pm.StdStepTimeSeconds = st.Min*scale, st.Max*scale, st.Std*scale
	pm.QuantilesExact = st.Exact
	pm.HeadlineStatistic = "median_step_time"
	headline := pm.MedianStepTimeSeconds
	pm.StepsPerSecond = 1 / headline
	pm.TokensPerStep = tokensPerStep
	pm.TokensPerSecond = float64(tokensPerStep) / headline
	pm.TokensPerSecondPerGPU = pm.TokensPerSecond / float64(gpus)
	pm.TokensPerSecondPerGPUMean = float64(tokensPerStep) / pm.AvgStepTimeSeconds / float64(gpus)
	if err := sane(log.Source, pm); err != nil {
		return err
	}
	if gap := pm.AvgStepTimeSeconds/pm.MedianStepTimeSeconds - 1; math.Abs(gap) > 0.10 {
		r.problem("step_time_outliers", fmt.Sprintf(
			"the mean step time %.4g s is %.0f%% away from the median %.4g s (slow steps: max %.4g s); the headline uses the median, the mean gives %.1f tokens/s/GPU",
			pm.AvgStepTimeSeconds, 100*gap, pm.MedianStepTimeSeconds, pm.MaxStepTimeSeconds, pm.TokensPerSecondPerGPUMean))
	}

	pm.FrameworkReportedTFLOPsPerGPU = measured.FrameworkTFLOPs.Value()
	pm.FrameworkReportedTokensPerSecondPerGPU = measured.FrameworkTokens.Value()
	pm.FrameworkReportedMFUPercent = measured.FrameworkMFU.Value()

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
	if fw := pm.FrameworkReportedTokensPerSecondPerGPU; fw != nil && !derived {
		gap := 100 * (*fw - pm.TokensPerSecondPerGPU) / pm.TokensPerSecondPerGPU
		if math.IsInf(gap, 0) || math.IsNaN(gap) {
			return fmt.Errorf("build result from %s: the framework's tokens/s/GPU %g cannot be compared with %g; the log's tokens/s values are not real ones", log.Source, *fw, pm.TokensPerSecondPerGPU)
		}
		pm.FrameworkTokensPerSecondGapPercent = &gap
		if math.Abs(gap) > 10 {
			r.problem("tokens_per_second_inconsistent", fmt.Sprintf(
				"the framework prints %.1f tokens/s/GPU (mean over the measured steps) but GBS×SL/median step time/GPUS gives %.1f (%+.0f%%; the mean step time gives %.1f): check GBS, SL and GPUS",
				*fw, pm.TokensPerSecondPerGPU, gap, pm.TokensPerSecondPerGPUMean))
		}
	}
	return nil
}

// factLimit bounds the run facts, far above any real run (16 Mi sequences per step,
// 16 Mi tokens per sequence, 1 Mi GPUs) so that tokens per step (at most 2^48) and
// every rate derived from it stay exact in an int64 and finite in a float64.
var factLimit = map[string]int{"GBS": 1 << 24, "SL": 1 << 24, "GPUS": 1 << 20, "MBS": 1 << 24}

// Step times outside [minStepTime, maxStepTime] seconds are no real training step
// (a nanosecond, or about 115 days) and would make the rates meaningless or infinite.
const (
	minStepTime = 1e-9
	maxStepTime = 1e7
)

// sane refuses a headline or derived figure that is not finite or is absurd, naming
// the log and the field, before it can reach a result file.
func sane(source string, pm *PerformanceMetrics) error {
	for _, v := range []struct {
		name string
		x    float64
	}{
		{"median step time", pm.MedianStepTimeSeconds}, {"mean step time", pm.AvgStepTimeSeconds},
		{"min step time", pm.MinStepTimeSeconds}, {"max step time", pm.MaxStepTimeSeconds},
	} {
		if math.IsNaN(v.x) || v.x < minStepTime || v.x > maxStepTime {
			return fmt.Errorf("build result from %s: the %s is %g s, outside %g..%g s: the log's step times are not real ones (check the \"elapsed time\" or tokens/s values it prints)",
				source, v.name, v.x, minStepTime, maxStepTime)
		}
	}
	for _, v := range []struct {
		name string
		x    float64
	}{
		{"steps per second", pm.StepsPerSecond}, {"tokens per second", pm.TokensPerSecond},
		{"tokens per second per GPU", pm.TokensPerSecondPerGPU}, {"tokens per second per GPU (mean)", pm.TokensPerSecondPerGPUMean},
		{"p10 step time", pm.P10StepTimeSeconds}, {"p90 step time", pm.P90StepTimeSeconds}, {"step time std", pm.StdStepTimeSeconds},
	} {
		if math.IsNaN(v.x) || math.IsInf(v.x, 0) {
			return fmt.Errorf("build result from %s: the %s is %g: the log's step times are not real ones", source, v.name, v.x)
		}
	}
	return nil
}

// memory takes per-GPU peaks over the steps and the one-off memory reports.
func (r *Result) memory(log *logparse.Log) {
	mm := &r.MemoryMetrics
	upd := func(dst **float64, v *float64) {
		if v != nil && (*dst == nil || *v > **dst) {
			*dst = f64p(*v)
		}
	}
	// A fresh aggregate: copying log.Tail would share its histogram (slice and
	// sketch map), and adding the head steps would then write into the log.
	var all logparse.Aggregate
	for i := range log.Steps {
		all.AddStep(&log.Steps[i])
	}
	all.Merge(&log.Tail)
	upd(&mm.PeakAllocatedMiB, all.PeakAllocatedMiB)
	upd(&mm.PeakReservedMiB, all.PeakReservedMiB)
	upd(&mm.PeakDeviceUsedMiB, all.PeakDeviceUsedMiB)
	upd(&mm.DeviceTotalMiB, all.DeviceTotalMiB)
	upd(&mm.PeakUsedFraction, all.PeakUsedFraction)
	for _, n := range log.Memory {
		upd(&mm.PeakAllocatedMiB, n.MaxAllocatedMiB)
		upd(&mm.PeakAllocatedMiB, n.AllocatedMiB)
		upd(&mm.PeakReservedMiB, n.MaxReservedMiB)
		upd(&mm.PeakReservedMiB, n.ReservedMiB)
	}
}

// logPrecision reads the training precision from Megatron's printed arguments: fp4
// when an fp4 format is set (--fp4-format, Megatron Core 0.15 and later: its MLPerf
// NVFP4 runs), else fp8 when an fp8 format is (their runs also set bf16), else fp16 or
// bf16 when true; "" when the log does not say.
func logPrecision(args map[string]string) string {
	for _, p := range []string{"fp4", "fp8"} {
		if v := strings.ToLower(strings.TrimSpace(args[p])); v != "" && v != "none" && v != "false" {
			return p
		}
	}
	for _, p := range []string{"fp16", "bf16"} {
		if strings.EqualFold(strings.TrimSpace(args[p]), "true") {
			return p
		}
	}
	return ""
}

// evaluations copies the log's held-out evaluations, with the samples and tokens seen before each.
func (r *Result) evaluations(log *logparse.Log) {
	tc := r.TrainingConfig
	for _, e := range log.Evaluations {
		out := Evaluation{Set: e.Set, Step: e.Step, Loss: e.Loss, WallSeconds: e.ClockSeconds, TrainSeconds: e.TrainSeconds}
		if ppl := math.Exp(e.Loss); !math.IsInf(ppl, 0) {
			out.Perplexity = &ppl
		}
		switch {
		case e.Samples != nil:
			n := *e.Samples
			out.SamplesSeen = &n
		case tc.GlobalBatchSize != nil:
			n := int64(e.Step) * int64(*tc.GlobalBatchSize)
			out.SamplesSeen = &n
		}
		if out.SamplesSeen != nil && tc.SequenceLength != nil && *tc.SequenceLength > 0 && *out.SamplesSeen <= math.MaxInt64/int64(*tc.SequenceLength) {
			n := *out.SamplesSeen * int64(*tc.SequenceLength)
			out.TokensSeen = &n
		}
		r.Evaluations = append(r.Evaluations, out)
	}
	if m := log.MLPerf; m != nil {
		run := &MLPerfRun{Benchmark: m.Benchmark, Org: m.Org, Platform: m.Platform, TargetLoss: m.TargetLoss,
			Status: m.Status, BlockConvention: m.BlockConvention}
		if m.RunSeconds != nil {
			x := *m.RunSeconds / 60
			run.RunMinutes = &x
		}
		r.MLPerf = run
	}
}
