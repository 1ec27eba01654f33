package compare

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/spec"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
)

// fairnessFields are compared between groups, in this order.
var fairnessFields = []string{
	"precision", "tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel",
	"global_batch_size", "micro_batch_size", "sequence_length", "num_gpus",
	"dataset", "dataset_fingerprint", "tokenizer_fingerprint", "config_fingerprint",
	"framework", "framework_version", "image_digest",
}

// setupFields are the hyperparameters and data: two groups are identical
// configuration only when every one is recorded and equal on both sides.
// The remaining fairness fields are the software stack.
var setupFields = fairnessFields[:13]

// setupNames are how the headline names a differing setup field.
var setupNames = map[string]string{
	"precision": "precision", "tensor_parallel": "TP", "pipeline_parallel": "PP", "context_parallel": "CP",
	"data_parallel": "DP", "global_batch_size": "GBS", "micro_batch_size": "MBS", "sequence_length": "SL",
	"num_gpus": "GPUs", "dataset": "dataset", "dataset_fingerprint": "dataset fingerprint",
	"tokenizer_fingerprint": "tokenizer fingerprint", "config_fingerprint": "config fingerprint",
}

const unknown = "unknown"

func strOr(p *string, d string) string {
	if p == nil || *p == "" {
		return d
	}
	return *p
}

func intStr(p *int) string {
	if p == nil {
		return unknown
	}
	return fmt.Sprint(*p)
}

// effectivePrefix starts the configuration keys of a run's effective configuration (what the
// framework built, frameworks/effective), one per field: "effective.norm_eps".
const effectivePrefix = "effective."

func configOf(r *result.Result) map[string]string {
	prec := r.TrainingConfig.Precision
	if r.TrainingConfig.PrecisionAssumed {
		prec += " (assumed)"
	}
	c := requestedConfigOf(r, prec)
	for _, f := range effective.Fields() {
		c[effectivePrefix+f] = unknown
		if r.EffectiveConfig != nil {
			if v, ok := r.EffectiveConfig.Value(f); ok {
				c[effectivePrefix+f] = v
			}
		}
	}
	return c
}

func requestedConfigOf(r *result.Result, prec string) map[string]string {
	return map[string]string{
		"precision":             strOr(&prec, unknown),
		"tensor_parallel":       intStr(r.ParallelismConfig.TensorParallel),
		"pipeline_parallel":     intStr(r.ParallelismConfig.PipelineParallel),
		"context_parallel":      intStr(r.ParallelismConfig.ContextParallel),
		"data_parallel":         intStr(r.ParallelismConfig.DataParallel),
		"global_batch_size":     intStr(r.TrainingConfig.GlobalBatchSize),
		"micro_batch_size":      intStr(r.TrainingConfig.MicroBatchSize),
		"sequence_length":       intStr(r.TrainingConfig.SequenceLength),
		"num_gpus":              intStr(r.TrainingConfig.NumGPUs),
		"dataset":               strOr(r.Dataset.Name, unknown),
		"dataset_fingerprint":   strOr(r.Dataset.Fingerprint, unknown),
		"tokenizer_fingerprint": strOr(r.TokenizerFingerprint, unknown),
		"config_fingerprint":    strOr(r.ConfigFingerprint, unknown),
		"framework":             r.Framework.Name,
		"framework_version":     strOr(r.Framework.Version, unknown),
		"image_digest":          strOr(r.ImageDigest, unknown),
	}
}

// setupKey is the recorded configuration runs must share to be pooled.
func setupKey(r *result.Result) string {
	c := configOf(r)
	var parts []string
	for _, f := range []string{"precision", "sequence_length", "global_batch_size", "micro_batch_size", "tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel", "num_gpus"} {
		parts = append(parts, c[f])
	}
	return strings.Join(parts, "/")
}

// provConfig reads a provenance.config key, "" when absent.
func provConfig(r *result.Result, key string) string {
	if r.Provenance == nil {
		return ""
	}
	return r.Provenance.Config[key]
}

// setupLine is the configuration line of a result: precision and FP8 recipe,
// SL, GBS, MBS, GA, TP/PP/CP/DP, GPUs, DDP or FSDP, recompute.
func setupLine(r *result.Result) string {
	q := func(p *int) string {
		if p == nil {
			return "?"
		}
		return fmt.Sprint(*p)
	}
	tc, pc := r.TrainingConfig, r.ParallelismConfig
	prec := strOr(&tc.Precision, "?")
	if tc.PrecisionAssumed {
		prec += " (assumed)"
	}
	var notRecorded []string
	if strings.EqualFold(tc.Precision, "fp8") {
		if rec := provConfig(r, "FP8_RECIPE"); rec != "" {
			prec += " " + rec
		} else {
			notRecorded = append(notRecorded, "FP8 recipe")
		}
	}
	ga := "?"
	if tc.GlobalBatchSize != nil && tc.MicroBatchSize != nil && pc.DataParallel != nil && *tc.MicroBatchSize > 0 && *pc.DataParallel > 0 {
		ga = fmt.Sprint(*tc.GlobalBatchSize / (*tc.MicroBatchSize * *pc.DataParallel))
	}
	gpus := "?"
	if n := gpuCount(r); n > 0 {
		gpus = plural(n, "GPU")
	}
	if r.Platform != nil && *r.Platform == hw.PlatformCPU {
		gpus = "CPU" + cpuUse(r)
	}
	s := fmt.Sprintf("%s, SL %s, GBS %s, MBS %s, GA %s, TP %s PP %s CP %s DP %s, %s", prec, q(tc.SequenceLength), q(tc.GlobalBatchSize),
		q(tc.MicroBatchSize), ga, q(pc.TensorParallel), q(pc.PipelineParallel), q(pc.ContextParallel), q(pc.DataParallel), gpus)
	for _, k := range []struct{ key, name string }{{"SHARDING", "DDP/FSDP"}, {"RECOMPUTE", "recompute"}} {
		if v := provConfig(r, k.key); v != "" {
			s += ", " + k.name + " " + v
		} else {
			notRecorded = append(notRecorded, k.name)
		}
	}
	if len(notRecorded) > 0 {
		s += " (not recorded: " + strings.Join(notRecorded, ", ") + ")"
	}
	return s
}

// stackLine is the software stack of a result: framework and version, the
// platform stack when only that was recorded (old suite), image.
func stackLine(in *Input) string {
	r := in.Result
	img := "no image (host run)"
	if r.ImageDigest != nil && *r.ImageDigest != "" {
		img = "image " + truncate(*r.ImageDigest, 19)
	}
	fw := fmt.Sprintf("%s %s", frameworkLabel(r.Framework.Name), strOr(r.Framework.Version, "version not recorded"))
	if in.PlatformStack != "" {
		fw += " (platform stack " + in.PlatformStack + ")"
	}
	return fw + ", " + img
}

// plural is "1 GPU", "8 GPUs".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// frameworkNames are what reports call each framework, by name and alias (the framework table,
// frameworks/spec).
var frameworkNames = spec.FrameworkLabels()

// frameworkTargets are the framework arguments of train:run, by name and alias.
var frameworkTargets = spec.FrameworkTargets()

func frameworkLabel(name string) string {
	if l, ok := frameworkNames[strings.ToLower(name)]; ok {
		return l
	}
	return name
}

// reproduceCommand is the command that reruns a result's configuration:
// every recorded configuration key whose value differs from defaults set in
// front of the train:run target, in key order. The keys come from
// provenance.config (runs Rival launched), else from what the result
// records (training_config, parallelism_config: extracted and imported
// results). With nil defaults every recorded key is set.
func reproduceCommand(r *result.Result, defaults map[string]string) string {
	cmd, _ := reproduce(r, defaults)
	return cmd
}

// DemoDataset is the dataset name the demo's results record: the sample
// corpus shipped in testdata/sample.
const DemoDataset = "sample"

// reproduceKeys are the configuration keys a result without
// provenance.config does not record, so a rerun takes their defaults.
var reproduceKeys = []string{"SEED", "LR", "MIN_LR", "WEIGHT_DECAY", "WARMUP_STEPS", "DATASET"}

// reproduce is reproduceCommand and, for a result without
// provenance.config, what it could not recover ("" when it used
// provenance.config).
func reproduce(r *result.Result, defaults map[string]string) (cmd, unrecovered string) {
	if strOr(r.Dataset.Name, "") == DemoDataset && platformOf(r) == hw.PlatformCPU {
		// The demo trains the shipped sample corpus, which no train target
		// uses: the demo is what reruns it.
		return "go run mage.go demo", ""
	}
	fw := strOr(r.Framework.Requested, r.Framework.Name)
	if t, ok := frameworkTargets[strings.ToLower(fw)]; ok {
		fw = t
	}
	cfg := map[string]string{}
	if r.Provenance != nil && len(r.Provenance.Config) > 0 {
		cfg = r.Provenance.Config
	} else {
		cfg, unrecovered = recordedConfig(r)
	}
	var env []string
	for k, v := range cfg {
		if d, ok := defaults[k]; ok && d == v {
			continue
		}
		env = append(env, k+"="+shellQuote(v))
	}
	sort.Strings(env)
	if len(env) > 0 {
		env = append(env, "")
	}
	return fmt.Sprintf("%sgo run mage.go train:run %s %s %s", strings.Join(env, " "), shellQuote(platformOf(r)), shellQuote(fw), shellQuote(modelKey(r))), unrecovered
}

// recordedConfig maps what a result records onto configuration keys: SL,
// GBS, MBS, PRECISION (unless assumed), TP, PP, DP, GA = GBS / (MBS × DP)
// and TRAIN_ITERS. missing names what a rerun cannot take from it.
func recordedConfig(r *result.Result) (cfg map[string]string, missing string) {
	cfg = map[string]string{}
	tc, pc := r.TrainingConfig, r.ParallelismConfig
	var miss []string
	set := func(key string, p *int) {
		if p != nil && *p > 0 {
			cfg[key] = strconv.Itoa(*p)
		} else {
			miss = append(miss, key)
		}
	}
	set("SL", tc.SequenceLength)
	set("GBS", tc.GlobalBatchSize)
	set("MBS", tc.MicroBatchSize)
	set("TP", pc.TensorParallel)
	set("PP", pc.PipelineParallel)
	set("DP", pc.DataParallel)
	set("TRAIN_ITERS", tc.TrainIters)
	if tc.Precision != "" && !tc.PrecisionAssumed {
		cfg["PRECISION"] = strings.ToLower(tc.Precision)
	} else {
		miss = append(miss, "PRECISION")
	}
	if tc.GlobalBatchSize != nil && tc.MicroBatchSize != nil && pc.DataParallel != nil && *tc.MicroBatchSize > 0 && *pc.DataParallel > 0 && *tc.GlobalBatchSize%(*tc.MicroBatchSize**pc.DataParallel) == 0 {
		cfg["GA"] = strconv.Itoa(*tc.GlobalBatchSize / (*tc.MicroBatchSize * *pc.DataParallel))
	} else {
		miss = append(miss, "GA")
	}
	if cp := pc.ContextParallel; cp != nil && *cp > 1 {
		miss = append(miss, fmt.Sprintf("CP %d (no configuration key)", *cp))
	}
	if tc.Precision == "fp8" {
		miss = append(miss, "FP8 recipe")
	}
	miss = append(miss, reproduceKeys...)
	return cfg, "built from training_config; not recorded, left at their defaults: " + strings.Join(miss, ", ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but letters,
// digits and -_.,:/+@%=.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.,:/+@%=", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func platformOf(r *result.Result) string { return strOr(r.Platform, unknown) }

func gpuOf(r *result.Result) string {
	if s := resolveSpec(r); s != "" {
		return s
	}
	if platformOf(r) == hw.PlatformCPU && r.GPUInfo.DeviceName == nil {
		return "CPU"
	}
	return strOr(r.GPUInfo.DeviceName, "unknown GPU")
}

func modelKey(r *result.Result) string { return strOr(r.Model.Name, unknown) }

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

func isProxy(r *result.Result) bool {
	if r.Model.Proxy != nil {
		return *r.Model.Proxy
	}
	if r.Model.Name != nil {
		if m, err := models.Lookup(*r.Model.Name); err == nil {
			return m.Proxy
		}
	}
	return false
}

func groupKey(r *result.Result) GroupKey {
	return GroupKey{
		Platform: platformOf(r), GPU: gpuOf(r), Framework: r.Framework.Name, Model: modelKey(r),
		Dataset:           strOr(r.Dataset.Name, unknown) + "@" + strOr(r.Dataset.Fingerprint, unknown),
		ConfigFingerprint: strOr(r.ConfigFingerprint, unknown),
		Setup:             setupKey(r),
	}
}

// shortGPU drops the form factor for headlines ("H100 SXM" → "H100").
// cpuName is a CPU run's processor where a GPU's name would stand in a
// group's label, " (Xeon Platinum 8370C)"; "" when the result records none.
func cpuName(r *result.Result) string {
	if r.CPUInfo == nil || platformOf(r) != hw.PlatformCPU {
		return ""
	}
	m := r.CPUInfo.Model
	for _, cut := range []string{"(R)", "(TM)", "(tm)", "Intel ", "AMD ", " Processor"} {
		m = strings.ReplaceAll(m, cut, "")
	}
	if i := strings.Index(m, " CPU @"); i > 0 {
		m = m[:i]
	}
	return " (" + strings.Join(strings.Fields(m), " ") + ")"
}

// cpuUse is what a CPU run used of its processor, for the configuration
// line where a GPU run gives its GPU count: ": Intel(R) Xeon(R) Platinum
// 8370C CPU @ 2.80GHz, 2 cores / 4 threads, 2 processes × 1 thread".
func cpuUse(r *result.Result) string {
	c := r.CPUInfo
	if c == nil {
		return ""
	}
	s := fmt.Sprintf(" %s, %s / %s, %s", c.Model, plural(c.Cores, "core"), plural(c.LogicalCPUs, "thread"), Plural(c.Processes, "process"))
	if c.ThreadsPerProcess != nil {
		s += " × " + plural(*c.ThreadsPerProcess, "thread")
	}
	return s
}

func shortGPU(gpu string) string {
	return strings.TrimSuffix(gpu, " SXM")
}

// disambiguate extends labels that would otherwise repeat within a model with
// what tells the groups apart: the recorded configuration, the config
// fingerprint, then the dataset.
func disambiguate(groups []*Group) {
	for _, extra := range []func(*Group) string{
		func(g *Group) string { return setupDiff(g, groups) },
		func(g *Group) string { return "cfg " + truncate(g.Key.ConfigFingerprint, 10) },
		func(g *Group) string { return "data " + truncate(g.Key.Dataset, 16) },
		func(g *Group) string { return g.Key.Platform },
	} {
		count := map[string]int{}
		for _, g := range groups {
			count[g.ModelLabel+"|"+g.Label]++
		}
		// Every repeated label is extended from the same starting point: extending
		// one before reading the next would leave the last of a pair unnamed.
		ext := map[*Group]string{}
		for _, g := range groups {
			if count[g.ModelLabel+"|"+g.Label] > 1 {
				if e := extra(g); e != "" {
					ext[g] = e
				}
			}
		}
		for g, e := range ext {
			g.Label += " [" + e + "]"
		}
	}
}

// setupDiff names the setup fields in which g differs from another group of
// the same label: "fp8, SL 4096".
func setupDiff(g *Group, groups []*Group) string {
	var parts []string
	for _, f := range []string{"precision", "sequence_length", "global_batch_size", "micro_batch_size", "tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel", "num_gpus"} {
		for _, h := range groups {
			if h != g && h.ModelLabel == g.ModelLabel && h.Label == g.Label && h.Config[f] != g.Config[f] {
				if f == "precision" {
					parts = append(parts, g.Config[f])
				} else {
					if f == "num_gpus" && (g.Key.Platform == hw.PlatformCPU || g.Key.GPU == "CPU") {
						n, _ := strconv.Atoi(g.Config[f])
						parts = append(parts, Plural(n, "process"))
					} else {
						parts = append(parts, setupNames[f]+" "+g.Config[f])
					}
				}
				break
			}
		}
	}
	return strings.Join(parts, ", ")
}

func (g *Group) compute(prices PriceTable) {
	var tps, total, step []float64
	var tf, mfu, ftf, fmfu []float64
	var pooled []float64
	configs := map[string][]string{}
	first := g.Runs[0].Input.Result
	g.Setup, g.Stack = setupLine(first), stackLine(g.Runs[0].Input)
	g.Proxy, g.CPU = isProxy(first), platformOf(first) == hw.PlatformCPU || g.Key.GPU == "CPU"
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
		// Zero is what a log that prints no TFLOP/s leaves behind, not a figure.
		if pm.FrameworkReportedTFLOPsPerGPU != nil && finite(*pm.FrameworkReportedTFLOPsPerGPU) && *pm.FrameworkReportedTFLOPsPerGPU > 0 {
			ftf = append(ftf, *pm.FrameworkReportedTFLOPsPerGPU)
		}
		if pm.FrameworkReportedMFUPercent != nil && finite(*pm.FrameworkReportedMFUPercent) && *pm.FrameworkReportedMFUPercent > 0 {
			fmfu = append(fmfu, *pm.FrameworkReportedMFUPercent)
		}
		pooled = append(pooled, measuredSteps(r)...)
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
		if n := gpuCount(r); n > 0 {
			g.NumGPUs = n
		}
	}
	g.Config = map[string]string{}
	for k, vs := range configs {
		sort.Strings(vs)
		if len(vs) == 1 {
			g.Config[k] = vs[0]
		} else {
			// Only the software stack or a fingerprint can vary inside a group.
			g.Config[k] = "mixed: " + strings.Join(vs, " | ")
		}
	}
	g.TPS, g.TotalTPS, g.StepTime = summarize(tps), summarize(total), summarize(step)
	sort.Float64s(pooled)
	g.StepSamples = pooled
	recorded := true
	for _, run := range g.Runs {
		recorded = recorded && recordsStatistics(run.Input.Result)
	}
	switch {
	case recorded && len(g.Runs) == 1:
		// The result's own figures, over every measured step (a long log's
		// step series is decimated).
		pm := first.PerformanceMetrics
		g.StepMedian, g.StepP10, g.StepP90 = pm.MedianStepTimeSeconds, pm.P10StepTimeSeconds, pm.P90StepTimeSeconds
		g.StepStatsRecorded = true
	case len(pooled) > 0:
		// Several runs: percentiles of the pooled steps, never a mean of
		// per-run percentiles (which describes no run).
		g.StepMedian, g.StepP10, g.StepP90 = percentile(pooled, 0.5), percentile(pooled, 0.1), percentile(pooled, 0.9)
	case len(g.Runs) == 1:
		pm := g.Runs[0].Input.Result.PerformanceMetrics
		g.StepMedian, g.StepP10, g.StepP90 = pm.MedianStepTimeSeconds, pm.P10StepTimeSeconds, pm.P90StepTimeSeconds
	}
	g.TFLOPs, g.MFU = meanPtr(tf), meanPtr(mfu)
	if len(tf) == len(g.Runs) {
		g.TFLOPsRuns = summarize(tf)
	}
	if sl := first.TrainingConfig.SequenceLength; sl != nil && first.Model.Name != nil {
		if m, err := models.Lookup(*first.Model.Name); err == nil {
			f := m.TrainFLOPsPerToken(*sl)
			g.FLOPsPerToken = &f
		}
	}
	if g.Proxy {
		// A proxy's few layers do not load the GPU as the real model does:
		// its MFU says nothing about the hardware.
		g.MFU, g.Peak, g.FrameworkMFU = nil, nil, nil
	}
	scores := outliers(tps)
	for i, run := range g.Runs {
		run.Outlier = scores[i]
	}
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
		if s, ok := hw.LookupSpec(g.Key.GPU); ok && s.MemoryGiB > 0 && *g.GPUMemoryMiB < PartitionShare*s.MemoryGiB*1024 {
			g.Partition = fmt.Sprintf("partition: %s GiB of the %s's %s GiB exposed (CPX/MIG); MFU is against the whole GPU's peak", num(*g.GPUMemoryMiB/1024, 1), g.Key.GPU, num(s.MemoryGiB, 0))
		}
	}
	if strings.Contains(strings.ToUpper(strOr(first.GPUInfo.DeviceName, "")), "MIG") {
		g.Partition = "partition: a MIG instance; MFU is against the whole GPU's peak"
	}

	// Energy: sampled power when every run has it, else the GPU's TDP.
	var watts []float64
	for _, run := range g.Runs {
		if w := sampledPower(run.Input.Result); w > 0 {
			watts = append(watts, w)
		}
	}
	switch {
	case len(watts) == len(g.Runs):
		g.PowerWatts, g.PowerSource = mean(watts), "sampled"
	case first.GPUInfo.TDPWatts != nil && *first.GPUInfo.TDPWatts > 0:
		g.PowerWatts, g.PowerSource = *first.GPUInfo.TDPWatts, "TDP estimate"
	default:
		if s, ok := hw.LookupSpec(g.Key.GPU); ok && s.TDPWatts > 0 {
			g.PowerWatts, g.PowerSource = s.TDPWatts, "TDP estimate"
		}
	}
	if g.PowerWatts > 0 && !g.Proxy {
		v := g.TPS.Mean * 3600 / g.PowerWatts
		g.TokensPerWh = &v
	}

	// Time and money for 1T tokens: GPU-hours = 10^12 / (tokens/s/GPU × 3600).
	// A proxy model or a CPU run says nothing about training the real model.
	g.GPUHoursPer1T = 1e12 / (g.TPS.Mean * 3600)
	if g.Proxy || g.CPU {
		return
	}
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

// sampledPower is the mean per-GPU power a run's sampler recorded, or 0.
func sampledPower(r *result.Result) float64 {
	pm := r.PowerMetrics
	if pm == nil || pm.Source == "none" || pm.Samples == 0 || pm.AvgPowerWattsPerGPU == nil || !finite(*pm.AvgPowerWattsPerGPU) {
		return 0
	}
	return *pm.AvgPowerWattsPerGPU
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

// effectiveFields are the fairness keys of the effective configuration, in effective.Fields order.
func effectiveFields() []string {
	var out []string
	for _, f := range effective.Fields() {
		out = append(out, effectivePrefix+f)
	}
	return out
}
