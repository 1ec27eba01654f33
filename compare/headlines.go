package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/english"
)

// Headline is one line such as "MI300X Primus vs H100 NeMo, Llama 3.1 8B:
// 1.42× ± 0.03 tokens/s/GPU (n=5 vs 5; identical configuration; same
// hyperparameters and data; frameworks differ)". A pair that is not
// identical names every field that differs; a pair whose work per token
// differs is compared by model FLOP/s and says so; an interval that
// includes 1 says that no difference is shown.
func (c Comparison) Headline(model string) string {
	s := fmt.Sprintf("%s vs %s, %s: %s", c.Faster.Label, c.Slower.Label, model, ratioText(c.Ratio, c.Metric, c.RunsNeeded))
	tail := c.notes()
	if c.Identical {
		if c.Stack != "" {
			tail = append(tail, "same hyperparameters and data; "+c.Stack)
		} else {
			tail = append(tail, "same hyperparameters, data and framework")
		}
	} else if c.Stack != "" {
		tail = append(tail, c.Stack)
	}
	for _, g := range []*Group{c.Faster, c.Slower} {
		if g.Partition != "" {
			tail = append(tail, g.Label+" ran on a GPU partition")
		}
	}
	return s + " (" + strings.Join(tail, "; ") + ")"
}

// notes are the notes that follow the ratio in every headline of c, the text
// one and the HTML one: the interval when the ratio is decided, the number
// of runs, a differing work per token, and how the pair was chosen.
func (c Comparison) notes() []string {
	t := ratioNotes(c.Ratio, c.Faster, c.Slower, c.Metric, c.WorkDiffers)
	if c.MixedStacks != "" {
		t = append(t, c.MixedStacks)
	}
	if c.Identical {
		return append(t, MethodIdentical)
	}
	return append(t, MethodBest, NotIdentical+": "+c.Why)
}

// ratioNotes are the first notes after a ratio r of faster over slower on
// metric, for a group comparison and a configuration comparison alike: the
// interval when the ratio is decided, the number of runs, and work, the
// difference in work per token, when there is one.
func ratioNotes(r Ratio, faster, slower *Group, metric, work string) []string {
	var t []string
	if r.HasCI && !r.Inconclusive() {
		t = append(t, "95% CI "+r.CIText())
	}
	t = append(t, fmt.Sprintf("n=%d vs %d", faster.TPS.N, slower.TPS.N))
	if work != "" {
		t = append(t, workNote(metric, work))
	}
	return t
}

// workNote says what a comparison between groups of different work per
// token is made on.
func workNote(metric, work string) string {
	if metric == MetricFLOPs {
		return "compared by model FLOP/s: " + work + ", so tokens/s, cost per token and break-even price are not compared"
	}
	return work + ", so tokens/s is not a fair measure"
}

// Line is the comparison in one sentence, for the console and headlines.
func (c ConfigComparison) Line(s *ModelSection) string {
	tail := ratioNotes(c.Ratio, c.Faster, c.Slower, c.Metric, c.WorkDiffers)
	tail = append(tail, fmt.Sprintf("total tokens/s %s", c.TotalRatio.String()))
	return fmt.Sprintf("%s vs %s, %s: %s (%s)", s.DisplayName(c.Faster), s.DisplayName(c.Slower), s.Label,
		ratioText(c.Ratio, c.Metric, c.RunsNeeded), strings.Join(tail, "; "))
}

// HistoryMethod says how the history is built and judged.
func (h *History) Method() string {
	th := num(100*h.Threshold, 1) + "%"
	return "Runs of one workload (model, recorded configuration and config fingerprint, dataset and its fingerprint, platform, GPU model and count, framework) " +
		"are batched by recorded software stack (framework version with the torch, CUDA/ROCm and library versions it names, image digest, and on one host the hardware fingerprint, which covers the GPU driver) and by host, " +
		"then ordered by date (provenance.started_at; runs of one stack and host more than " + num(HistorySessionGap.Hours(), 0) + " h apart are separate batches). " +
		"Each batch is compared with the latest earlier batch on the same host, else with the batch just before it. " +
		"The ratio is later ÷ earlier mean tokens/s/GPU with its 95% interval (delta method, Welch–Satterthwaite degrees of freedom). " +
		"Threshold θ = " + th + " (HISTORY_THRESHOLD): regression when the interval lies below 1 and the ratio below 1 − θ; improvement when it lies above 1 and the ratio above 1 + θ; " +
		"no change when the whole interval lies within 1 ± θ; otherwise inconclusive (more runs needed). " +
		"Only a step between stacks on one host is a software verdict: with the same recorded stack (only the date differs) a change lies outside the recorded stack, " +
		"and a step to another host is a host difference. Loss parity compares the first runs of the two batches when they used the same data and seed."
}

func parityCell(lp *LossParity) string {
	if lp == nil {
		return "—"
	}
	v := "parity"
	if lp.Diverged {
		v = "DIVERGED"
	}
	cell := fmt.Sprintf("%s: tail gap %s%% over the last %s (largest step gap %s%% at step %d)", v, num(100*lp.TailGap, 2), english.Plural(lp.TailSteps, "step"), num(100*lp.MaxGap, 2), lp.AtStep)
	if lp.StepWise != nil {
		cell += "; step by step, same batches: " + stepCell(lp.StepWise)
	}
	return cell
}

// stepVerdict is a step-by-step comparison's verdict.
func stepVerdict(sp *StepParity) string {
	switch {
	case len(sp.Diffs) == 0:
		return "no common step"
	case sp.Parted:
		return fmt.Sprintf("parted at step %d", sp.PartedAt)
	}
	return "in parity"
}

// stepFigures is what a step-by-step verdict rests on: the rule it met and
// the largest difference.
func stepFigures(sp *StepParity) string {
	if len(sp.Diffs) == 0 {
		return "the loss curves share no step"
	}
	tol := num(100*StepLossTolerance, 0) + "%"
	rule := "no step from which every later step differs by more than " + tol
	if sp.Parted {
		rule = fmt.Sprintf("every step from %d on differs by more than %s", sp.PartedAt, tol)
	}
	l := sp.Largest
	if math.IsInf(l.Rel, 1) {
		return fmt.Sprintf("%s; at step %d only one run has a finite loss, over %s, warm-up included",
			rule, l.Step, english.Plural(len(sp.Diffs), "step"))
	}
	return fmt.Sprintf("%s; largest difference %s%% (%s in loss) at step %d, over %s, warm-up included",
		rule, num(100*l.Rel, 2), strconv.FormatFloat(l.Abs, 'g', 3, 64), l.Step, english.Plural(len(sp.Diffs), "step"))
}

// frameworkVerdict is a framework pair's verdict: parted at a step, its tail means diverged, or in
// parity; bad is true for the first two.
func frameworkVerdict(lp LossParity) (verdict string, bad bool) {
	switch {
	case lp.StepWise.Parted:
		return stepVerdict(lp.StepWise), true
	case lp.Diverged:
		return fmt.Sprintf("diverged (tail-mean gap %s%% > %s%%)", num(100*lp.TailGap, 2), num(100*LossDivergenceThreshold, 0)), true
	}
	return "in parity", false
}

// frameworkFigures is what a framework pair's verdict rests on: the step-by-step rule and the
// tail means.
func frameworkFigures(lp LossParity) string {
	s := stepFigures(lp.StepWise)
	if lp.Available {
		s += fmt.Sprintf("; tail-mean gap %s%% over the last %s", num(100*lp.TailGap, 2), english.Plural(lp.TailSteps, "step"))
	}
	return s
}

// stepCell is a step-by-step comparison in one phrase.
func stepCell(sp *StepParity) string {
	if sp == nil {
		return "—"
	}
	return stepVerdict(sp) + " (" + stepFigures(sp) + ")"
}

// frameworkKind says what differs in a framework pair: the framework, and
// the platform or GPU where they differ too.
func frameworkKind(a, b *Group) string {
	switch {
	case a.Key.Platform != b.Key.Platform:
		return "frameworks and platforms differ"
	case a.Key.GPU != b.Key.GPU:
		return "frameworks and GPUs differ"
	}
	return "frameworks differ"
}

func batchDate(b *HistoryBatch) string {
	return b.Start.UTC().Format("2006-01-02 15:04") + " UTC"
}
