package compare

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/result"
)

// ParseTargetLoss reads TARGET_LOSS: a held-out loss in nats per token ("3.3"); "" means none
// is set (compare then uses the target the results' MLPerf logs record, if they agree).
func ParseTargetLoss(s string) (float64, bool, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !finite(v) || v <= 0 {
		return 0, false, fmt.Errorf("TARGET_LOSS=%q: want a held-out loss in nats per token above 0, such as 3.3 (MLPerf's Llama 3.1 8B target)", s)
	}
	return v, true, nil
}

// SetTarget computes every model's held-out section against target (has false: the target the
// results' MLPerf logs record when they all agree, else none: evaluations only).
func (r *Report) SetTarget(target float64, has bool) {
	r.Target, r.HasTarget, r.TargetSource = target, has, ""
	if has {
		r.TargetSource = "TARGET_LOSS"
	} else if t, ok := recordedTarget(r.Groups); ok {
		r.Target, r.HasTarget, r.TargetSource = t, true, "the target_accuracy the MLPerf logs record"
	}
	for _, s := range r.Models {
		s.HeldOut = heldOut(s.Groups, r.Target, r.HasTarget)
	}
}

// recordedTarget is the MLPerf target every result that records one agrees on.
func recordedTarget(gs []*Group) (float64, bool) {
	var t *float64
	for _, g := range gs {
		for _, run := range g.Runs {
			m := run.Input.Result.MLPerf
			if m == nil || m.TargetLoss == nil {
				continue
			}
			if t != nil && *t != *m.TargetLoss {
				return 0, false
			}
			t = m.TargetLoss
		}
	}
	if t == nil {
		return 0, false
	}
	return *t, true
}

// periodic is a run's periodic held-out evaluations that say how many samples preceded them.
func periodic(r *result.Result) []result.Evaluation {
	var out []result.Evaluation
	for _, e := range r.Evaluations {
		if e.Set == "validation" && e.SamplesSeen != nil && finite(e.Loss) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return *out[i].SamplesSeen < *out[j].SamplesSeen })
	return out
}

func heldOut(gs []*Group, target float64, has bool) *HeldOut {
	h := &HeldOut{}
	for _, g := range gs {
		hg := &HeldOutGroup{Group: g}
		var samples, tokens, wall, train, final []float64
		for _, run := range g.Runs {
			ev := periodic(run.Input.Result)
			if len(ev) == 0 {
				hg.NoEvals++
				continue
			}
			tr := crossing(run, ev, target, has)
			hg.Runs = append(hg.Runs, tr)
			final = append(final, ev[len(ev)-1].Loss)
			if !tr.Reached {
				continue
			}
			hg.Reached++
			samples = append(samples, tr.Samples)
			if tr.Tokens > 0 {
				tokens = append(tokens, tr.Tokens)
			}
			if tr.WallSeconds != nil {
				wall = append(wall, *tr.WallSeconds)
			}
			if tr.TrainSeconds != nil {
				train = append(train, *tr.TrainSeconds)
			}
		}
		if len(hg.Runs) == 0 {
			continue
		}
		hg.Samples, hg.Tokens, hg.WallSeconds, hg.TrainSeconds = summarize(samples), summarize(tokens), summarize(wall), summarize(train)
		hg.Final = summarize(final)
		h.Groups = append(h.Groups, hg)
	}
	for i, a := range h.Groups {
		for _, b := range h.Groups[i+1:] {
			if p, ok := sameCurve(a, b); ok {
				h.Same = append(h.Same, p)
			}
		}
	}
	if len(h.Groups) == 0 {
		return nil
	}
	return h
}

// crossing finds where a run's held-out loss first reaches target: between the last evaluation
// above it and the first at or below it, linearly in loss.
func crossing(run *Run, ev []result.Evaluation, target float64, has bool) TargetRun {
	tr := TargetRun{Run: run, Evals: ev, Best: math.Inf(1)}
	for _, e := range ev {
		tr.Best = min(tr.Best, e.Loss)
	}
	if !has {
		return tr
	}
	for i, e := range ev {
		if e.Loss > target {
			continue
		}
		tr.Reached = true
		if i == 0 {
			tr.Samples = float64(*e.SamplesSeen)
			tr.Tokens = floatOr(e.TokensSeen)
			tr.WallSeconds, tr.TrainSeconds = e.WallSeconds, e.TrainSeconds
			return tr
		}
		p := ev[i-1]
		f := (p.Loss - target) / (p.Loss - e.Loss)
		at := func(a, b float64) float64 { return a + f*(b-a) }
		tr.Interpolated = true
		tr.Samples = at(float64(*p.SamplesSeen), float64(*e.SamplesSeen))
		if p.TokensSeen != nil && e.TokensSeen != nil {
			tr.Tokens = at(float64(*p.TokensSeen), float64(*e.TokensSeen))
		}
		if p.WallSeconds != nil && e.WallSeconds != nil {
			x := at(*p.WallSeconds, *e.WallSeconds)
			tr.WallSeconds = &x
		}
		if p.TrainSeconds != nil && e.TrainSeconds != nil {
			x := at(*p.TrainSeconds, *e.TrainSeconds)
			tr.TrainSeconds = &x
		}
		return tr
	}
	return tr
}

func floatOr(p *int64) float64 {
	if p == nil {
		return 0
	}
	return float64(*p)
}

// sameCurve compares the first runs of two groups at the training samples both evaluated at.
func sameCurve(a, b *HeldOutGroup) (HeldOutPair, bool) {
	p := HeldOutPair{A: a.Group, B: b.Group}
	at := map[int64]float64{}
	for _, e := range a.Runs[0].Evals {
		at[*e.SamplesSeen] = e.Loss
	}
	for _, e := range b.Runs[0].Evals {
		la, ok := at[*e.SamplesSeen]
		if !ok {
			continue
		}
		d := e.Loss - la
		if den := (math.Abs(la) + math.Abs(e.Loss)) / 2; den > 0 {
			p.MaxRel = max(p.MaxRel, math.Abs(d)/den)
		}
		p.Samples = append(p.Samples, float64(*e.SamplesSeen))
		p.Diff = append(p.Diff, d)
	}
	return p, len(p.Samples) >= 2 && p.MaxRel <= HeldOutTolerance
}

// targetLine says what the held-out section measures time to.
func (r *Report) targetLine() string {
	if !r.HasTarget {
		return "No target loss is set (TARGET_LOSS, nats per token; MLPerf's Llama 3.1 8B target is 3.3), so no time to target is computed."
	}
	return fmt.Sprintf("Target held-out loss %s nats per token (%s). Samples, tokens and times to it are interpolated linearly in loss between the last evaluation above it and the first at or below it (≤: the run's first evaluation was already at or below it, an upper bound).", lossText(r.Target), r.TargetSource)
}

// toTargetCell is a group's summary of one figure to the target, in unit after scaling by scale.
func (hg *HeldOutGroup) toTargetCell(s Summary, prec int, scale float64, unit string) string {
	if hg.Reached == 0 {
		return "not reached"
	}
	s.Mean, s.Half, s.SD, s.CILo, s.CIHi = s.Mean/scale, s.Half/scale, s.SD/scale, s.CILo/scale, s.CIHi/scale
	cell := summaryCell(s, prec)
	if unit != "" {
		mean := num(s.Mean, prec)
		cell = mean + " " + unit + strings.TrimPrefix(cell, mean)
	}
	upper := false
	for _, tr := range hg.Runs {
		upper = upper || tr.Reached && !tr.Interpolated
	}
	if upper {
		cell = "≤ " + cell
	}
	return cell
}

// tokensCell gives tokens to the target in billions at LLM scale, else as a count.
func (hg *HeldOutGroup) tokensCell() string {
	if hg.Tokens.Mean >= 1e9 {
		return hg.toTargetCell(hg.Tokens, 3, 1e9, "B")
	}
	return hg.toTargetCell(hg.Tokens, 0, 1, "")
}

// timeCell gives a time to the target in minutes, or in seconds when it is under ten minutes.
func (hg *HeldOutGroup) timeCell(s Summary) string {
	if s.Mean < 600 {
		return hg.toTargetCell(s, 1, 1, "s")
	}
	return hg.toTargetCell(s, 1, 60, "min")
}

// reachedCell says how many of the evaluated runs reached the target.
func (hg *HeldOutGroup) reachedCell(has bool) string {
	if !has {
		return "—"
	}
	c := fmt.Sprintf("%d of %d", hg.Reached, len(hg.Runs))
	if hg.Reached < len(hg.Runs) {
		best := math.Inf(1)
		for _, tr := range hg.Runs {
			if !tr.Reached {
				best = min(best, tr.Best)
			}
		}
		c += fmt.Sprintf(" (best of the others %s)", lossText(best))
	}
	return c
}

// consoleHeldOut writes one line per group with held-out evaluations: its last held-out loss and,
// with a target, the samples and time to reach it.
func (r *Report) consoleHeldOut(w io.Writer, m *ModelSection) {
	if m.HeldOut == nil {
		return
	}
	for _, hg := range m.HeldOut.Groups {
		line := "last held-out loss " + summaryCell(hg.Final, 4)
		if r.HasTarget {
			line += fmt.Sprintf("; target %s reached by %s", lossText(r.Target), hg.reachedCell(true))
			if hg.Reached > 0 {
				line += ", samples " + hg.toTargetCell(hg.Samples, 0, 1, "")
				if hg.WallSeconds.N > 0 {
					line += ", wall time " + hg.timeCell(hg.WallSeconds)
				} else if hg.TrainSeconds.N > 0 {
					line += ", training time " + hg.timeCell(hg.TrainSeconds)
				}
			}
		}
		fmt.Fprintf(w, "  held-out, %s: %s\n", m.DisplayName(hg.Group), line)
	}
}
