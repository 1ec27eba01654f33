package conformance

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks/logparse"
)

// ReportFile is the report Collect's caller writes in a plan's folder (JSON, loadable with pandas'
// json_normalize on "runs" and "pairs").
const ReportFile = "report.json"

// RunReport is what one run did.
type RunReport struct {
	Run
	Exit  int    `json:"exit"`
	Error string `json:"error,omitempty"` // why the run counts as failed
	Tail  string `json:"tail,omitempty"`  // the end of a failed run's output
	// Steps are a conformance runner's steps; Configs the config objects it printed.
	Steps   []Step            `json:"steps,omitempty"`
	Configs map[string]Config `json:"configs,omitempty"`
	// Train is a training run's steps as Rival's log parser reads them.
	Train []logparse.Step `json:"train,omitempty"`
}

// PairReport is the comparison of two runs of one family.
type PairReport struct {
	Pair
	OK bool `json:"ok"`
	// Layout is the number of parameters both built alike (0 when either run failed).
	Layout int `json:"parameters"`
	// Worst is the largest relative difference of each quantity (loss, grad_norm, lr, grad) over
	// every step and parameter.
	Worst      map[string]float64 `json:"worst"`
	Mismatches []string           `json:"mismatches,omitempty"`
	Error      string             `json:"error,omitempty"`
}

// Report is a plan's outcome.
type Report struct {
	Device    string       `json:"device"`
	DType     string       `json:"dtype"`
	Tolerance Tolerance    `json:"tolerance"`
	Runs      []RunReport  `json:"runs"`
	Pairs     []PairReport `json:"pairs"`
	Failed    int          `json:"failed"` // runs that failed, pairs that disagree, drifts not seen
}

// Collect reads the plan in dir (plan.json) and its runs' output (out/), and compares: every pair
// within the plan's tolerance, every planted drift parting from its reference at its first step.
func Collect(dir string) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, PlanFile))
	if err != nil {
		return nil, fmt.Errorf("conformance: %w (write the plan first)", err)
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", filepath.Join(dir, PlanFile), err)
	}
	rep := &Report{Device: p.Device, DType: p.DType, Tolerance: p.Tolerance}
	steps := map[string][]Step{}
	for i, r := range p.Runs {
		rr := RunReport{Run: r, Exit: -1}
		out, _ := os.ReadFile(filepath.Join(dir, OutDir, fmt.Sprintf("%d.txt", i)))
		rc, err := os.ReadFile(filepath.Join(dir, OutDir, fmt.Sprintf("%d.rc", i)))
		if err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(rc))); err == nil {
				rr.Exit = n
			}
		}
		lines := strings.Split(string(out), "\n")
		switch {
		case rr.Exit == -1:
			rr.Error = "did not run (no exit status in " + OutDir + ")"
		case rr.Exit != 0:
			rr.Error = fmt.Sprintf("exited %d", rr.Exit)
		case r.Kind == KindTrain:
			l, err := logparse.Parse(strings.NewReader(string(out)), r.LogFamily)
			switch {
			case err != nil:
				rr.Error = err.Error()
			case len(l.Steps) == 0:
				rr.Error = "its log has no step lines"
			default:
				rr.Train = l.Steps
				if last := l.Steps[len(l.Steps)-1].Loss; last == nil || math.IsNaN(*last) || math.IsInf(*last, 0) {
					rr.Error = "the last step's loss is missing or not finite"
				}
			}
		default:
			s, err := ParseSteps(lines)
			if err == nil && len(s) != Steps {
				err = fmt.Errorf("%d steps, want %d", len(s), Steps)
			}
			if err != nil {
				rr.Error = err.Error()
				break
			}
			rr.Steps, steps[r.Name] = s, s
			if c, err := ParseConfigs(lines); err != nil {
				rr.Error = err.Error()
			} else {
				rr.Configs = c
			}
		}
		if rr.Error != "" {
			rr.Tail = tail(string(out), 30)
			rep.Failed++
		}
		rep.Runs = append(rep.Runs, rr)
	}
	for _, pr := range p.Pairs {
		a, b := steps[pr.Model+"/"+pr.A], steps[pr.Model+"/"+pr.B]
		r := PairReport{Pair: pr, Worst: map[string]float64{}}
		if a == nil || b == nil {
			r.Error = "a run of the pair failed"
			rep.Failed++
			rep.Pairs = append(rep.Pairs, r)
			continue
		}
		ms, err := Compare(a, b, Tolerance{})
		if err != nil {
			r.Error = err.Error()
		}
		for _, m := range ms {
			q := m.Quantity
			if strings.HasPrefix(q, "grad ") {
				q = "grad"
			}
			r.Worst[q] = max(r.Worst[q], m.Rel)
		}
		if err := Check(pr.A, a, pr.B, b, p.Tolerance); err != nil && r.Error == "" {
			r.Error = err.Error()
		}
		if bad, _ := Compare(a, b, p.Tolerance); len(bad) > 0 {
			for _, m := range bad[:min(len(bad), 20)] {
				r.Mismatches = append(r.Mismatches, m.String())
			}
		}
		r.OK = r.Error == ""
		if r.OK {
			r.Layout = len(a[0].Layout)
		} else {
			rep.Failed++
		}
		rep.Pairs = append(rep.Pairs, r)
	}
	return rep, nil
}

// Write writes the report as report.json in dir.
func (r *Report) Write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	return cache.WriteFileAtomic(filepath.Join(dir, ReportFile), append(b, '\n'), 0o644)
}

// Summary is the report in lines a person reads: each pair's verdict with its largest differences,
// each training run's first and last loss and median step time, and every failure with its cause.
func (r *Report) Summary() []string {
	out := []string{fmt.Sprintf("conformance on %s in %s (tolerance: loss %g, grad norm %g, lr %g, per-parameter grad %g)",
		r.Device, r.DType, r.Tolerance.Loss, r.Tolerance.GradNorm, r.Tolerance.LR, r.Tolerance.Grad)}
	for _, p := range r.Pairs {
		verdict := "agree"
		if !p.OK {
			verdict = "DIFFER: " + p.Error
		}
		out = append(out, fmt.Sprintf("  %s: %s against %s: %s (largest relative difference: loss %.2g, grad norm %.2g, lr %.2g, grad %.2g)",
			p.Model, p.B, p.A, verdict, p.Worst["loss"], p.Worst["grad_norm"], p.Worst["lr"], p.Worst["grad"]))
	}
	for _, rr := range r.Runs {
		switch {
		case rr.Error != "":
			out = append(out, fmt.Sprintf("  %s FAILED: %s", rr.Name, rr.Error))
		case rr.Kind == KindTrain:
			out = append(out, "  "+trainLine(rr))
		}
	}
	if r.Failed == 0 {
		out = append(out, "conformance: all agree")
	} else {
		out = append(out, fmt.Sprintf("conformance: %d failures", r.Failed))
	}
	return out
}

// trainLine is a training run's steps, first and last loss and median step time.
func trainLine(rr RunReport) string {
	s := rr.Train
	var times []float64
	for _, x := range s[min(1, len(s)-1):] { // the first step compiles and allocates
		if x.StepTimeSeconds != nil {
			times = append(times, *x.StepTimeSeconds)
		}
	}
	loss := func(x logparse.Step) string {
		if x.Loss == nil {
			return "?"
		}
		return fmt.Sprintf("%.4f", *x.Loss)
	}
	med := "?"
	if len(times) > 0 {
		med = fmt.Sprintf("%.1f ms", 1000*median(times))
	}
	return fmt.Sprintf("%s: %d steps, loss %s at step %d, %s at step %d, median step %s", rr.Name, len(s), loss(s[0]), s[0].Step, loss(s[len(s)-1]), s[len(s)-1].Step, med)
}

func median(x []float64) float64 {
	y := slices.Sorted(slices.Values(x))
	if len(y)%2 == 1 {
		return y[len(y)/2]
	}
	return (y[len(y)/2-1] + y[len(y)/2]) / 2
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
