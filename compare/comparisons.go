package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rivalbench/rival/english"
)

// efficiency ranks groups for "each platform at its best": Rival's MFU, else
// its model TFLOP/s, else tokens/s/GPU (so SL and precision cannot inflate it).
func efficiency(g *Group) (rank int, v float64) {
	switch {
	case g.MFU != nil:
		return 2, *g.MFU
	case g.TFLOPs != nil:
		return 1, *g.TFLOPs
	}
	return 0, g.TPS.Mean
}

// EfficiencyTie is the relative difference within which two groups count as
// equally efficient: the group with the better evidence then wins (native
// results before old-suite ones, then more runs).
const EfficiencyTie = 0.005

func moreEfficient(a, b *Group) bool {
	ra, va := efficiency(a)
	rb, vb := efficiency(b)
	if ra != rb {
		return ra > rb
	}
	if math.Abs(va-vb) <= EfficiencyTie*math.Max(math.Abs(va), math.Abs(vb)) {
		if oa, ob := oldSuite(a), oldSuite(b); oa != ob {
			return ob
		}
		if a.TPS.N != b.TPS.N {
			return a.TPS.N > b.TPS.N
		}
	}
	return va > vb
}

// oldSuite says whether any run of g was read from an old-suite file.
func oldSuite(g *Group) bool {
	for _, r := range g.Runs {
		if r.Input.Format == FormatOldSuite {
			return true
		}
	}
	return false
}

// sameWork says whether two groups do the same work per token: their
// model FLOPs per token are known and equal, or, unknown on both sides,
// model and SL are recorded and equal. Per-token figures (tokens/s, cost
// per token, break-even price) compare only such groups.
func sameWork(a, b *Group) bool {
	fa, fb := a.FLOPsPerToken, b.FLOPsPerToken
	switch {
	case fa != nil && fb != nil:
		return math.Abs(*fa-*fb) <= 1e-9*math.Max(*fa, *fb)
	case fa == nil && fb == nil:
		return a.Key.Model == b.Key.Model && a.Config["sequence_length"] != unknown && a.Config["sequence_length"] == b.Config["sequence_length"]
	}
	return false
}

// metricFor picks what a speedup of a over b is computed on: tokens/s/GPU
// when both do the same work per token, else model TFLOP/s/GPU when both
// know it (why says how the work differs), else tokens/s/GPU with why
// saying the work may differ.
func metricFor(a, b *Group) (metric string, sa, sb Summary, why string) {
	if sameWork(a, b) {
		return MetricTokens, a.TPS, b.TPS, ""
	}
	var diff []string
	for _, f := range []string{"sequence_length"} {
		if a.Config[f] != b.Config[f] {
			diff = append(diff, fmt.Sprintf("%s %s vs %s", fieldLabels[f], a.Config[f], b.Config[f]))
		}
	}
	if a.Key.Model != b.Key.Model {
		diff = append(diff, fmt.Sprintf("model %s vs %s", a.Key.Model, b.Key.Model))
	}
	if a.FLOPsPerToken != nil && b.FLOPsPerToken != nil && a.TFLOPsRuns.N == a.TPS.N && b.TFLOPsRuns.N == b.TPS.N {
		diff = append(diff, fmt.Sprintf("%s vs %s GFLOP per token", num(*a.FLOPsPerToken/1e9, 2), num(*b.FLOPsPerToken/1e9, 2)))
		return MetricFLOPs, a.TFLOPsRuns, b.TFLOPsRuns, "work per token differs (" + strings.Join(diff, "; ") + ")"
	}
	return MetricTokens, a.TPS, b.TPS, "work per token may differ (" + dashIfEmpty(strings.Join(diff, "; ")) + "; model FLOPs per token unknown)"
}

func newComparison(a, b *Group) Comparison {
	metric, sa, sb, work := metricFor(a, b)
	if sb.Mean > sa.Mean {
		a, b, sa, sb = b, a, sb, sa
		metric, sa, sb, work = metricFor(a, b)
	}
	ok, why, stack := identical(a, b)
	c := Comparison{Faster: a, Slower: b, Ratio: ratioOfMeans(sa, sb), Metric: metric, WorkDiffers: work, Identical: ok, Why: why, Stack: stack, Method: MethodBest}
	if ok {
		c.Method = MethodIdentical
	}
	if c.Ratio.Inconclusive() {
		c.RunsNeeded = RunsNeeded(sa, sb)
	}
	c.Evidence = evidence(a, b)
	c.FixedWindow, c.FixedWindowNote = fixedWindowRatio(a, b, metric == MetricFLOPs)
	return c
}

// evidence is the verify:results verdict on the first run of each group.
func evidence(a, b *Group) string {
	ra, rb := firstRun(a), firstRun(b)
	var fields []string
	for _, d := range Mismatches(compareResults(ra, rb)) {
		fields = append(fields, d.Field)
	}
	if len(fields) == 0 {
		return "verify:results: identical inputs apart from the hardware"
	}
	return fmt.Sprintf("verify:results: %s beyond the hardware (%s)", english.Plural(len(fields), "difference"), strings.Join(fields, ", "))
}

// fixedWindowRatio recomputes the speedup over NVIDIA's fixed window.
// With flops, each run's figure is scaled by its group's FLOPs per token
// (model FLOP/s over the window).
func fixedWindowRatio(a, b *Group, flops bool) (*Ratio, string) {
	var xa, xb []float64
	for _, g := range []struct {
		g  *Group
		xs *[]float64
	}{{a, &xa}, {b, &xb}} {
		for _, r := range g.g.Runs {
			if r.FixedWindowTPS == nil {
				return nil, g.g.Label + ": " + r.FixedWindowNote
			}
			v := *r.FixedWindowTPS
			if flops {
				v *= *g.g.FLOPsPerToken / 1e12
			}
			*g.xs = append(*g.xs, v)
		}
	}
	r := ratioOfMeans(summarize(xa), summarize(xb))
	return &r, ""
}

func (s *ModelSection) compare() {
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
	for i, a := range s.Groups {
		for _, b := range s.Groups[i+1:] {
			if a.Key.Platform != b.Key.Platform {
				s.Comparisons = append(s.Comparisons, newComparison(a, b))
			}
		}
	}
	// A group is marked when none of the groups it is compared with is identical.
	for _, g := range s.Groups {
		g.Marked = true
		for _, c := range s.Comparisons {
			if c.Identical && (c.Faster == g || c.Slower == g) {
				g.Marked = false
			}
		}
	}
	var plats []string
	for p := range platforms {
		plats = append(plats, p)
	}
	sort.Strings(plats)
	// Headlines, identical configuration first: per platform pair, the
	// identical pair with the most efficient groups.
	for i, p := range plats {
		for _, q := range plats[i+1:] {
			var best *Comparison
			for j := range s.Comparisons {
				c := &s.Comparisons[j]
				if !c.Identical || !c.between(p, q) {
					continue
				}
				if best == nil || moreEfficient(c.Faster, best.Faster) && moreEfficient(c.Slower, best.Slower) {
					best = c
				}
			}
			if best != nil {
				s.Headlines = append(s.Headlines, *best)
			}
		}
	}
	// Then each platform at its best, ranked by MFU (or model TFLOP/s), never
	// by raw tokens/s: a shorter sequence or FP8 must not win by itself.
	best := map[string]*Group{}
	for _, g := range s.Groups {
		if cur, ok := best[g.Key.Platform]; !ok || moreEfficient(g, cur) {
			best[g.Key.Platform] = g
		}
	}
	for i, p := range plats {
		for _, q := range plats[i+1:] {
			c := newComparison(best[p], best[q])
			dup := false
			for _, h := range s.Headlines {
				if h.Faster == c.Faster && h.Slower == c.Slower {
					dup = true
				}
			}
			if !dup {
				s.Headlines = append(s.Headlines, c)
			}
		}
	}
	for i := range s.Headlines {
		s.Headlines[i].MixedStacks = s.mixedStacks(s.Headlines[i])
	}
}

// mixedStacks names each side of c whose platform ran c's framework on more
// than one software stack for this model: those runs are groups of their own,
// shown apart, and a headline must not read as if one stack stood for them.
func (s *ModelSection) mixedStacks(c Comparison) string {
	var notes []string
	for _, side := range []*Group{c.Faster, c.Slower} {
		seen := map[string]int{}
		var stacks []string
		for _, g := range s.Groups {
			if g.Key.Platform != side.Key.Platform || g.Key.Framework != side.Key.Framework {
				continue
			}
			if _, ok := seen[g.Key.Stack]; !ok {
				stacks = append(stacks, g.Key.Stack)
			}
			seen[g.Key.Stack] += g.TPS.N
		}
		if len(stacks) < 2 {
			continue
		}
		sort.Strings(stacks)
		var parts []string
		for _, st := range stacks {
			parts = append(parts, fmt.Sprintf("%s (n=%d)", st, seen[st]))
		}
		notes = append(notes, fmt.Sprintf("%s ran %s on %d software stacks, each shown apart: %s; this headline is %s",
			side.Key.Platform, frameworkLabel(side.Key.Framework), len(stacks), strings.Join(parts, ", "), side.Key.Stack))
	}
	return strings.Join(notes, "; ")
}

func (c Comparison) between(p, q string) bool {
	a, b := c.Faster.Key.Platform, c.Slower.Key.Platform
	return a == p && b == q || a == q && b == p
}

// BreakEven is the price ratio at which two groups cost the same per token:
// the faster group is cheaper per token while its GPU-hour costs less than
// Ratio × the slower's.
func (c Comparison) BreakEven() float64 { return c.Ratio.Value }

// ConfigComparisons pairs the groups of s that differ only in their
// configuration: same platform, GPU, framework and dataset.
func (s *ModelSection) ConfigComparisons() []ConfigComparison {
	var out []ConfigComparison
	for i, a := range s.Groups {
		for _, b := range s.Groups[i+1:] {
			ka, kb := a.Key, b.Key
			if ka.Platform != kb.Platform || ka.GPU != kb.GPU || ka.Framework != kb.Framework || ka.Dataset != kb.Dataset {
				continue
			}
			f, sl := a, b
			metric, sf, ss, work := metricFor(f, sl)
			if ss.Mean > sf.Mean {
				f, sl = sl, f
				metric, sf, ss, work = metricFor(f, sl)
			}
			c := ConfigComparison{Faster: f, Slower: sl, Ratio: ratioOfMeans(sf, ss), TotalRatio: ratioOfMeans(f.TotalTPS, sl.TotalTPS), Metric: metric, WorkDiffers: work}
			if c.Ratio.Inconclusive() {
				c.RunsNeeded = RunsNeeded(sf, ss)
			}
			for _, k := range fairnessFields {
				if f.Config[k] != sl.Config[k] {
					c.Differs = append(c.Differs, differsText(k, f.Config[k], sl.Config[k]))
				}
			}
			if sameSeed(firstRun(f), firstRun(sl)) && ka.Dataset != "" && !strings.HasSuffix(ka.Dataset, "@unknown") {
				lp := lossParity(f, sl)
				c.Parity = &lp
			}
			out = append(out, c)
		}
	}
	return out
}

// ParityPairs are every loss comparison of the model, the one list that
// report.md, report.html, the console and the figure's loss panel speak
// of: the cross-platform pairs (Parity), then those between configurations
// of one platform on the same data and seed, then the framework pairs that
// read the same batches (FrameworkParity).
func (s *ModelSection) ParityPairs() []LossParity {
	out := append([]LossParity(nil), s.Parity...)
	for _, c := range s.ConfigComparisons() {
		if c.Parity != nil {
			out = append(out, *c.Parity)
		}
	}
	return append(out, s.FrameworkParity...)
}
