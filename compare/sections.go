package compare

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/frameworks/effective"
)

// identical says whether two groups ran the same hyperparameters on the same
// data: every setup field recorded and equal on both sides, and recorded,
// equal dataset and config fingerprints. Otherwise why names every field that
// differs ("GBS 384 vs 128") or is unrecorded. stack says how the software
// differs ("frameworks differ"); the image is built per platform, so its
// digest differing is not counted.
func identical(a, b *Group) (ok bool, why, stack string) {
	var diffs []string
	for _, f := range setupFields {
		x, y := a.Config[f], b.Config[f]
		name := setupNames[f]
		switch {
		case x == unknown && y == unknown:
			diffs = append(diffs, name+" not recorded")
		case x == unknown || y == unknown:
			diffs = append(diffs, fmt.Sprintf("%s %s vs %s", name, x, y))
		case strings.HasPrefix(x, "mixed: ") || strings.HasPrefix(y, "mixed: "):
			diffs = append(diffs, name+" mixed within a group")
		case x != y:
			if strings.HasSuffix(f, "fingerprint") {
				diffs = append(diffs, name+" differs")
			} else {
				diffs = append(diffs, fmt.Sprintf("%s %s vs %s", name, x, y))
			}
		}
	}
	// Gradient accumulation follows from GBS / (MBS × DP); it is named too,
	// since equal GBS at different DP accumulates differently.
	if x, y := gradAccum(a.Config), gradAccum(b.Config); x != "" && y != "" && x != y {
		diffs = append(diffs, fmt.Sprintf("GA %s vs %s", x, y))
	}
	var st []string
	if a.Config["framework"] != b.Config["framework"] {
		st = append(st, "frameworks differ")
	} else if a.Config["framework_version"] != b.Config["framework_version"] {
		st = append(st, "framework versions differ")
	}
	return len(diffs) == 0, strings.Join(diffs, ", "), strings.Join(st, ", ")
}

// gradAccum is GBS / (MBS × DP) from a group's recorded configuration, ""
// when a field is unknown or GBS is not a whole multiple.
func gradAccum(c map[string]string) string {
	gbs, e1 := strconv.Atoi(c["global_batch_size"])
	mbs, e2 := strconv.Atoi(c["micro_batch_size"])
	dp, e3 := strconv.Atoi(c["data_parallel"])
	if e1 != nil || e2 != nil || e3 != nil || mbs <= 0 || dp <= 0 || gbs%(mbs*dp) != 0 {
		return ""
	}
	return strconv.Itoa(gbs / (mbs * dp))
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
			diff = append(diff, fmt.Sprintf("%s %s vs %s", setupNames[f], a.Config[f], b.Config[f]))
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
	return fmt.Sprintf("verify:results: %s beyond the hardware (%s)", plural(len(fields), "difference"), strings.Join(fields, ", "))
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
}

func (c Comparison) between(p, q string) bool {
	a, b := c.Faster.Key.Platform, c.Slower.Key.Platform
	return a == p && b == q || a == q && b == p
}

// fairness lists the fields that differ between groups, the fields recorded
// and equal in every group, and the fields no group recorded: unknown is not
// equal to unknown.
//
// The frameworks' effective configurations (what each built, read back by the preflight) are
// compared field by field as "effective.<field>" when any group recorded one; the differences a
// framework does not let Rival remove (effective.AllDeclared) are listed for the frameworks present.
func (s *ModelSection) fairness() {
	fields := fairnessFields
	recordedEffective := false
	for _, g := range s.Groups {
		for k, v := range g.Config {
			if strings.HasPrefix(k, effectivePrefix) && v != unknown {
				recordedEffective = true
			}
		}
	}
	if recordedEffective {
		fields = append(append([]string(nil), fairnessFields...), effectiveFields()...)
	}
	defer func() {
		if !recordedEffective {
			s.Unrecorded = append(s.Unrecorded, "effective configuration")
		}
		present := map[string]bool{}
		for _, g := range s.Groups {
			present[g.Config["framework"]] = true
		}
		for _, d := range effective.AllDeclared() {
			if present[d.Framework] {
				s.Declared = append(s.Declared, d)
			}
		}
	}()
	for _, f := range fields {
		vals := make([]string, len(s.Groups))
		differ, recorded := false, false
		for i, g := range s.Groups {
			vals[i] = g.Config[f]
			if vals[i] != unknown {
				recorded = true
			}
			if i > 0 && vals[i] != vals[0] || strings.HasPrefix(vals[i], "mixed: ") {
				differ = true
			}
		}
		switch {
		case !recorded:
			s.Unrecorded = append(s.Unrecorded, f)
		case differ:
			s.Fairness = append(s.Fairness, FairnessRow{Field: f, Values: vals})
		default:
			s.Identical = append(s.Identical, f)
		}
	}
}
