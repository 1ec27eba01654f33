package compare

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
)

func groupKey(r *result.Result) GroupKey {
	return GroupKey{
		Platform: platformOf(r), GPU: gpuOf(r), Framework: r.Framework.Name, Model: modelKey(r),
		Dataset:           strOr(r.Dataset.Name, unknown) + "@" + strOr(r.Dataset.Fingerprint, unknown),
		ConfigFingerprint: strOr(r.ConfigFingerprint, unknown),
		Setup:             setupKey(r),
	}
}

// stackKey is the software stack runs must share to be pooled: the framework
// version, and the platform stack an old-suite result records.
func stackKey(in *Input) string {
	s := strOr(in.Result.Framework.Version, "version not recorded")
	if st := in.Result.Framework.Stack; st != "" {
		s = st + ": " + s
	}
	if in.PlatformStack != "" {
		s += " (platform stack " + in.PlatformStack + ")"
	}
	return s
}

// stackLabel is the label part naming the pinned image of a run's stack (" nemo:26.06"), so every
// label of a GPU run says which stack it ran; empty where the result records none (cpu, extracted).
func stackLabel(r *result.Result) string {
	if r.Framework.Stack == "" {
		return ""
	}
	return " " + r.Framework.Stack
}

// disambiguate extends labels that would otherwise repeat within a model with
// what tells the groups apart: the recorded configuration, the config
// fingerprint, then the dataset.
func disambiguate(groups []*Group) {
	for _, extra := range []func(*Group) string{
		func(g *Group) string { g.stackTag = stackTag(g, groups); return g.stackTag },
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
						parts = append(parts, english.Plural(n, "process"))
					} else {
						parts = append(parts, fieldLabels[f]+" "+g.Config[f])
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

func (g *Group) name() string {
	if g.Marked {
		return g.Label + " †"
	}
	return g.Label
}

// DisplayName is the group's label with the configuration fields that set
// it apart from the other groups of its model ("CPU FSDP, DP 2, 2 processes").
func (s *ModelSection) DisplayName(g *Group) string {
	idx := -1
	for i, h := range s.Groups {
		if h == g {
			idx = i
		}
	}
	var parts []string
	version := ""
	for _, row := range s.Fairness {
		if !shownFields[row.Field] || idx < 0 {
			continue
		}
		v := row.Values[idx]
		switch {
		case row.Field == "framework_version":
			// A version tells groups apart only when nothing shorter does.
			version = fieldLabels[row.Field] + " " + clipWords(v, 24)
		case row.Field == "num_gpus":
			n := 0
			fmt.Sscan(v, &n)
			noun := "GPU"
			if g.Key.Platform == hw.PlatformCPU {
				noun = "process"
			}
			parts = append(parts, english.Plural(n, noun))
		case row.Field == "precision":
			// "bf16" names itself.
			parts = append(parts, v)
		default:
			parts = append(parts, fieldLabels[row.Field]+" "+v)
		}
	}
	if len(parts) == 0 && version != "" {
		parts = append(parts, version)
	}
	// Only groups whose labels would repeat are told apart by their fields.
	base, shared := baseLabel(g.Label), false
	// The fsdp trainer's path (" (ran DDP)") tells configurations apart by
	// what ran, not by how they were set: they are still named by their fields.
	stripRan := func(l string) string {
		if i := strings.Index(l, " (ran "); i > 0 {
			return l[:i]
		}
		return l
	}
	for _, h := range s.Groups {
		shared = shared || h != g && stripRan(baseLabel(h.Label)) == stripRan(base)
	}
	if !shared {
		parts = nil
		base = g.Label
	}
	if len(parts) > 0 {
		base += ", " + strings.Join(parts, ", ")
	}
	if g.Marked && len(parts) == 0 {
		base += " †"
	}
	return base
}

// baseLabel is a group label without the disambiguating " [cfg …]".
func baseLabel(l string) string {
	if i := strings.Index(l, " ["); i > 0 {
		return l[:i]
	}
	return l
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

// stackTag is the label extension of a group whose label another group of
// another software stack shares: the words of its stack the others lack, each
// with the name before it ("stack Megatron-LM b0cc2706, Core 0.18.0,
// nvcr.io/nvidia/nemo:26.06"); empty when every group of its label ran its
// stack.
func stackTag(g *Group, groups []*Group) string {
	var others []string
	for _, h := range groups {
		if h != g && h.ModelLabel == g.ModelLabel && h.Label == g.Label && h.Key.Stack != g.Key.Stack {
			others = append(others, h.Key.Stack)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return "stack " + truncate(distinctWords(g.Key.Stack, others), 80)
}

// distinctWords are the words of s that no other stack has, each after the
// name word before it when that is one ("torch 2.8.0"), comma-separated.
func distinctWords(s string, others []string) string {
	clean := func(w string) string { return strings.Trim(w, ",()[];") }
	seen := map[string]bool{}
	for _, o := range others {
		for _, w := range strings.Fields(o) {
			seen[clean(w)] = true
		}
	}
	words := strings.Fields(s)
	var parts []string
	for i, w := range words {
		w = clean(w)
		if w == "" || seen[w] {
			continue
		}
		part := w
		if i > 0 {
			if prev := clean(words[i-1]); len(prev) > 2 && seen[prev] && strings.IndexFunc(prev, func(r rune) bool { return r >= 'A' && r <= 'z' }) >= 0 {
				part = prev + " " + w
			}
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return s
	}
	return strings.Join(parts, ", ")
}
