package compare

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/result"

	"github.com/rivalbench/rival/hw"
)

// mdSpecial are the characters that Markdown (CommonMark with GitHub's
// tables) could read as markup inside a line; each is backslash-escaped.
const mdSpecial = "\\`*_[]<>|#~&!"

// mdEscape makes s literal text in a Markdown line or table cell: every
// markup character is backslash-escaped and line breaks become spaces.
func mdEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\n' || c == '\r':
			b.WriteByte(' ')
		case strings.ContainsRune(mdSpecial, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// mdCode is s as a Markdown code span: fenced by more backticks than the
// longest backtick run inside it, padded when it starts or ends with one.
func mdCode(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// md writes Markdown; every table cell goes through row, which escapes it.
type md struct{ w *bufio.Writer }

func (m md) p(format string, a ...any) { fmt.Fprintf(m.w, format, a...) }

func (m md) row(cells ...string) {
	for i := range cells {
		cells[i] = mdEscape(cells[i])
	}
	m.p("| %s |\n", strings.Join(cells, " | "))
}

// rowRaw writes a row whose cells the caller has already rendered.
func (m md) rowRaw(cells ...string) {
	m.p("| %s |\n", strings.Join(cells, " | "))
}

func (m md) header(cells ...string) {
	m.row(cells...)
	m.p("|%s\n", strings.Repeat("---|", len(cells)))
}

// WriteMarkdown writes report.md, one section after the other: summary,
// headlines, methodology, errors, per-model tables, inputs, skipped files,
// prices and published anchors. Output is deterministic for the same inputs.
func (r *Report) WriteMarkdown(w io.Writer) error {
	m := md{bufio.NewWriter(w)}
	r.writeSummary(m)
	r.writeWarnings(m)
	r.writeHeadlines(m)
	r.writeMethodology(m)
	r.writeErrors(m)
	for _, s := range r.Models {
		r.writeModel(m, s)
	}
	r.writeHistory(m)
	r.writeInputs(m)
	r.writeSkipped(m)
	r.writePrices(m)
	r.writeAnchors(m)
	return m.w.Flush()
}

func (r *Report) writeSummary(m md) {
	m.p("# Rival comparison report\n\n")
	pl := "platforms"
	if len(r.Platforms) == 1 {
		pl = "platform"
	}
	m.p("%s in %s, %s, %s: %s.", english.Plural(len(r.Inputs), "result"), english.Plural(len(r.Groups), "group"), english.Plural(len(r.Models), "model"), pl, mdEscape(strings.Join(r.Platforms, ", ")))
	if len(r.Errors) > 0 {
		m.p(" **%s in results: those runs are left out of every figure (see Errors).**", english.Plural(len(r.Errors), "error"))
	}
	if len(r.Skipped) > 0 {
		m.p(" %s could not be used (see Skipped).", english.Plural(len(r.Skipped), "file"))
	}
	m.p("\n\n")
}

func (r *Report) writeWarnings(m md) {
	if len(r.Warnings) == 0 {
		return
	}
	m.p("## Warnings\n\n")
	for _, w := range r.Warnings {
		m.p("- %s\n", mdEscape(w))
	}
	m.p("\n")
}

func (r *Report) writeHeadlines(m md) {
	m.p("## Headlines\n\n")
	for _, s := range r.Models {
		ccs := s.ConfigComparisons()
		if s.NoComparison != "" {
			more := ""
			if len(ccs) > 0 {
				more = "; its configurations are compared with each other"
			}
			m.p("- %s: %s%s.\n", mdEscape(s.Label), mdEscape(s.NoComparison), more)
		}
		for _, c := range ccs {
			m.p("- %s\n", mdEscape(c.Line(s)))
			if len(c.Differs) > 0 {
				m.p("  - differs: %s\n", mdEscape(strings.Join(c.Differs, "; ")))
			}
			if lp := c.Parity; lp != nil && lp.Available {
				verdict := "in parity"
				if lp.Diverged {
					verdict = "**diverged**"
				}
				m.p("  - loss: tail-mean gap %.2f%% over the last %s (largest step gap %.2f%% at step %d): %s\n", 100*lp.TailGap, english.Plural(lp.TailSteps, "step"), 100*lp.MaxGap, lp.AtStep, verdict)
				if lp.StepWise != nil {
					m.p("  - loss step by step (same batches): %s\n", stepCell(lp.StepWise))
				}
			}
		}
		if s.NoComparison != "" {
			continue
		}
		for _, h := range s.Headlines {
			m.p("- %s\n", mdEscape(h.Headline(s.Label)))
			for _, g := range []*Group{h.Faster, h.Slower} {
				m.p("  - %s: %s; %s\n", mdEscape(g.Label), mdEscape(g.Setup), mdEscape(g.Stack))
			}
			cf, uf := reproduce(firstRun(h.Faster), r.ConfigDefaults)
			cs, us := reproduce(firstRun(h.Slower), r.ConfigDefaults)
			m.p("  - evidence: %s; reproduce: %s and %s; check: %s\n", mdEscape(h.Evidence),
				mdCode(cf), mdCode(cs), mdCode("go run mage.go verify:results "+shellQuote(sourceOf(h.Faster))+" "+shellQuote(sourceOf(h.Slower))))
			for _, u := range []struct {
				g    *Group
				note string
			}{{h.Faster, uf}, {h.Slower, us}} {
				if u.note != "" {
					m.p("  - reproduce %s: %s\n", mdEscape(u.g.Label), mdEscape(u.note))
				}
			}
			m.p("  - warm-up sensitivity: %s with the results' recorded warm-up (see Methodology); ", mdEscape(h.Ratio.String()))
			if h.FixedWindow != nil {
				m.p("%s over NVIDIA's fixed window (iterations %d-%d of %d)\n", mdEscape(h.FixedWindow.String()), FixedWindowFirst, FixedWindowLast, FixedWindowRunLength)
			} else {
				m.p("NVIDIA's fixed window (iterations %d-%d of %d) not used: %s\n", FixedWindowFirst, FixedWindowLast, FixedWindowRunLength, mdEscape(h.FixedWindowNote))
			}
			if v := costVerdict(h); v != "" {
				m.p("  - cost: %s\n", mdEscape(v))
			}
		}
	}
	for _, g := range r.Groups {
		if g.Marked {
			m.p("\n† marks a group that no group of another platform it is compared with matches in configuration: every comparison of it is **%s**.\n", NotIdentical)
			break
		}
	}
	m.p("\n")
}

// underSlurm says whether a run of the group ran as a Slurm job, whose power
// comes from its compute nodes' samples: a Slurm group on its TDP had nodes
// that recorded none.
func underSlurm(g *Group) bool {
	for _, run := range g.Runs {
		if p := run.Input.Result.Provenance; p != nil && p.SlurmJobID != nil {
			return true
		}
	}
	return false
}

// sourceOf is the file of a group's first run.
func sourceOf(g *Group) string {
	for _, run := range g.Runs {
		if run.Input.Result == firstRun(g) {
			return filepath.ToSlash(run.Input.Source)
		}
	}
	return g.Runs[0].Input.Source
}

// costVerdict compares cost per token at the listed prices, gives the
// break-even price ratio and says whether the listed ranges can flip it.
func costVerdict(c Comparison) string {
	a, b := c.Faster, c.Slower
	if !sameWork(a, b) {
		if a.CostPer1T == nil || b.CostPer1T == nil {
			return ""
		}
		return "not compared per token: " + c.WorkDiffers + "; a token of one is not a token of the other, so cost per token and break-even price would mislead (each group's own cost is in its Energy, time and cost table)"
	}
	if a.CostPer1T == nil || b.CostPer1T == nil {
		return ""
	}
	be := c.BreakEven()
	cheaper := a
	if *b.CostPer1T < *a.CostPer1T {
		cheaper = b
	}
	s := fmt.Sprintf("$%s vs $%s per 1T tokens at $%s and $%s per GPU-hour: %s is cheaper per token; break-even price ratio %.2f: %s is cheaper while its GPU-hour costs less than %.2f× %s's ($%s at $%s)",
		num(*a.CostPer1T, 0), num(*b.CostPer1T, 0), num(a.Price.USDPerGPUHour, 2), num(b.Price.USDPerGPUHour, 2), cheaper.Label,
		be, a.Label, be, b.Label, num(be*b.Price.USDPerGPUHour, 2), num(b.Price.USDPerGPUHour, 2))
	if a.Price.HasRange() && b.Price.HasRange() {
		lo, hi := a.Price.Low/b.Price.High, a.Price.High/b.Price.Low
		if lo < be && be < hi {
			s += fmt.Sprintf("; over the listed ranges ($%s–$%s vs $%s–$%s) the price ratio spans %.2f–%.2f, so either can be cheaper", num(a.Price.Low, 2), num(a.Price.High, 2), num(b.Price.Low, 2), num(b.Price.High, 2), lo, hi)
		} else {
			s += fmt.Sprintf("; over the listed ranges ($%s–$%s vs $%s–$%s) the price ratio spans %.2f–%.2f: the verdict holds", num(a.Price.Low, 2), num(a.Price.High, 2), num(b.Price.Low, 2), num(b.Price.High, 2), lo, hi)
		}
	}
	return s
}

// peakList names the BF16 dense peaks the computation uses, from hw's table.
func peakList(models ...string) string {
	var out []string
	for _, k := range models {
		if s, ok := hw.LookupSpec(k); ok {
			out = append(out, fmt.Sprintf("%s %s", k, num(s.BF16DenseTFLOPs, 1)))
		}
	}
	return strings.Join(out, ", ")
}

func (r *Report) writeMethodology(m md) {
	h100, _ := hw.LookupSpec("H100 SXM")
	mi300, _ := hw.LookupSpec("MI300X")
	m.p("## Methodology\n\n")
	m.p("- Runs group by (platform, GPU model, framework, model, dataset, config fingerprint) and by their recorded configuration (precision, SL, GBS, MBS, TP/PP/CP/DP, GPU count): runs whose recorded configuration differs are never pooled. Each run contributes its mean tokens/s/GPU over the measured steps (warm-up excluded).\n")
	m.p("- Per group: mean, sample standard deviation and the 95%% Student-t confidence interval of the mean (t with n−1 degrees of freedom). A group of one run is shown as a single run; runs with identical values get no interval either (their spread is unknown, not zero). From %d runs, the olympic mean drops the fastest and the slowest run and averages the rest: the rule MLPerf Training (training_rules.adoc, Benchmark results) applies to time-to-train over its required runs (10 for Llama 3.1 8B pretraining); here it is applied to throughput.\n", OlympicMinRuns)
	m.p("- Speedup = mean tokens/s/GPU of the faster group / that of the slower, when both do the same work per token (equal model FLOPs per token); otherwise (a different SL or model) the mean model TFLOP/s/GPU, said so in the headline, and no per-token figure (tokens/s, cost per token, break-even price) is compared. Its 95%% interval uses the delta method, SE = R·√(s₁²/(n₁m₁²) + s₂²/(n₂m₂²)), with Welch–Satterthwaite degrees of freedom; it needs at least 2 runs with some spread on each side. An interval that includes 1 is reported as no difference shown at 95%%, with the runs per side that would decide at the observed spread (the smallest n with t(0.975, df)·R·√((cv₁² + cv₂²)/n) < |R − 1|).\n")
	m.p("- Runs: every run's own tokens/s/GPU is listed. An outlier is a run whose tokens/s/GPU lies more than %.1f × 1.4826 × MAD from its group's median (modified z-score above %.1f, Iglewicz and Hoaglin; 1.253314 × the mean absolute deviation when the MAD is 0), from %d runs; it is flagged and kept. A group whose runs spread more than %.0f%% (SD / mean of tokens/s/GPU) is flagged as measured on a noisy host. Among groups within %.1f%% of each other in MFU, a platform's best is the one from native results, then with more runs.\n", OutlierZ, OutlierZ, OutlierMinRuns, 100*NoisyHostCV, 100*EfficiencyTie)
	m.p("- **%s** needs every recorded hyperparameter (precision, SL, GBS, MBS, TP, PP, CP, DP, GPU count) and the dataset, tokenizer and config fingerprints recorded and equal on both sides; the label also says whether the frameworks differ. Headlines show the identical-configuration pair first, then **%s**: each platform's group with the highest MFU (else model TFLOP/s), naming every field that differs.\n", MethodIdentical, MethodBest)
	m.p("- TFLOP/s/GPU and MFU are Rival's own: models.TrainFLOPsPerToken (Megatron's dense GQA + SwiGLU count with causal attention) × tokens/s/GPU, over the GPU's dense peak at the run's precision (%s TFLOP/s BF16; FP8 %s and %s). The framework's own printed figures are shown next to them, labelled; frameworks count FLOPs differently, so only Rival's are compared. A run on a GPU partition (CPX, MIG: less than %.0f%% of the datasheet memory exposed) is marked: its MFU is against the whole GPU's peak.\n",
		peakList("H100 SXM", "MI300X"), num(h100.FP8DenseTFLOPs, 1), num(mi300.FP8DenseTFLOPs, 1), 100*PartitionShare)
	m.p("- Warm-up: each result's recorded `warmup_steps_excluded` is used: Rival's extract finds it from the data (the first logged step, then every following step slower than %.1f× the median of the steps after the first). Old-suite results record none: the first %.0f%% of their logged steps (at least one) are left out. Tokens/s/GPU is each result's headline figure: from its median step time where `headline_statistic` says so, else from its mean step time.\n", result.WarmupFactor, 100*OldSuiteWarmupShare)
	m.p("- Step time median/p10/p90: marked *recorded by the result* for a single run that records its own (over every measured step, even where the stored step series keeps every `step_series_stride`-th step only); marked *from the step series* otherwise, the percentiles of the measured steps of all runs of the group pooled (linear interpolation, as numpy), never a mean of per-run percentiles.\n")
	m.p("- Energy is GPU board power only (no CPU, memory, network or cooling). Tokens per watt-hour use sampled power (samples between the first and the last measured step, the run's GPUs only) when every run of the group has it, else the GPU's TDP (marked *TDP*: an upper bound on board power, so a lower bound on efficiency). Slurm jobs are sampled on their compute nodes, each node its own GPUs once a second; the window's dates come from the submitting host's clock, which the nodes' clocks are taken to match (NTP), and each edge is known to about one sample.\n")
	m.p("- Cost per 1T tokens = 10¹² / (tokens/s/GPU × 3600) GPU-hours × price per GPU-hour; days for 1T/15T tokens are on the group's GPU count. Proxy models and CPU runs get neither.\n")
	m.p("- Sanity: MFU above 100%%, tokens/s more than %.0f%% away from GBS × SL / the headline step time (median or mean, as the result records) or from tokens/s/GPU × GPUs (GPU count from num_gpus, TP×PP×CP×DP or gpu_info.device_count; a GPU run with none is unverifiable), or a measured step series whose mean is more than %.0f%% (%.0f%% for a decimated series) away from the stated mean step time is an error in the result; the run is named under Errors and left out.\n", 100*TokensConsistencyTolerance, 100*TokensConsistencyTolerance, 100*DecimatedSeriesTolerance)
	m.p("- Loss parity: for pairs on the same data and seed whose recorded configuration is equal (across platforms), or differs in precision only (BF16 against FP8, a convergence check), the first run of each is compared after warm-up (the larger of the runs' excluded warm-up and 10%% of the common steps). The verdict is on the mean loss over the last %.0f%% of the common steps: gap = |a−b| / ((a+b)/2) above %.0f%% is divergence; the largest single-step gap is shown for information.\n", 100*LossTailShare, 100*LossDivergenceThreshold)
	m.p("- Loss step by step: runs that record the same sample-order digest read the same batches from step 1, so their losses are compared at every common step, warm-up included: |a−b| and |a−b| / ((a+b)/2). The curves part at the first step from which every later step differs by more than %.0f%% (an allowance for bf16 kernel and reduction-order differences); a step that comes back within it is noise. Groups of different frameworks with the same recorded configuration (apart from the config fingerprint, which is each framework's own), data, seed and sample order are compared so, on any platform, with this as their verdict (in parity, or parted at step N); a pair that lacks the same seed or sample order is named with the reason. Other pairs that share the sample order show these figures beside their tail-mean verdict.\n\n", 100*StepLossTolerance)
}

func (r *Report) writeErrors(m md) {
	if len(r.Errors) == 0 {
		return
	}
	m.p("## Errors\n\n")
	m.header("result", "error", "detail")
	for _, e := range r.Errors {
		m.rowRaw(mdEscape(e.Source), mdCode(e.Name), mdEscape(e.Detail))
	}
	m.p("\n")
}

func (r *Report) writeModel(m md, s *ModelSection) {
	m.p("## %s\n\n", mdEscape(s.Label))
	if s.NoComparison != "" {
		more := ""
		if len(s.ConfigComparisons()) > 0 {
			more = "; its configurations are compared with each other"
		}
		m.p("%s%s.\n\n", mdEscape(strings.ToUpper(s.NoComparison[:1])+s.NoComparison[1:]), more)
	}
	writeConfigurations(m, s)
	writeThroughput(m, s)
	writeEfficiency(m, s)
	writeMemory(m, s)
	writeEnergyCost(m, s)
	writeSpeedups(m, s)
	writeFairness(m, s)
	writeParity(m, s)
	r.writeHeldOut(m, s)
}

func writeConfigurations(m md, s *ModelSection) {
	m.p("### Configurations\n\n")
	m.header("group", "configuration", "software stack")
	for _, g := range s.Groups {
		cfg := g.Setup
		if g.Partition != "" {
			cfg += "; " + g.Partition
		}
		m.row(g.name(), cfg, g.Stack)
	}
	m.p("\n")
}

// shortSetup is the row form of a group's configuration and stack: the
// fields headlines compare, the framework version (the full lines are in
// the Configurations table).
func shortSetup(g *Group) string {
	c := g.Config
	ver := c["framework_version"]
	if ver == unknown {
		ver = "version not recorded"
	}
	if len([]rune(ver)) > 40 {
		// A long version (the fsdp trainer's description) is in the
		// Configurations table; repeating it makes every row unreadable.
		ver = "(version: see Configurations)"
	}
	return fmt.Sprintf("%s, SL %s, GBS %s, MBS %s, TP %s PP %s CP %s DP %s · %s %s",
		c["precision"], c["sequence_length"], c["global_batch_size"], c["micro_batch_size"],
		c["tensor_parallel"], c["pipeline_parallel"], c["context_parallel"], c["data_parallel"],
		frameworkLabel(c["framework"]), ver)
}

// stepStatsCell is a group's step median / p10 / p90 and where they come from.
func stepStatsCell(g *Group) string {
	c := fmt.Sprintf("%s / %s / %s", num(g.StepMedian, 3), num(g.StepP10, 3), num(g.StepP90, 3))
	if g.StepStatsRecorded {
		return c + " (recorded by the result)"
	}
	return c + " (from the step series)"
}

func writeThroughput(m md, s *ModelSection) {
	m.p("### Throughput\n\n")
	m.header("group", "configuration · stack", "runs", "tokens/s/GPU (mean ± 95% CI)", "olympic mean", "total tokens/s", "step time mean (s)", "step median / p10 / p90 (s)")
	for _, g := range s.Groups {
		m.row(g.name(), shortSetup(g), strconv.Itoa(g.TPS.N), summaryCell(g.TPS, 1), olympicCell(g.TPS, 1),
			num(g.TotalTPS.Mean, 0), summaryCell(g.StepTime, 3), stepStatsCell(g))
	}
	writeRuns(m, s)
}

// writeRuns lists every run's own figures, so a straggler is visible
// behind a group's mean; outliers (OutlierZ) are named.
func writeRuns(m md, s *ModelSection) {
	m.p("\n### Runs\n\n")
	m.header("group", "run", "tokens/s/GPU", "step time mean (s)", "note")
	for _, g := range s.Groups {
		for _, run := range g.Runs {
			var note []string
			if run.Outlier > 0 {
				note = append(note, fmt.Sprintf("outlier (modified z-score %.1f)", run.Outlier))
			}
			if run.DroppedSteps != "" {
				note = append(note, run.DroppedSteps)
			}
			m.row(g.name(), run.Input.Source, num(run.TPSPerGPU, 1), num(run.StepTime, 3), dashIfEmpty(strings.Join(note, "; ")))
		}
	}
}

func writeEfficiency(m md, s *ModelSection) {
	m.p("\n### Efficiency\n\n")
	m.header("group", "precision", "peak (TFLOP/s)", "TFLOP/s/GPU (Rival)", "MFU (Rival)", "TFLOP/s/GPU (framework's own)", "MFU (framework's own)")
	for _, g := range s.Groups {
		mfu, fmfu := "—", "—"
		if g.MFU != nil {
			mfu = num(*g.MFU, 1) + "%"
			if g.Partition != "" {
				mfu += " (whole-GPU peak; partition)"
			}
		}
		if g.FrameworkMFU != nil {
			fmfu = num(*g.FrameworkMFU, 1) + "%"
		}
		if g.Proxy {
			mfu = "— (proxy model)"
		}
		m.row(g.name(), g.Config["precision"], ptr(g.Peak, 1), sig(g.TFLOPs), mfu, frameworkTFCell(g.FrameworkTF), fmfu)
	}
}

func writeMemory(m md, s *ModelSection) {
	m.p("\n### Memory (per GPU, GiB)\n\n")
	m.header("group", "peak allocated", "peak reserved", "peak device used", "GPU memory", "share of GPU memory")
	for _, g := range s.Groups {
		share := "—"
		if g.MemoryShare != nil {
			share = num(100**g.MemoryShare, 1) + "%"
		}
		m.row(g.name(), mib2gib(g.AllocatedMiB), mib2gib(g.ReservedMiB), mib2gib(g.DeviceUsedMiB), mib2gib(g.GPUMemoryMiB), share)
	}
}

func writeEnergyCost(m md, s *ModelSection) {
	m.p("\n### Energy, time and cost\n\n")
	m.header("group", "tokens per Wh per GPU", "power (W/GPU, GPU board power only)", "USD per GPU-hour", "cost per 1T tokens", "GPU-hours per 1T tokens", "days for 1T / 15T tokens")
	for _, g := range s.Groups {
		energy, power := "—", "—"
		if g.TokensPerWh != nil {
			energy = num(*g.TokensPerWh, 0)
			if g.PowerSource == "sampled" {
				power = num(g.PowerWatts, 0) + " (sampled)"
			} else {
				energy += " (TDP estimate)"
				power = num(g.PowerWatts, 0) + " (TDP)"
				if underSlurm(g) {
					power = num(g.PowerWatts, 0) + " (TDP; not sampled on the Slurm compute nodes)"
				}
			}
		}
		price, cost, days := "— (no price: "+PriceAdvice(PriceKey(g.Key.GPU))+")", "—", "—"
		switch {
		case g.Proxy || g.CPU:
			why := "proxy model"
			if !g.Proxy {
				why = "CPU run"
			}
			price = "— (" + why + ": no time-to-train or cost)"
			cost, days = "—", "—"
		default:
			if g.Price != nil {
				price = "$" + num(g.Price.USDPerGPUHour, 2)
				cost = "$" + num(*g.CostPer1T, 0)
				if g.Price.HasRange() {
					price += fmt.Sprintf(" (range $%s–$%s)", num(g.Price.Low, 2), num(g.Price.High, 2))
					cost += fmt.Sprintf(" ($%s–$%s)", num(g.GPUHoursPer1T*g.Price.Low, 0), num(g.GPUHoursPer1T*g.Price.High, 0))
				}
			}
			if g.NumGPUs > 0 {
				days = fmt.Sprintf("%s / %s on %s", num(g.DaysFor1T, 1), num(g.DaysFor15T, 1), english.Plural(g.NumGPUs, "GPU"))
			}
		}
		hours := num(g.GPUHoursPer1T, 0)
		if g.Proxy || g.CPU {
			hours = "—"
			if g.Proxy && energy == "—" && g.PowerWatts > 0 {
				energy = "— (proxy model)"
			}
		}
		m.row(g.name(), energy, power, price, cost, hours, days)
	}
}

func writeSpeedups(m md, s *ModelSection) {
	if len(s.Comparisons) == 0 {
		return
	}
	m.p("\n### Speedups\n\n")
	m.header("faster", "slower", "speedup", "95% CI", "method")
	for _, c := range s.Comparisons {
		ci := "— (a side has a single run or identical values)"
		if c.Ratio.HasCI {
			ci = fmt.Sprintf("%s (df %.1f)", boundsText(c.Ratio.Lo, c.Ratio.Hi), c.Ratio.DF)
			if c.Ratio.Inconclusive() {
				ci += ": includes 1, no difference shown; " + runsNeededText(c.RunsNeeded)
			}
		}
		method := c.Method
		if c.Identical && c.Stack != "" {
			method += "; same hyperparameters and data; " + c.Stack
		}
		if !c.Identical {
			method += "; " + NotIdentical + " (" + c.Why + ")"
		}
		if c.WorkDiffers != "" {
			method += "; " + workNote(c.Metric, c.WorkDiffers)
		}
		m.row(c.Faster.name(), c.Slower.name(), fmt.Sprintf("%.3f× %s", c.Ratio.Value, c.Metric), ci, method)
	}
}

func writeFairness(m md, s *ModelSection) {
	m.p("\n### Fairness\n\n")
	if len(s.Fairness) == 0 {
		m.p("Every recorded configuration field is equal across the groups of %s.\n", mdEscape(s.Label))
	} else {
		m.p("Configuration fields that differ between groups:\n\n")
		head := []string{"field"}
		for _, g := range s.Groups {
			head = append(head, g.name())
		}
		m.header(head...)
		for _, row := range s.Fairness {
			m.row(append([]string{row.Field}, differingCells(row.Values, 60, true)...)...)
		}
		m.p("\n")
		if len(s.Identical) > 0 {
			m.p("Recorded and equal in every group: %s.\n", strings.Join(s.Identical, ", "))
		}
	}
	if len(s.Unrecorded) > 0 {
		m.p("\nRecorded by no group (unknown, so not known to be equal): %s.\n", strings.Join(s.Unrecorded, ", "))
	}
	if len(s.Declared) > 0 {
		m.p("\nDifferences the frameworks do not let Rival remove:\n\n")
		m.header("framework", "field", "why")
		for _, d := range s.Declared {
			m.row(mdEscape(d.Framework), mdEscape(d.Field), mdEscape(d.Reason))
		}
	}
}

func writeParity(m md, s *ModelSection) {
	m.p("\n### Loss parity\n\n")
	type pair struct {
		lp   LossParity
		kind string
		a, b string
	}
	var pairs []pair
	for i, lp := range s.ParityPairs() {
		kind := ""
		switch {
		case lp.Frameworks:
			kind = " (" + frameworkKind(lp.A, lp.B) + ", same batches)"
		case i >= len(s.Parity):
			kind = " (between configurations, same data and seed)"
		case lp.PrecisionOnly:
			kind = fmt.Sprintf(" (precision only: %s vs %s)", lp.A.Config["precision"], lp.B.Config["precision"])
		}
		a, b := lp.A.Label, lp.B.Label
		if i >= len(s.Parity) {
			a, b = s.DisplayName(lp.A), s.DisplayName(lp.B)
		}
		pairs = append(pairs, pair{lp, kind, a, b})
	}
	if len(pairs) == 0 && len(s.FrameworkSkipped) == 0 {
		m.p("No pair of groups of %s ran on the same data with an equal recorded configuration (apart from precision), so loss curves are not compared.\n\n", mdEscape(s.Label))
		return
	}
	for _, p := range pairs {
		lp, kind := p.lp, mdEscape(p.kind)
		a, b := mdEscape(p.a), mdEscape(p.b)
		switch {
		case lp.Frameworks && !lp.Compared():
			m.p("- %s vs %s%s: the loss curves share no step.\n", a, b, kind)
		case lp.Frameworks:
			verdict, bad := frameworkVerdict(lp)
			if bad {
				verdict = "**" + verdict + "**"
			}
			m.p("- %s vs %s%s: %s: %s.\n", a, b, kind, verdict, frameworkFigures(lp))
		case !lp.Available:
			m.p("- %s vs %s%s: the loss curves share no step after warm-up.\n", a, b, kind)
		default:
			verdict := "in parity"
			if lp.Diverged {
				verdict = "**diverged**"
			}
			m.p("- %s vs %s%s: %s: mean loss over the last %s differs by %.2f%% (threshold %.0f%%); largest single-step gap %.2f%% at step %d, over %s after %s.",
				a, b, kind, verdict, english.Plural(lp.TailSteps, "step"), 100*lp.TailGap, 100*LossDivergenceThreshold, 100*lp.MaxGap, lp.AtStep, english.Plural(lp.Steps, "step"), english.Plural(lp.Warmup, "warm-up step"))
			if lp.StepWise != nil {
				m.p(" Step by step (same batches): %s.", stepCell(lp.StepWise))
			}
			m.p("\n")
		}
	}
	for _, sk := range s.FrameworkSkipped {
		m.p("- %s vs %s (%s): not compared step by step: %s.\n", mdEscape(s.DisplayName(sk.A)), mdEscape(s.DisplayName(sk.B)), frameworkKind(sk.A, sk.B), mdEscape(sk.Why))
	}
	m.p("\n")
}

func (r *Report) writeInputs(m md) {
	m.p("## Inputs\n\n")
	m.header("source", "fingerprint", "format", "platform", "framework", "model", "missing fields", "notes")
	for _, in := range r.Inputs {
		res := in.Result
		notes := append([]string(nil), in.Notes...)
		if len(in.Duplicates) > 0 {
			notes = append(notes, "identical copies counted once: "+strings.Join(in.Duplicates, ", "))
		}
		if r.LogChecks != nil {
			c, ok := r.LogChecks[in.Source]
			if !ok {
				c.Why = "not looked for"
			}
			notes = append(notes, c.Note())
		}
		m.rowRaw(mdEscape(in.Source), mdCode(in.Fingerprint), mdEscape(in.Format), mdEscape(platformOf(res)), mdEscape(res.Framework.Name), mdEscape(modelLabel(res)),
			mdEscape(dashIfEmpty(strings.Join(in.Missing, ", "))), mdEscape(dashIfEmpty(strings.Join(notes, "; "))))
	}
}

func (r *Report) writeSkipped(m md) {
	if len(r.Skipped) == 0 {
		return
	}
	m.p("\n## Skipped\n\n")
	m.header("source", "kind", "reason", "missing")
	for _, s := range r.Skipped {
		m.row(s.Source, s.Kind, s.Reason, dashIfEmpty(strings.Join(s.Missing, ", ")))
	}
}

func (r *Report) writePrices(m md) {
	m.p("\n## Prices\n\n")
	m.header("GPU", "USD per GPU-hour", "listed range", "source", "date")
	for _, k := range r.Prices.Models() {
		pr := r.Prices.Prices[k]
		rng := "—"
		if pr.HasRange() {
			rng = fmt.Sprintf("$%s–$%s", num(pr.Low, 2), num(pr.High, 2))
		}
		m.row(k, "$"+num(pr.USDPerGPUHour, 2), rng, pr.Source, dashIfEmpty(pr.Date))
	}
}

// writeAnchors writes report.md's Published anchors: every anchor as a
// sourced record, then each matching group's measured ÷ published line.
func (r *Report) writeAnchors(m md) {
	m.p("\n## Published anchors\n\n")
	for _, a := range Anchors {
		m.p("- %s\n", a.Record())
	}
	lines := r.AnchorLines()
	if len(lines) == 0 {
		m.p("\nNo result ran an anchor's workload (same model, GPU, GPU count, precision and sequence length).\n")
	} else {
		m.p("\n")
		for _, l := range lines {
			m.p("- %s\n", mdEscape(l.Text()))
		}
	}
	r.writeMLPerf(m)
}

// writeHistory writes report.md's History section (nothing when no
// workload has two batches).
func (r *Report) writeHistory(m md) {
	if r.History == nil {
		return
	}
	m.p("\n## History\n\n%s\n", mdEscape(r.History.Method()))
	for _, s := range r.History.Series {
		m.p("\n### %s\n\n", mdEscape(s.Label))
		m.header("batch", "started", "host", "stack", "runs", "tokens/s/GPU")
		for i, b := range s.Batches {
			m.row(fmt.Sprint(i+1), batchDate(b), b.Host, b.Stack.Short(), fmt.Sprint(len(b.Runs)), summaryCI(b.TPS))
		}
		m.p("\n")
		m.header("step", "kind", "what changed", "later ÷ earlier", "verdict", "loss parity")
		for _, st := range s.Steps {
			m.row(fmt.Sprintf("%d → %d", s.index(st.From), s.index(st.To)), st.Kind, dashIfEmpty(strings.Join(st.Changed, "; ")), ratioCI(st.Ratio), st.Phrase()+" ("+st.Why+")", parityCell(st.Parity))
		}
		if len(s.Undated) > 0 {
			m.p("\nNot placed (no provenance.started_at): %s\n", mdEscape(strings.Join(s.Undated, ", ")))
		}
	}
}

// WriteHistoryMarkdown writes history.md: the History section alone, with
// the anchors' lines for the same results.
func (r *Report) WriteHistoryMarkdown(w io.Writer) error {
	m := md{bufio.NewWriter(w)}
	m.p("# Rival history report\n\n")
	if r.History == nil {
		m.p("No workload was measured on more than one software stack, host or date: nothing to compare over time.\n")
	}
	r.writeHistory(m)
	r.writeAnchors(m)
	return m.w.Flush()
}

// writeHeldOut writes a model's held-out section (nothing when no run recorded periodic evaluations).
func (r *Report) writeHeldOut(m md, s *ModelSection) {
	h := s.HeldOut
	if h == nil {
		return
	}
	m.p("\n### Held-out loss and time to target\n\n%s\n\n", mdEscape(r.targetLine()))
	m.header("group", "runs with evaluations", "evaluations (first run)", "last held-out loss", "reached the target",
		"samples to target", "tokens to target", "wall time to target", "training time to target")
	for _, hg := range h.Groups {
		runs := fmt.Sprint(len(hg.Runs))
		if hg.NoEvals > 0 {
			runs += fmt.Sprintf(" (%d without)", hg.NoEvals)
		}
		cells := []string{s.DisplayName(hg.Group), runs, fmt.Sprint(len(hg.Runs[0].Evals)), summaryCell(hg.Final, 4), hg.reachedCell(r.HasTarget)}
		if r.HasTarget {
			wall := "no clock in the log"
			if hg.WallSeconds.N > 0 {
				wall = hg.timeCell(hg.WallSeconds)
			} else if hg.Reached == 0 {
				wall = "not reached"
			}
			train := "no step times"
			if hg.TrainSeconds.N > 0 {
				train = hg.timeCell(hg.TrainSeconds)
			} else if hg.Reached == 0 {
				train = "not reached"
			}
			tok := "—"
			if hg.Tokens.N > 0 || hg.Reached == 0 {
				tok = hg.tokensCell()
			}
			cells = append(cells, hg.toTargetCell(hg.Samples, 0, 1, ""), tok, wall, train)
		} else {
			cells = append(cells, "—", "—", "—", "—")
		}
		m.row(cells...)
	}
	m.p("\nWall time is the clock from the start of training at the end of each evaluation, evaluations included, where the log has one (MLPerf's MLLOG), interpolated like the samples; training time is the logged step times before each evaluation, each counted for the iterations it stands for.\n\n")
	for _, p := range h.Same {
		m.p("- %s and %s: the same held-out loss within %.0f%% at every one of %s both evaluated at (largest difference %.3f%%); their difference is plotted.\n",
			mdEscape(s.DisplayName(p.A)), mdEscape(s.DisplayName(p.B)), 100*HeldOutTolerance, english.Plural(len(p.Samples), "sample count"), 100*p.MaxRel)
	}
	if len(h.Same) > 0 {
		m.p("\n")
	}
}

// writeMLPerf writes the MLPerf time-to-train scores for the report's GPUs and the groups held against them.
func (r *Report) writeMLPerf(m md) {
	m.p("\n### MLPerf Training time to train\n\n%s.\n\n", mdEscape(mlperfRule))
	if lines := r.MLPerfLines(); len(lines) > 0 {
		for _, l := range lines {
			m.p("- %s\n", mdEscape(l.Text()))
		}
		m.p("\n")
	}
	recs := r.mlperfRelevant()
	if len(recs) == 0 {
		m.p("No published score is for a GPU of this report (%d scores in all: docs/compare.md).\n", len(MLPerfLlama31_8B))
		return
	}
	m.header("system", "GPUs", "precision", "software", "minutes", "source")
	for _, rec := range recs {
		m.row(rec.Submitter+" "+rec.System, fmt.Sprintf("%d× %s", rec.Accelerators, rec.Accelerator), dashIfEmpty(rec.Precision), rec.Software,
			num(rec.Minutes, 3), rec.Source.String())
	}
}
