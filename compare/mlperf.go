package compare

import (
	"fmt"
	"sort"
	"strconv"
)

// Name is the record as a reader names it: "MLPerf v5.1 NVIDIA Theia (…), 8× GB300 fp4".
func (m *MLPerfRecord) Name() string {
	p := m.Precision
	if p == "" {
		p = "precision not stated"
	}
	return fmt.Sprintf("MLPerf %s %s %s, %d× %s %s", m.Round, m.Submitter, m.System, m.Accelerators, m.Accelerator, p)
}

// MLPerfLine is a group of MLPerf result logs held against a published score of the same system
// shape: benchmark llama31_8b, GPU, GPU count and precision.
type MLPerfLine struct {
	Record *MLPerfRecord
	Group  *Group
	// Minutes summarises the group's run times (mlperf.run_minutes) times the submission's scaling
	// factor, as its score is; Ratio is Minutes over the published score (above 1: slower).
	Minutes Summary
	Ratio   Ratio
}

// mlperfMinutes is the run times of a group whose every run is a successful llama31_8b MLLOG run.
func mlperfMinutes(g *Group) ([]float64, bool) {
	var xs []float64
	for _, run := range g.Runs {
		m := run.Input.Result.MLPerf
		if m == nil || m.Benchmark != "llama31_8b" || m.Status != "success" || m.RunMinutes == nil {
			return nil, false
		}
		xs = append(xs, *m.RunMinutes)
	}
	return xs, len(xs) > 0
}

// MLPerfLines holds every group of MLPerf llama31_8b logs against each published score of the
// same GPU, GPU count and precision.
func (r *Report) MLPerfLines() []MLPerfLine {
	var out []MLPerfLine
	for _, g := range r.Groups {
		xs, ok := mlperfMinutes(g)
		if !ok {
			continue
		}
		for i := range MLPerfLlama31_8B {
			rec := &MLPerfLlama31_8B[i]
			if rec.Accelerator != g.Key.GPU || rec.Accelerators != g.NumGPUs || rec.Precision == "" || rec.Precision != g.Precision {
				continue
			}
			// The score carries the submission's scaling factor: the runs are scaled alike.
			scaled := make([]float64, len(xs))
			for j, x := range xs {
				scaled[j] = x * rec.ScalingFactor
			}
			s := summarize(scaled)
			out = append(out, MLPerfLine{Record: rec, Group: g, Minutes: s, Ratio: anchorRatio(s, rec.Minutes)})
		}
	}
	return out
}

// Text is the line report.md and report.html print.
func (l MLPerfLine) Text() string {
	rule := "1 run"
	if l.Minutes.N > 1 {
		rule = fmt.Sprintf("the mean of %d runs", l.Minutes.N)
	}
	if l.Minutes.MLPerf != nil {
		rule += fmt.Sprintf(", olympic mean %s min", num(*l.Minutes.MLPerf, 2))
	}
	if l.Record.ScalingFactor != 1 {
		rule += fmt.Sprintf(", times the submission's scaling factor %s as its score is", strconv.FormatFloat(l.Record.ScalingFactor, 'f', -1, 64))
	}
	return fmt.Sprintf("%s ÷ %s: measured %s min (%s; the score is the mean of %d of its 10 runs, the fastest and slowest dropped) ÷ published %s min = %s",
		l.Group.name(), l.Record.Name(), num(l.Minutes.Mean, 2), rule, l.Record.RunsUsed, num(l.Record.Minutes, 3), ratioCI(l.Ratio))
}

// mlperfRelevant is the published scores on the report's GPUs, fastest first within each GPU.
func (r *Report) mlperfRelevant() []*MLPerfRecord {
	gpus := map[string]bool{}
	for _, g := range r.Groups {
		gpus[g.Key.GPU] = true
	}
	var out []*MLPerfRecord
	for i := range MLPerfLlama31_8B {
		if rec := &MLPerfLlama31_8B[i]; gpus[rec.Accelerator] {
			out = append(out, rec)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Accelerator != out[j].Accelerator {
			return out[i].Accelerator < out[j].Accelerator
		}
		return out[i].Minutes < out[j].Minutes
	})
	return out
}

// mlperfRule says how the published scores were made, for the report.
const mlperfRule = "MLPerf Training v5.1, Llama 3.1 8B (C4, sequence length 8192, held-out log-perplexity 3.3 on the first 1,024 validation sequences, evaluated every 12,288 samples): time to train is run_stop − run_start of each of 10 runs; the score drops the fastest and the slowest and averages the rest (times the submission's scaling factor, where it has one), as mlcommons/logging's result summarizer computes it"
