package compare

import (
	"fmt"
	"strings"

	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// Timing windows a published figure is measured over.
const (
	// WindowRival is how Rival times a run: the median step time over the
	// measured steps, after the warm-up rule (docs/result-schema.md).
	WindowRival = "median step time after Rival's warm-up rule"
	// WindowLastStep: the last step of the run alone (dgxc-benchmarking).
	WindowLastStep = "last step"
	// WindowFixed: iterations FixedWindowFirst-FixedWindowLast of 50
	// (Megatron-Bridge's performance recipes).
	WindowFixed = "iterations 35-44 of 50"
	// WindowNotStated: the source does not say.
	WindowNotStated = "not stated"
)

// FLOP conventions: how the source counts a step's FLOPs (its TFLOP/s and
// MFU depend on it; tokens/s does not).
const (
	// FLOPsCausal halves attention's score and value products (Megatron's
	// current count, and Rival's: models.TrainFLOPsPerToken).
	FLOPsCausal = "causal attention"
	// FLOPsFull counts the full s² attention.
	FLOPsFull = "full (non-causal) attention"
)

// Data modes.
const (
	DataMock = "mock (synthetic tokens)"
	DataReal = "real dataset"
)

// AcceptanceShare and AcceptanceRuns are NVIDIA's acceptance rule for
// partners' runs of its benchmarks (NVIDIA/dgxc-benchmarking,
// Exemplar_validation.md): at least 95 % of the published baseline, over
// three runs.
const (
	AcceptanceShare = 0.95
	AcceptanceRuns  = 3
)

// AnchorSource is where a published figure comes from.
type AnchorSource struct {
	URL    string // a page, when the figure is published on one
	Repo   string // owner/name of the repository that holds it
	Path   string // file in Repo
	Commit string // commit of Repo the figure was read at; "" when not pinned
	Note   string // what else the source rests on (the recipe's pull request)
}

func (s AnchorSource) String() string {
	var parts []string
	if s.URL != "" {
		parts = append(parts, s.URL)
	}
	if s.Repo != "" {
		r := "github.com/" + s.Repo
		if s.Path != "" {
			r += " " + s.Path
		}
		if s.Commit != "" {
			r += " at " + s.Commit
		}
		parts = append(parts, r)
	}
	if s.Note != "" {
		parts = append(parts, s.Note)
	}
	return strings.Join(parts, "; ")
}

// Anchor is one published throughput figure with everything needed to
// hold a Rival result against it.
type Anchor struct {
	Name   string // "dgxc-benchmarking v25.04, Llama 3.1 8B BF16, 8×H100"
	Source AnchorSource
	Date   string // when it was published
	Image  string // container or software version the figure was measured with
	Model  string // models registry key ("llama" is Llama 3.1 8B)
	GPU    string // hw spec key ("H100 SXM")
	GPUs   int
	// Precision is "bf16" or "fp8"; FP8Recipe names the scaling ("current
	// scaling"), "" when BF16 or not stated.
	Precision, FP8Recipe string
	GBS, MBS, SL         int
	TP, PP, CP, DP, GA   int
	Sharding             string // "DDP", "Megatron-FSDP", "not stated"
	Recompute            string // activation recompute, "none", "not stated"
	Window               string // WindowLastStep, WindowFixed, WindowNotStated
	FLOPs                string // FLOPsCausal, FLOPsFull, or "not stated"
	Data                 string // DataMock, DataReal, or "not stated"
	TokensPerSecPerGPU   float64
	StepSeconds          float64 // the published step time, 0 when none
	PublishedTFLOPs      float64 // the source's own TFLOP/s/GPU, 0 when none
	PublishedMFU         float64 // the source's own MFU in percent, 0 when none
}

// Anchors are the published figures a report holds results against; every
// field comes from the anchor's source.
var Anchors = []Anchor{
	{
		Name: "Megatron-Bridge performance summary, NeMo 25.11, Llama 3 8B FP8-CS, 8×H100",
		Source: AnchorSource{
			URL:  "https://docs.nvidia.com/nemo/megatron-bridge/latest/performance-summary.html",
			Repo: "NVIDIA-NeMo/Megatron-Bridge", Path: "docs/performance-summary.md",
			Note: "recipe as shipped: scripts/performance llama3 8B H100 config after Megatron-Bridge PR #1348 (commit cb62f8620): CP 1 with recompute of 5 layers, not the table's Megatron-FSDP",
		},
		Date: "2025-11", Image: "NeMo 25.11 container", Model: "llama", GPU: "H100 SXM", GPUs: 8,
		Precision: "fp8", FP8Recipe: "current scaling", GBS: 128, MBS: 1, SL: 8192, TP: 1, PP: 1, CP: 1, DP: 8, GA: 16,
		Sharding: "DDP", Recompute: "5 layers", Window: WindowFixed, FLOPs: FLOPsCausal, Data: DataMock,
		TokensPerSecPerGPU: 14451, PublishedTFLOPs: 744,
	},
	{
		Name: "Megatron-Bridge performance summary, NeMo 25.09, Llama 3 8B FP8-CS, 8×H100",
		Source: AnchorSource{
			URL:  "https://docs.nvidia.com/nemo/megatron-bridge/latest/performance-summary-archive.html",
			Repo: "NVIDIA-NeMo/Megatron-Bridge", Path: "docs/performance-summary.md",
		},
		Date: "2025-09", Image: "NeMo 25.09 container", Model: "llama", GPU: "H100 SXM", GPUs: 8,
		Precision: "fp8", FP8Recipe: "current scaling", GBS: 128, MBS: 1, SL: 8192, TP: 1, PP: 1, CP: 1, DP: 8, GA: 16,
		Sharding: "Megatron-FSDP", Recompute: "not stated", Window: WindowFixed, FLOPs: FLOPsCausal, Data: DataMock,
		TokensPerSecPerGPU: 14079, PublishedTFLOPs: 725,
	},
	{
		Name:   "dgxc-benchmarking v25.04, Llama 3.1 8B BF16, 8×H100",
		Source: AnchorSource{Repo: "NVIDIA/dgxc-benchmarking", Path: "llama3.1/README.md", Commit: "741c886"},
		Date:   "2025-04", Image: "NeMo 25.02.01", Model: "llama", GPU: "H100 SXM", GPUs: 8,
		Precision: "bf16", GBS: 128, MBS: 1, SL: 8192, TP: 1, PP: 1, CP: 2, DP: 4, GA: 32,
		Sharding: "DDP", Recompute: "not stated", Window: WindowLastStep, FLOPs: FLOPsFull, Data: DataMock,
		TokensPerSecPerGPU: 10682, StepSeconds: 12.27, PublishedMFU: 62.47,
	},
	{
		Name:   "dgxc-benchmarking v25.04, Llama 3.1 8B FP8, 8×H100",
		Source: AnchorSource{Repo: "NVIDIA/dgxc-benchmarking", Path: "llama3.1/README.md", Commit: "741c886"},
		Date:   "2025-04", Image: "NeMo 25.02.01", Model: "llama", GPU: "H100 SXM", GPUs: 8,
		Precision: "fp8", FP8Recipe: "not stated", GBS: 128, MBS: 1, SL: 8192, TP: 1, PP: 1, CP: 2, DP: 4, GA: 32,
		Sharding: "DDP", Recompute: "not stated", Window: WindowLastStep, FLOPs: FLOPsFull, Data: DataMock,
		TokensPerSecPerGPU: 14049, StepSeconds: 9.33, PublishedMFU: 41.07,
	},
	{
		Name: "AMD ROCm performance results, Llama 3.1 8B FP8, MI325X, one node",
		Source: AnchorSource{
			URL:  "https://www.amd.com/en/developer/resources/rocm-hub/dev-ai/performance-results.html#ai-training",
			Repo: "AMD-AGI/Primus", Path: "docs_deprecated/tech_blogs/projection/projection.md",
			Note: "table \"MI325X — Dense Models (Llama 3.1)\"; 16,186 tokens/s/GPU measured on eight nodes",
		},
		Image: "AMD's Primus/Megatron stack", Model: "llama", GPU: "MI325X", GPUs: 8,
		Precision: "fp8", FP8Recipe: "not stated", MBS: 2, SL: 8192, TP: 1, PP: 1, CP: 1,
		Sharding: "DDP (no FSDP)", Recompute: "not stated", Window: WindowNotStated, FLOPs: "not stated", Data: "not stated",
		TokensPerSecPerGPU: 16224,
	},
}

func intOrQ(n int) string {
	if n == 0 {
		return "not stated"
	}
	return fmt.Sprint(n)
}

// Record is the anchor as one sourced line: every field, then Rival's
// TFLOP/s and MFU for its tokens/s.
func (a Anchor) Record() string {
	prec := strings.ToUpper(a.Precision)
	if a.FP8Recipe != "" {
		prec += " (" + a.FP8Recipe + ")"
	}
	date := a.Date
	if date == "" {
		date = "date not stated"
	}
	s := fmt.Sprintf("%s. Source: %s. Published %s; software %s. %s, %d× %s, %s, GBS %s, MBS %s, SL %s, TP %s PP %s CP %s DP %s, GA %s, sharding %s, recompute %s. Timing window: %s. FLOP convention: %s. Data: %s. **%s tokens/s/GPU**",
		a.Name, a.Source, date, a.Image, modelName(a.Model), a.GPUs, a.GPU, prec, intOrQ(a.GBS), intOrQ(a.MBS), intOrQ(a.SL),
		intOrQ(a.TP), intOrQ(a.PP), intOrQ(a.CP), intOrQ(a.DP), intOrQ(a.GA), a.Sharding, a.Recompute, a.Window, a.FLOPs, a.Data, num(a.TokensPerSecPerGPU, 0))
	if a.StepSeconds > 0 {
		s += fmt.Sprintf(" (%s s/step: GBS × SL / step / GPUs = %s)", num(a.StepSeconds, 2), num(float64(a.GBS*a.SL)/a.StepSeconds/float64(a.GPUs), 0))
	}
	var own []string
	if a.PublishedTFLOPs > 0 {
		own = append(own, num(a.PublishedTFLOPs, 0)+" TFLOP/s/GPU")
	}
	if a.PublishedMFU > 0 {
		own = append(own, num(a.PublishedMFU, 2)+"% MFU")
	}
	if len(own) > 0 {
		s += "; the source's own " + strings.Join(own, ", ")
	}
	s += ". " + a.rivalFLOPs()
	return s
}

func modelName(key string) string {
	if m, err := models.Lookup(key); err == nil {
		return m.DisplayName
	}
	return key
}

// rivalFLOPs is the anchor's TFLOP/s/GPU and MFU with Rival's causal
// formula and the spec table's peak.
func (a Anchor) rivalFLOPs() string {
	m, err := models.Lookup(a.Model)
	if err != nil {
		return ""
	}
	tf := m.TrainFLOPsPerToken(a.SL) * a.TokensPerSecPerGPU / 1e12
	peak, err := hw.PeakTFLOPs(a.GPU, a.Precision)
	if err != nil {
		return fmt.Sprintf("Rival's formula (causal) gives %s TFLOP/s/GPU.", num(tf, 1))
	}
	return fmt.Sprintf("Rival's formula (causal) gives %s TFLOP/s/GPU, %s%% MFU of the %s dense %s peak (%s TFLOP/s).", num(tf, 1), num(100*tf/peak, 1), a.GPU, strings.ToUpper(a.Precision), num(peak, 1))
}

// matches says whether a group ran the anchor's workload: the same model,
// GPU, GPU count, precision and sequence length.
func (a Anchor) matches(g *Group) bool {
	return g.Key.Model == a.Model && g.Key.GPU == a.GPU && g.NumGPUs == a.GPUs &&
		strings.EqualFold(g.Precision, a.Precision) && g.Config["sequence_length"] == fmt.Sprint(a.SL)
}

// differences lists every convention and setting in which the group's
// runs differ from the anchor's: timing window, data mode, FLOP
// convention, then batch and parallelism.
func (a Anchor) differences(g *Group) []string {
	out := []string{fmt.Sprintf("timing window: Rival's %s vs the source's %s", WindowRival, a.Window)}
	if a.Data != DataReal {
		out = append(out, fmt.Sprintf("data: Rival trains on a real dataset (%s) vs the source's %s", strings.SplitN(g.Key.Dataset, "@", 2)[0], a.Data))
	}
	if a.FLOPs != FLOPsCausal {
		out = append(out, fmt.Sprintf("FLOP convention: Rival's %s vs the source's %s (TFLOP/s and MFU differ; tokens/s does not)", FLOPsCausal, a.FLOPs))
	}
	for _, f := range []struct {
		name string
		key  string
		want int
	}{{"GBS", "global_batch_size", a.GBS}, {"MBS", "micro_batch_size", a.MBS}, {"TP", "tensor_parallel", a.TP}, {"PP", "pipeline_parallel", a.PP}, {"CP", "context_parallel", a.CP}, {"DP", "data_parallel", a.DP}} {
		if f.want == 0 {
			out = append(out, f.name+" not stated by the source")
		} else if g.Config[f.key] != fmt.Sprint(f.want) {
			out = append(out, fmt.Sprintf("%s %s vs %d", f.name, g.Config[f.key], f.want))
		}
	}
	if ga := gradAccum(g.Config); a.GA != 0 && ga != fmt.Sprint(a.GA) {
		out = append(out, fmt.Sprintf("GA %s vs %d", ga, a.GA))
	}
	first := g.Runs[0].Input.Result
	for _, k := range []struct{ key, name, want string }{{"SHARDING", "sharding", a.Sharding}, {"RECOMPUTE", "recompute", a.Recompute}, {"FP8_RECIPE", "FP8 recipe", a.FP8Recipe}} {
		if k.want == "" || k.want == "not stated" {
			continue
		}
		if v := runSetting(first, k.key); v == "" {
			out = append(out, fmt.Sprintf("%s not recorded by the runs (source: %s)", k.name, k.want))
		} else if !strings.EqualFold(v, k.want) {
			out = append(out, fmt.Sprintf("%s %s vs %s", k.name, v, k.want))
		}
	}
	return out
}

// AnchorLine is a group held against a published figure.
type AnchorLine struct {
	Anchor *Anchor
	Group  *Group
	// Ratio is measured ÷ published tokens/s/GPU; its interval is the
	// group's 95 % interval divided by the (fixed) published figure.
	Ratio Ratio
	// SameWindow is the ratio over the source's own window (the runs' last
	// step, or iterations 35-44) when every run logged it; nil otherwise.
	SameWindow *Ratio
	Accepted   string // NVIDIA's partner acceptance rule applied to Ratio
	Differs    []string
}

// anchorRatio divides a summary by a published constant.
func anchorRatio(s Summary, published float64) Ratio {
	r := Ratio{Value: s.Mean / published}
	if s.HasCI {
		r.HasCI = true
		r.Lo, r.Hi, r.Half, r.DF = s.CILo/published, s.CIHi/published, s.Half/published, float64(s.N-1)
	}
	return r
}

// lastStepTPS is a run's tokens/s/GPU over its last logged step.
func lastStepTPS(run *Run) (float64, bool) {
	r := run.Input.Result
	gbs, sl, gpus := r.TrainingConfig.GlobalBatchSize, r.TrainingConfig.SequenceLength, gpuCount(r)
	if gbs == nil || sl == nil || gpus == 0 || len(r.StepTimes) == 0 {
		return 0, false
	}
	t := r.StepTimes[len(r.StepTimes)-1]
	if t == nil || *t <= 0 || !finite(*t) {
		return 0, false
	}
	return float64(*gbs) * float64(*sl) / *t / float64(gpus), true
}

// AnchorLines holds every group against every anchor of its workload.
func (r *Report) AnchorLines() []AnchorLine {
	var out []AnchorLine
	for i := range Anchors {
		a := &Anchors[i]
		for _, g := range r.Groups {
			if !a.matches(g) {
				continue
			}
			l := AnchorLine{Anchor: a, Group: g, Ratio: anchorRatio(g.TPS, a.TokensPerSecPerGPU), Differs: a.differences(g)}
			var win []float64
			for _, run := range g.Runs {
				var v float64
				ok := false
				switch a.Window {
				case WindowLastStep:
					v, ok = lastStepTPS(run)
				case WindowFixed:
					if run.FixedWindowTPS != nil {
						v, ok = *run.FixedWindowTPS, true
					}
				}
				if ok {
					win = append(win, v)
				}
			}
			if len(win) == len(g.Runs) && len(win) > 0 {
				sw := anchorRatio(summarize(win), a.TokensPerSecPerGPU)
				l.SameWindow = &sw
			}
			l.Accepted = acceptance(g.TPS.N, l.Ratio)
			if !strings.HasPrefix(a.Source.Repo, "NVIDIA") {
				l.Accepted = "by the measure of " + l.Accepted + " (a vendor's own figure, not an NVIDIA baseline)"
			}
			out = append(out, l)
		}
	}
	return out
}

// acceptance applies NVIDIA's partner rule: at least AcceptanceRuns runs
// whose mean reaches AcceptanceShare of the baseline.
func acceptance(n int, r Ratio) string {
	rule := fmt.Sprintf("NVIDIA's partner acceptance rule (≥ %s of the baseline, %d runs)", num(AcceptanceShare, 2), AcceptanceRuns)
	switch {
	case n < AcceptanceRuns:
		return fmt.Sprintf("%s: not assessed, %s", rule, english.Plural(n, "run")+" (it needs 3)")
	case r.Value >= AcceptanceShare && (!r.HasCI || r.Lo >= AcceptanceShare):
		return rule + ": met"
	case r.Value >= AcceptanceShare:
		return rule + fmt.Sprintf(": met by the mean, but the interval reaches down to %s", num(r.Lo, 3))
	}
	return rule + ": not met"
}

// Text is the "measured ÷ published" line.
func (l AnchorLine) Text() string {
	s := fmt.Sprintf("%s (%s, n = %d) ÷ %s: measured ÷ published = %s", l.Group.name(), l.Group.Setup, l.Group.TPS.N, l.Anchor.Name, ratioCI(l.Ratio))
	if l.SameWindow != nil {
		s += fmt.Sprintf("; over the source's window (%s) %s", l.Anchor.Window, ratioCI(*l.SameWindow))
	}
	s += ". " + l.Accepted + ". Differs: " + strings.Join(l.Differs, "; ") + "."
	return s
}

// MLPerfRecord is one published MLPerf Training time-to-train score (mlperf_records.go).
type MLPerfRecord struct {
	Round, Submitter, System string
	Accelerators             int
	// Accelerator is the hw spec key ("GB300"); AcceleratorName as the system description names it.
	Accelerator, AcceleratorName string
	// Precision is "fp8", "fp4" or "bf16"; "" when the submission does not say (PrecisionSource then
	// says what was looked at).
	Precision, PrecisionSource string
	Software                   string
	// Minutes is the score: the olympic mean of the run times (run_stop − run_start) of RunsUsed
	// runs (10 submitted, the fastest and slowest dropped), times ScalingFactor where the submission
	// scales it.
	Minutes       float64
	RunsUsed      int
	ScalingFactor float64
	Source        AnchorSource
}
