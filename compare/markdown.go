package compare

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Headline is one line such as
// "MI300X Primus vs H100 NeMo, Llama 3.1 8B: 1.42× ± 0.03 tokens/s/GPU (...)".
func (c Comparison) Headline(model string) string {
	s := fmt.Sprintf("%s vs %s, %s: %s tokens/s/GPU", c.Faster.Label, c.Slower.Label, model, c.Ratio.String())
	var tail []string
	if c.Ratio.HasCI {
		tail = append(tail, fmt.Sprintf("95%% CI %.3g–%.3g", c.Ratio.Lo, c.Ratio.Hi))
	}
	tail = append(tail, fmt.Sprintf("n=%d vs %d", c.Faster.TPS.N, c.Slower.TPS.N))
	if c.Identical {
		tail = append(tail, MethodIdentical)
	} else {
		tail = append(tail, MethodBest, NotIdentical+": "+c.Why)
	}
	return s + " (" + strings.Join(tail, "; ") + ")"
}

// String is "1.42× ± 0.03", or "1.42× (single run, no interval)".
func (r Ratio) String() string {
	if !r.HasCI {
		return fmt.Sprintf("%.2f× (a side has a single run: no interval)", r.Value)
	}
	d := 2
	if r.Half > 0 {
		d = max(2, -int(math.Floor(math.Log10(r.Half))))
	}
	return fmt.Sprintf("%.*f× ± %.*f", d, r.Value, d, r.Half)
}

func num(x float64, prec int) string {
	if !finite(x) {
		return "—"
	}
	s := fmt.Sprintf("%.*f", prec, x)
	// thousands separators for readability
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// sig formats a framework's figure with one decimal, or with three significant
// digits when it is below 1 (a CPU run's 0.02 TFLOP/s must not read as 0.0).
func sig(p *float64) string {
	if p == nil {
		return "—"
	}
	if a := math.Abs(*p); a > 0 && a < 1 {
		return strconv.FormatFloat(*p, 'g', 3, 64)
	}
	return num(*p, 1)
}

// positive is num for a figure where 0 means "not known" (power with neither
// samples nor a TDP).
func positive(x float64, prec int) string {
	if x <= 0 {
		return "—"
	}
	return num(x, prec)
}

func ptr(p *float64, prec int) string {
	if p == nil {
		return "—"
	}
	return num(*p, prec)
}

func summaryCell(s Summary, prec int) string {
	if s.N == 0 {
		return "—"
	}
	if !s.HasCI {
		return num(s.Mean, prec) + " (single run)"
	}
	return fmt.Sprintf("%s ± %s (SD %s)", num(s.Mean, prec), num(s.Half, prec), num(s.SD, prec))
}

func mlperfCell(s Summary, prec int) string {
	if s.MLPerf == nil {
		return "— (needs 5 runs)"
	}
	return num(*s.MLPerf, prec)
}

func mib2gib(p *float64) string {
	if p == nil {
		return "—"
	}
	return num(*p/1024, 1)
}

func (g *Group) name() string {
	if g.Marked {
		return g.Label + " †"
	}
	return g.Label
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// WriteMarkdown writes report.md: headlines, methodology, per-model tables,
// fairness, loss parity, errors, every input with its fingerprint, prices and
// published anchors. Output is deterministic for the same inputs.
func (r *Report) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }
	p("# Rival comparison report\n\n")
	p("%d result(s) in %d group(s), %d model(s), platform(s): %s.", len(r.Inputs), len(r.Groups), len(r.Models), strings.Join(r.Platforms, ", "))
	if len(r.Errors) > 0 {
		p(" **%d error(s) in results: those runs are left out of every figure (see Errors).**", len(r.Errors))
	}
	if len(r.Skipped) > 0 {
		p(" %d file(s) could not be used (see Skipped).", len(r.Skipped))
	}
	p("\n\n## Headlines\n\n")
	for _, m := range r.Models {
		if m.NoComparison != "" {
			p("- %s: %s.\n", m.Label, m.NoComparison)
			continue
		}
		for _, h := range m.Headlines {
			p("- %s\n", h.Headline(m.Label))
		}
	}
	p("\n† marks a group whose dataset or config fingerprint differs from (or is unknown next to) another group of its model: **%s**.\n\n", NotIdentical)

	p("## Methodology\n\n")
	p("- Runs group by (platform, GPU model, framework, model, dataset, config fingerprint); each run contributes its mean tokens/s/GPU over the measured steps (warm-up excluded).\n")
	p("- Per group: mean, sample standard deviation and the 95%% Student-t confidence interval of the mean (t with n−1 degrees of freedom). A group of one run is shown as a single run, without an interval. With 5 runs or more, the MLPerf-style mean drops the fastest and the slowest run.\n")
	p("- Speedup = mean tokens/s/GPU of the faster group / that of the slower. Its 95%% interval uses the delta method, SE = R·√(s₁²/(n₁m₁²) + s₂²/(n₂m₂²)), with Welch–Satterthwaite degrees of freedom; it needs at least 2 runs on each side.\n")
	p("- Comparisons are labelled **%s** when both groups record equal dataset and config fingerprints, otherwise **%s** (headlines pair each platform's fastest group) and marked %s.\n", MethodIdentical, MethodBest, NotIdentical)
	p("- TFLOP/s/GPU and MFU are Rival's own: models.TrainFLOPsPerToken (Megatron's dense GQA + SwiGLU count with causal attention) × tokens/s/GPU, over the GPU's dense peak at the run's precision (H100 989.4, MI300X 1307.4 TFLOP/s BF16; FP8 twice). The framework's own printed figures are shown next to them, labelled; frameworks count FLOPs differently, so only Rival's are compared.\n")
	p("- Step time median/p10/p90 pool the measured steps of all runs of a group (linear interpolation, as numpy).\n")
	p("- Tokens per watt-hour use sampled power when every run of the group has it, else the GPU's TDP (labelled *TDP estimate*: an upper bound on power, so a lower bound on efficiency).\n")
	p("- Cost per 1T tokens = 10¹² / (tokens/s/GPU × 3600) GPU-hours × price per GPU-hour; days for 1T/15T tokens are on the group's GPU count.\n")
	p("- Sanity: MFU above 100%% or tokens/s more than %.0f%% away from GBS × SL / step time (or from tokens/s/GPU × GPUs) is an error in the result; the run is named under Errors and left out.\n", 100*TokensConsistencyTolerance)
	p("- Loss parity: for groups on identical data and config (the config fingerprint covers the seed), the first run of each is compared step by step after warm-up (the larger of the runs' excluded warm-up and 10%% of the common steps); gap = |a−b| / ((|a|+|b|)/2); above %.0f%% is flagged as divergence.\n\n", 100*LossDivergenceThreshold)

	if len(r.Errors) > 0 {
		p("## Errors\n\n| result | error | detail |\n|---|---|---|\n")
		for _, e := range r.Errors {
			p("| %s | `%s` | %s |\n", mdEscape(e.Source), e.Name, mdEscape(e.Detail))
		}
		p("\n")
	}

	for _, m := range r.Models {
		p("## %s\n\n", m.Label)
		if m.NoComparison != "" {
			p("%s.\n\n", strings.ToUpper(m.NoComparison[:1])+m.NoComparison[1:])
		}
		p("### Throughput\n\n| group | runs | tokens/s/GPU (mean ± 95%% CI) | MLPerf-style mean | total tokens/s | step time mean (s) | step median / p10 / p90 (s) |\n|---|---|---|---|---|---|---|\n")
		for _, g := range m.Groups {
			p("| %s | %d | %s | %s | %s | %s | %s / %s / %s |\n", mdEscape(g.name()), g.TPS.N, summaryCell(g.TPS, 1), mlperfCell(g.TPS, 1),
				num(g.TotalTPS.Mean, 0), summaryCell(g.StepTime, 3), num(g.StepMedian, 3), num(g.StepP10, 3), num(g.StepP90, 3))
		}
		p("\n### Efficiency\n\n| group | precision | peak (TFLOP/s) | TFLOP/s/GPU (Rival) | MFU (Rival) | TFLOP/s/GPU (framework's own) | MFU (framework's own) |\n|---|---|---|---|---|---|---|\n")
		for _, g := range m.Groups {
			mfu, fmfu := "—", "—"
			if g.MFU != nil {
				mfu = num(*g.MFU, 1) + "%"
			}
			if g.FrameworkMFU != nil {
				fmfu = num(*g.FrameworkMFU, 1) + "%"
			}
			p("| %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(g.name()), g.Config["precision"], ptr(g.Peak, 1), sig(g.TFLOPs), mfu, sig(g.FrameworkTF), fmfu)
		}
		p("\n### Memory (per GPU, GiB)\n\n| group | peak allocated | peak reserved | peak device used | GPU memory | share of GPU memory |\n|---|---|---|---|---|---|\n")
		for _, g := range m.Groups {
			share := "—"
			if g.MemoryShare != nil {
				share = num(100**g.MemoryShare, 1) + "%"
			}
			p("| %s | %s | %s | %s | %s | %s |\n", mdEscape(g.name()), mib2gib(g.AllocatedMiB), mib2gib(g.ReservedMiB), mib2gib(g.DeviceUsedMiB), mib2gib(g.GPUMemoryMiB), share)
		}
		p("\n### Energy, time and cost\n\n| group | tokens per Wh per GPU | power (W/GPU) | USD per GPU-hour | cost per 1T tokens | GPU-hours per 1T tokens | days for 1T / 15T tokens |\n|---|---|---|---|---|---|---|\n")
		for _, g := range m.Groups {
			energy := "—"
			if g.TokensPerWh != nil {
				energy = num(*g.TokensPerWh, 0)
				if g.PowerSource != "sampled" {
					energy += " (" + g.PowerSource + ")"
				}
			}
			price, cost := priceHint(g), "—"
			if g.Price != nil {
				price = "$" + num(g.Price.USDPerGPUHour, 2)
				cost = "$" + num(*g.CostPer1T, 0)
			}
			days := "—"
			if g.NumGPUs > 0 {
				days = fmt.Sprintf("%s / %s on %s", num(g.DaysFor1T, 1), num(g.DaysFor15T, 1), Plural(g.NumGPUs, deviceNoun(g)))
			}
			p("| %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(g.name()), energy, positive(g.PowerWatts, 0), price, cost, num(g.GPUHoursPer1T, 0), days)
		}
		if len(m.Comparisons) > 0 {
			p("\n### Speedups (tokens/s/GPU)\n\n| faster | slower | speedup | 95%% CI | method |\n|---|---|---|---|---|\n")
			for _, c := range m.Comparisons {
				ci := "— (single run on a side)"
				if c.Ratio.HasCI {
					ci = fmt.Sprintf("%.3f – %.3f (df %.1f)", c.Ratio.Lo, c.Ratio.Hi, c.Ratio.DF)
				}
				method := c.Method
				if !c.Identical {
					method += "; " + NotIdentical + " (" + c.Why + ")"
				}
				p("| %s | %s | %.3f× | %s | %s |\n", mdEscape(c.Faster.name()), mdEscape(c.Slower.name()), c.Ratio.Value, ci, method)
			}
		}
		p("\n### Fairness\n\n")
		if len(m.Fairness) == 0 {
			p("Every compared configuration field is equal across the groups of %s.\n", m.Label)
		} else {
			p("Configuration fields that differ between groups:\n\n| field |")
			for _, g := range m.Groups {
				p(" %s |", mdEscape(g.name()))
			}
			p("\n|---|%s\n", strings.Repeat("---|", len(m.Groups)))
			for _, row := range m.Fairness {
				p("| %s |", row.Field)
				for _, v := range row.Values {
					p(" %s |", mdEscape(v))
				}
				p("\n")
			}
			p("\nEqual in every group: %s.\n", strings.Join(m.Identical, ", "))
		}
		p("\n### Loss parity\n\n")
		if len(m.Parity) == 0 {
			p("No pair of platforms ran %s on identical data and configuration (equal, recorded dataset and config fingerprints), so loss curves are not compared.\n\n", m.Label)
		}
		for _, lp := range m.Parity {
			switch {
			case !lp.Available:
				p("- %s vs %s: the loss curves share no step after warm-up.\n", lp.A.Label, lp.B.Label)
			case lp.Diverged:
				p("- %s vs %s: **diverged**: largest relative loss gap %.2f%% at step %d (threshold %.0f%%), over %d steps after %d warm-up steps.\n", lp.A.Label, lp.B.Label, 100*lp.MaxGap, lp.AtStep, 100*LossDivergenceThreshold, lp.Steps, lp.Warmup)
			default:
				p("- %s vs %s: largest relative loss gap %.2f%% at step %d (threshold %.0f%%), over %d steps after %d warm-up steps: in parity.\n", lp.A.Label, lp.B.Label, 100*lp.MaxGap, lp.AtStep, 100*LossDivergenceThreshold, lp.Steps, lp.Warmup)
			}
		}
		if len(m.Parity) > 0 {
			p("\n")
		}
	}

	p("## Inputs\n\n| source | fingerprint | format | platform | framework | model | missing fields | notes |\n|---|---|---|---|---|---|---|---|\n")
	for _, in := range r.Inputs {
		res := in.Result
		notes := append([]string(nil), in.Notes...)
		if len(in.Duplicates) > 0 {
			notes = append(notes, "identical copies counted once: "+strings.Join(in.Duplicates, ", "))
		}
		p("| %s | `%s` | %s | %s | %s | %s | %s | %s |\n", mdEscape(in.Source), in.Fingerprint, in.Format, platformOf(res), mdEscape(res.Framework.Name), mdEscape(modelLabel(res)),
			dashIfEmpty(strings.Join(in.Missing, ", ")), mdEscape(dashIfEmpty(strings.Join(notes, "; "))))
	}
	if len(r.Skipped) > 0 {
		p("\n## Skipped\n\n| source | kind | reason | missing |\n|---|---|---|---|\n")
		for _, s := range r.Skipped {
			p("| %s | %s | %s | %s |\n", mdEscape(s.Source), s.Kind, mdEscape(s.Reason), dashIfEmpty(strings.Join(s.Missing, ", ")))
		}
	}
	p("\n## Prices\n\n| GPU | USD per GPU-hour | source | date |\n|---|---|---|---|\n")
	for _, k := range r.Prices.Models() {
		pr := r.Prices.Prices[k]
		p("| %s | $%s | %s | %s |\n", k, num(pr.USDPerGPUHour, 2), mdEscape(pr.Source), dashIfEmpty(pr.Date))
	}
	p("\n## Published anchors\n\n")
	for _, a := range Anchors {
		p("- %s\n", a)
	}
	return bw.Flush()
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// Anchors are published figures a reader can hold results against.
var Anchors = []string{
	"NVIDIA Megatron-Bridge performance summary, DGX-H100, LLAMA3_8B, 8 GPUs, FP8 (current scaling), GBS 128, MBS 1, sequence length 8192: 14,079 tokens/s/GPU and 725 model TFLOP/s/GPU with the 25.09 NeMo container, 14,451 tokens/s/GPU and 744 TFLOP/s/GPU with 25.11 (https://docs.nvidia.com/nemo/megatron-bridge/latest/performance-summary.html and its archive page). Rival's formula gives 744 TFLOP/s at 14,451 tokens/s/GPU (37.6% MFU of the FP8 dense peak).",
	"AMD MI325X, Llama 3.1 8B FP8 pretraining: about 16,200 tokens/s/GPU (figure given in Rival's issue tracker; its AMD source was not retrieved in this session, see docs/compare.md).",
}

// Console writes a compact summary for the terminal.
func (r *Report) Console(w io.Writer) {
	fmt.Fprintf(w, "compare: %d result(s), %d group(s), platforms %s\n", len(r.Inputs), len(r.Groups), strings.Join(r.Platforms, ", "))
	for _, m := range r.Models {
		if m.NoComparison != "" {
			fmt.Fprintf(w, "  %s: %s\n", m.Label, m.NoComparison)
		}
		for _, h := range m.Headlines {
			fmt.Fprintf(w, "  %s\n", h.Headline(m.Label))
		}
		for _, g := range m.Groups {
			mfu := "—"
			if g.MFU != nil {
				mfu = num(*g.MFU, 1) + "%"
			}
			fmt.Fprintf(w, "    %-28s n=%-3d %12s tok/s/GPU  MFU %-6s step %s s\n", truncate(g.name(), 28), g.TPS.N, num(g.TPS.Mean, 0), mfu, num(g.StepMedian, 3))
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  ERROR %s: %s: %s\n", e.Source, e.Name, e.Detail)
	}
	for _, s := range r.Skipped {
		if s.Kind == "invalid" {
			fmt.Fprintf(w, "  skipped %s\n", s)
		}
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
