package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"

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
	steps := commonSteps(la, lb)
	warm := max(ra.WarmupStepsExcluded, rb.WarmupStepsExcluded, len(steps)/10)
	lp := LossParity{A: a, B: b, Warmup: min(warm, len(steps)), StepWise: stepParity(ra, rb)}
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

func commonSteps(la, lb map[int]float64) []int {
	var steps []int
	for st := range la {
		if _, ok := lb[st]; ok {
			steps = append(steps, st)
		}
	}
	sort.Ints(steps)
	return steps
}

// sampleDigest is the digest of the first samples r trained on, "" when it
// records none.
func sampleDigest(r *result.Result) string {
	if r.SampleOrder == nil {
		return ""
	}
	return r.SampleOrder.BLAKE3
}

// stepParity compares ra and rb at every step either records, warm-up included, when both
// recorded the same sample-order digest; nil otherwise. A step one run records with a finite loss and
// the other does not (a NaN, or a run that stopped early) counts as infinitely apart. The curves part
// at the first step from which every later step differs by more than StepLossTolerance, when that
// stretch lasts at least StepPartMinSteps steps (all of them on a shorter curve): a step that comes
// back within it, or one noisy last step, is noise.
func stepParity(ra, rb *result.Result) *StepParity {
	d := sampleDigest(ra)
	if d == "" || d != sampleDigest(rb) {
		return nil
	}
	la, lb := rawLossByStep(ra), rawLossByStep(rb)
	seen := map[int]bool{}
	for st := range la {
		seen[st] = true
	}
	for st := range lb {
		seen[st] = true
	}
	var steps []int
	for st := range seen {
		steps = append(steps, st)
	}
	sort.Ints(steps)
	sp := &StepParity{Digest: d}
	from := 0 // the first step of the current stretch above tolerance; 0: none
	for _, st := range steps {
		x, okx := la[st]
		y, oky := lb[st]
		okx, oky = okx && finite(x), oky && finite(y)
		if !okx && !oky {
			continue // neither run has a loss here: nothing to compare
		}
		sd := StepDiff{Step: st, A: x, B: y}
		switch {
		case okx && oky:
			sd.Abs = math.Abs(x - y)
			if den := (math.Abs(x) + math.Abs(y)) / 2; den > 0 {
				sd.Rel = sd.Abs / den
			}
		default:
			sd.Abs, sd.Rel = math.Inf(1), math.Inf(1)
			if !okx {
				sd.A = math.NaN()
			} else {
				sd.B = math.NaN()
			}
		}
		if len(sp.Diffs) == 0 || sd.Rel > sp.Largest.Rel {
			sp.Largest = sd
		}
		if sd.Rel <= StepLossTolerance {
			from = 0
		} else if from == 0 {
			from = st
		}
		sp.Diffs = append(sp.Diffs, sd)
	}
	if from != 0 {
		stretch := 0
		for _, sd := range sp.Diffs {
			if sd.Step >= from {
				stretch++
			}
		}
		if stretch >= min(StepPartMinSteps, len(sp.Diffs)) {
			sp.Parted, sp.PartedAt = true, from
		}
	}
	return sp
}

// rawLossByStep is every step r records with its loss, NaN where the loss is null or not finite.
func rawLossByStep(r *result.Result) map[int]float64 {
	m := map[int]float64{}
	for i, st := range r.StepNumbers {
		v := math.NaN()
		if i < len(r.LossValues) && r.LossValues[i] != nil {
			v = *r.LossValues[i]
		}
		m[st] = v
	}
	return m
}

// InParity is the pair's verdict: a framework pair's curves never part step
// by step; any other pair's tail means do not diverge.
func (lp LossParity) InParity() bool {
	if lp.Frameworks {
		// Step by step the curves must not part, and a steady offset below the per-step allowance
		// must not add up to a tail-mean gap above LossDivergenceThreshold either.
		return lp.StepWise != nil && !lp.StepWise.Parted && !lp.Diverged
	}
	return !lp.Diverged
}

// Compared says whether the pair has a verdict: a framework pair shares a
// step, any other pair a step after warm-up.
func (lp LossParity) Compared() bool {
	if lp.Frameworks {
		return lp.StepWise != nil && len(lp.StepWise.Diffs) > 0
	}
	return lp.Available
}

// frameworkParity pairs the groups of s that differ in framework and read the
// same batches: every setup field but the config fingerprint (each framework
// fingerprints its own configuration) recorded and equal, the same seed, and
// the same sample-order digest on both first runs. The platform and GPU may
// differ: the digest, not the hardware, says the batches are the same, and
// the one framework of a platform is often compared with another platform's.
// A pair already in s.Parity (identical configuration across platforms) is
// left there. A pair that fails only on the seed or the sample order goes to
// s.FrameworkSkipped with the reason, so no expected comparison is missing
// silently.
func (s *ModelSection) frameworkParity() {
	for i, a := range s.Groups {
		for _, b := range s.Groups[i+1:] {
			if a.Key.Framework == b.Key.Framework || !sameSetup(a, b) || s.inParity(a, b) {
				continue
			}
			if why := batchesDiffer(a, b); why != "" {
				s.FrameworkSkipped = append(s.FrameworkSkipped, SkippedPair{A: a, B: b, Why: why})
				continue
			}
			lp := lossParity(a, b)
			lp.Frameworks = true
			s.FrameworkParity = append(s.FrameworkParity, lp)
		}
	}
}

// sameSetup: every setup field but the config fingerprint recorded, not mixed
// within a group, and equal.
func sameSetup(a, b *Group) bool {
	for _, f := range setupFields {
		if f == "config_fingerprint" {
			continue
		}
		x, y := a.Config[f], b.Config[f]
		if x == unknown || y == unknown || x != y || strings.HasPrefix(x, "mixed: ") {
			return false
		}
	}
	return true
}

func (s *ModelSection) inParity(a, b *Group) bool {
	for _, lp := range s.Parity {
		if lp.A == a && lp.B == b || lp.A == b && lp.B == a {
			return true
		}
	}
	return false
}

// batchesDiffer says why the first runs of a and b did not read the same
// batches, "" when they did: the seeds differ, a run records no sample order,
// or the digests differ.
func batchesDiffer(a, b *Group) string {
	ra, rb := firstRun(a), firstRun(b)
	if !sameSeed(ra, rb) {
		return fmt.Sprintf("seeds differ (SEED %s vs %s)", ra.Provenance.Config["SEED"], rb.Provenance.Config["SEED"])
	}
	da, db := sampleDigest(ra), sampleDigest(rb)
	switch {
	case da == "" && db == "":
		return "neither run records a sample order, so their steps need not hold the same batches"
	case da == "":
		return a.Label + " records no sample order, so the steps need not hold the same batches"
	case db == "":
		return b.Label + " records no sample order, so the steps need not hold the same batches"
	case da != db:
		return fmt.Sprintf("sample orders differ (digest %s vs %s): they did not read the same batches", truncate(da, 12), truncate(db, 12))
	}
	return ""
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
