package compare

import (
	"math"
	"sort"

	"github.com/rivalbench/rival/result"
)

// parity compares loss curves of every pair of groups on the same data and
// seed whose recorded configuration is equal apart, perhaps, from precision:
// cross-platform pairs, and BF16/FP8 pairs on any platform (a convergence
// check of the lower precision). Each group's first run (by source) is used.
func (s *ModelSection) parity() {
	for i, a := range s.Groups {
		for _, b := range s.Groups[i+1:] {
			precisionOnly, ok := parityComparable(a, b)
			if !ok || a.Key.Platform == b.Key.Platform && !precisionOnly || !sameSeed(firstRun(a), firstRun(b)) {
				continue
			}
			lp := lossParity(a, b)
			lp.PrecisionOnly = precisionOnly
			s.Parity = append(s.Parity, lp)
		}
	}
}

// parityComparable is true when a and b are identical configuration, or
// differ in precision only (the config fingerprint covers precision, so it
// may differ then too).
func parityComparable(a, b *Group) (precisionOnly, ok bool) {
	if same, _, _ := identical(a, b); same {
		return false, true
	}
	for _, f := range setupFields {
		x, y := a.Config[f], b.Config[f]
		switch f {
		case "precision", "config_fingerprint":
			if x == unknown || y == unknown {
				return false, false
			}
			if f == "precision" && x != y {
				precisionOnly = true
			}
			continue
		}
		if x == unknown || y == unknown || x != y || len(x) > 7 && x[:7] == "mixed: " {
			return false, false
		}
	}
	return precisionOnly, precisionOnly
}

func firstRun(g *Group) *result.Result {
	best := g.Runs[0]
	for _, r := range g.Runs[1:] {
		if r.Input.Source < best.Input.Source {
			best = r
		}
	}
	return best.Input.Result
}

func lossByStep(r *result.Result) map[int]float64 {
	m := map[int]float64{}
	for i, l := range r.LossValues {
		if l == nil || !finite(*l) || i >= len(r.StepNumbers) {
			continue
		}
		m[r.StepNumbers[i]] = *l
	}
	return m
}

// lossParity compares the curves after warm-up (the larger of both runs'
// excluded warm-up and 10 % of the common steps). The verdict is on the mean
// loss over the last LossTailShare of the common steps (at least one step):
// a single noisy step does not decide it. The largest single-step gap is
// kept for information.
func lossParity(a, b *Group) LossParity {
	ra, rb := firstRun(a), firstRun(b)
	la, lb := lossByStep(ra), lossByStep(rb)
	var steps []int
	for st := range la {
		if _, ok := lb[st]; ok {
			steps = append(steps, st)
		}
	}
	sort.Ints(steps)
	warm := max(ra.WarmupStepsExcluded, rb.WarmupStepsExcluded, len(steps)/10)
	lp := LossParity{A: a, B: b, Warmup: min(warm, len(steps))}
	var kept []int
	for _, st := range steps[lp.Warmup:] {
		x, y := la[st], lb[st]
		den := (math.Abs(x) + math.Abs(y)) / 2
		if den == 0 {
			continue
		}
		kept = append(kept, st)
		gap := math.Abs(x-y) / den
		lp.Steps++
		if gap > lp.MaxGap || !lp.Available {
			lp.MaxGap, lp.AtStep = gap, st
		}
		lp.Available = true
	}
	if !lp.Available {
		return lp
	}
	lp.TailSteps = max(1, int(math.Round(LossTailShare*float64(len(steps)))))
	lp.TailSteps = min(lp.TailSteps, len(kept))
	var sa, sb float64
	for _, st := range kept[len(kept)-lp.TailSteps:] {
		sa += la[st]
		sb += lb[st]
	}
	ma, mb := sa/float64(lp.TailSteps), sb/float64(lp.TailSteps)
	if den := (math.Abs(ma) + math.Abs(mb)) / 2; den > 0 {
		lp.TailGap = math.Abs(ma-mb) / den
	}
	lp.Diverged = lp.TailGap > LossDivergenceThreshold
	return lp
}

// sameSeed is false only when both runs record a SEED and they differ.
func sameSeed(a, b *result.Result) bool {
	if a.Provenance == nil || b.Provenance == nil {
		return true
	}
	x, okA := a.Provenance.Config["SEED"]
	y, okB := b.Provenance.Config["SEED"]
	return !okA || !okB || x == y
}
