package logparse

import (
	"math"
	"strings"
)

// Megatron-LM, Megatron-Bridge and Primus (which prints Megatron's string) report an evaluation
// between two dashed lines (training.py evaluate_and_print_results; Bridge's eval.py):
//
//	 validation loss at iteration 1000 | lm loss value: 5.314413E+00 | lm loss PPL: 2.032451E+02 |
//	 validation loss at iteration 2500 on validation set | lm loss value: ... |
//	 validation loss at iteration 2500 on test set | lm loss value: ... |
//	 validation-set-A loss at iteration 0 (pre-train validation) | lm loss value: ... |
//	validation loss at the end of training for val data | lm loss value: ... |   (before mid-2023)
//
// The value is the token-weighted mean over the evaluation's batches; "lm loss" is the language
// model's loss (other keys, such as an MoE's load-balancing loss, are not the held-out loss).

// megatronEvalLine reads a validation line; it reports false when s is not one.
func (p *parser) megatronEvalLine(s string) bool {
	at := strings.Index(s, " loss at ")
	if at < 0 {
		return false
	}
	name := strings.TrimSpace(s[:at])
	if k := strings.LastIndexByte(name, ' '); k >= 0 {
		name = name[k+1:]
	}
	if !strings.HasPrefix(name, "validation") {
		return false
	}
	segs := strings.Split(s[at+len(" loss at "):], "|")
	where := strings.TrimSpace(segs[0])
	if name == "validation" {
		name = "validation" // the constant, not a view of the line, which is not kept
	} else {
		name = strings.Clone(name)
	}
	e := Evaluation{Set: name, Line: p.lineNo}
	switch {
	case strings.HasPrefix(where, "iteration "):
		f := strings.Fields(where[len("iteration "):])
		if len(f) == 0 {
			return false
		}
		n, ok := integer(f[0])
		if !ok {
			return false
		}
		e.Step = n
		switch rest := strings.Join(f[1:], " "); rest {
		case "", "(pre-train validation)":
		case "on validation set":
			e.Set = name + "-final"
		case "on test set":
			e.Set = "test"
		default:
			return false
		}
	case where == "the end of training for val data":
		e.Step, e.Set = p.mega.last, name+"-final"
	case where == "the end of training for test data":
		e.Step, e.Set = p.mega.last, "test"
	default:
		return false
	}
	found := false
	for _, seg := range segs[1:] {
		k, v, ok := strings.Cut(seg, " value:")
		if !ok {
			continue
		}
		x, finite, ok := number(v)
		if !ok || !finite {
			continue
		}
		if key := strings.TrimSpace(k); key == "lm loss" || !found {
			e.Loss, found = x, true
			if key == "lm loss" {
				break
			}
		}
	}
	if !found {
		p.stats.CutLines++
		return true
	}
	if p.mega.secs > 0 {
		t := p.mega.secs
		e.TrainSeconds = &t
	}
	p.addEval(e)
	return true
}

// titanEvalLine reads TorchTitan's validator line (metrics.py, MetricsProcessor.log_validation):
//
//	validate step: 10  loss:  2.3456  memory: 69.81GiB(88.17%)  tps: 74,599
//
// printed by every rank with the same figures; the step is the training step just done.
func (p *parser) titanEvalLine(s string) {
	var buf [16]kv
	fields := titanFields(buf[:0], s)
	if len(fields) < 2 || fields[0].key != "step" || fields[1].key != "loss" {
		return
	}
	n, ok := integer(fields[0].val)
	if !ok {
		return
	}
	x, finite, ok := number(fields[1].val)
	if !ok || !finite {
		return
	}
	e := Evaluation{Step: n, Loss: x, Set: "validation", Line: p.lineNo}
	if p.titan.secs > 0 {
		t := p.titan.secs
		e.TrainSeconds = &t
	}
	p.addEval(e)
}

// MaxEvaluations bounds the evaluations a Log keeps (a log of any size has bounded memory); real
// runs evaluate tens of times.
const MaxEvaluations = 4096

// addEval keeps e when it follows the last kept evaluation of its set: at the same step with the
// same loss it is another rank's copy of the line; at an earlier step, or the same step with
// another loss, it belongs to a second run in the same log, whose steps are dropped as duplicates
// too. An evaluation at a negative step, or with a time that is not finite, is no evaluation.
func (p *parser) addEval(e Evaluation) {
	if e.Step < 0 || math.IsNaN(e.Loss) || math.IsInf(e.Loss, 0) {
		return
	}
	for _, t := range []**float64{&e.TrainSeconds, &e.ClockSeconds} {
		if *t != nil && (math.IsNaN(**t) || math.IsInf(**t, 0) || **t < 0) {
			*t = nil
		}
	}
	for i := len(p.evals) - 1; i >= 0; i-- {
		last := p.evals[i]
		if last.Set != e.Set {
			continue
		}
		if e.Step < last.Step || e.Step == last.Step && e.Loss != last.Loss {
			if p.trace != nil {
				p.notef(e.Step, "skipped", "%s evaluation at step %d after one at step %d: another run in the same log", e.Set, e.Step, last.Step)
			}
			return
		}
		if e.Step == last.Step {
			if p.trace != nil {
				p.notef(e.Step, "skipped", "a second %s evaluation at step %d with the same loss (another rank's line)", e.Set, e.Step)
			}
			return
		}
		break
	}
	if len(p.evals) >= MaxEvaluations {
		if p.trace != nil {
			p.notef(e.Step, "skipped", "more than %d evaluations: the rest are not kept", MaxEvaluations)
		}
		return
	}
	if p.trace != nil {
		p.notef(e.Step, "read", "%s loss %g at step %d", e.Set, e.Loss, e.Step)
	}
	p.evals = append(p.evals, e)
}
