package logparse

import (
	"math"
	"strings"
)

// NeMo 2.0's ProgressPrinter line:
//
//	Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146
//
// Values use Python's ":.4" format (4 significant digits, "1.2e+04" for large ones);
// values that are whole numbers print as integers. Metrics are averages over the
// log interval.
//
// The line is found by nemoProgressMatch (match.go), which returns what
// `Training epoch (\d+), iteration (\d+)/(\d+)` finds.

func (p *parser) nemoLine(s string, rank int, hasRank bool) bool {
	var mbuf [8]int
	m := nemoProgressMatch(s, &mbuf)
	if m == nil {
		return false
	}
	epoch, _ := integer(s[m[2]:m[3]])
	n, ok1 := integer(s[m[4]:m[5]])
	total, ok2 := integer(s[m[6]:m[7]])
	if !ok1 || !ok2 {
		return false
	}
	rest := s[m[1]:]
	p.segs = splitBar(p.segs[:0], rest)
	segs := p.segs
	if len(segs) > 1 && p.nemoCut(segs) {
		p.stats.CutLines++
		p.notef(n, "cut", "NeMo line ends inside its last value or before the keys the other lines print")
		return true
	}
	// NeMo counts iterations from 0 and prints max_steps-1 as the total: "45/99" is
	// step 46 of 100, numbered as Megatron and TorchTitan number it, so that steps
	// line up across frameworks.
	st := p.newStep(Step{Step: n + 1})
	st.TotalSteps, st.Epoch = st.int(total+1), st.int(epoch)
	for _, seg := range segs {
		key, val, found := strings.Cut(seg, ": ")
		if !found {
			continue
		}
		key = strings.TrimSpace(key)
		switch key {
		case "lr":
			st.setFloat(&st.LearningRate, "learning_rate", val, 1)
		case "train_step_timing in s":
			st.setFloat(&st.StepTimeSeconds, "step_time_s", val, 1)
		case "reduced_train_loss":
			st.setFloat(&st.Loss, "loss", val, 1)
		case "grad_norm":
			st.setFloat(&st.GradNorm, "grad_norm", val, 1)
		case "global_batch_size":
			if !st.setInt(&st.GlobalBatchSize, val) {
				st.extra(key, val)
			}
		case "consumed_samples":
			st.setFloat(&st.ConsumedSamples, "consumed_samples", val, 1)
		case "TFLOPS_per_GPU", "tflops_per_gpu":
			st.setFloat(&st.TFLOPsPerGPU, "framework_tflops_per_gpu", val, 1)
		case "tokens_per_sec_per_gpu", "tokens_per_second_per_gpu":
			st.setFloat(&st.TokensPerSecondPerGPU, "framework_tokens_per_s_per_gpu", val, 1)
		case "max_memory_reserved": // bytes
			st.setFloat(&st.MemMaxReservedMiB, "mem_max_reserved_mib", val, mibPerB)
		case "max_memory_allocated": // bytes
			st.setFloat(&st.MemMaxAllocatedMiB, "mem_max_allocated_mib", val, mibPerB)
		case "val_loss":
			p.nemoValLoss(st.Step.Step, val)
			st.extra(key, val)
		default:
			st.extra(key, val)
		}
	}
	p.nemo.add(p, st.Step, rank, hasRank, p.world)
	p.nemoValidating = false // a training line ends the validation lines before it
	return true
}

// NeMo 2.0 prints no line of its own for an evaluation: Lightning's progress printer shows
// "Validation: iteration i/N" while it runs, then every later training line carries the result as
// "| val_loss: 1.264" (4 significant digits) until the next one. nemoValLoss records an evaluation,
// after the step before the line, when validation lines came since the last training line or the
// value changed; a val_loss already there when the log starts has no known step and is left out.
func (p *parser) nemoValLoss(step int, val string) {
	x, finite, ok := number(val)
	if !ok || !finite {
		return
	}
	changed := p.nemoVal != nil && *p.nemoVal != x
	if p.nemoValidating || changed {
		e := Evaluation{Step: step - 1, Loss: x, Set: "validation", Line: p.lineNo}
		if p.nemo.secs > 0 {
			t := p.nemo.secs
			e.TrainSeconds = &t
		}
		p.addEval(e)
	} else if p.nemoVal == nil && p.trace != nil {
		p.notef(step, "skipped", "val_loss %g is already printed: the evaluation that made it is before the log", x)
	}
	p.nemoVal = &x
}

// nemoCut reports whether a NeMo progress line was cut. The line has no end marker,
// so three proofs are used: the last value ends where a number cannot ("6.", "1e+");
// the line's keys are a strict prefix of those the previous complete line printed;
// or the last value is printed shorter than the same key's previous value and is
// more than 10x away from it ("1.2" where "1.253e+03" was printed). Values use
// Python's ":.4" format, so a real change of that size between two log intervals
// does not shorten the printed value and move it tenfold at once.
//
// The first NeMo line has no previous line: a value cut there inside its digits
// ("1.2" of "1.253e+03") looks like a whole number and cannot be caught; only a value
// that ends where a number cannot ("6.", "1.2e+") is.
func (p *parser) nemoCut(segs []string) bool {
	last := segs[len(segs)-1]
	key, v, found := strings.Cut(last, ": ")
	if !found {
		return true
	}
	v = strings.TrimSpace(v)
	x, _, ok := number(v)
	if !ok || cutNumber(v) {
		return true
	}
	key = strings.TrimSpace(key)
	// the keys joined by "|", built in a buffer kept between lines
	sig := p.sigBuf[:0]
	for i, seg := range segs[1:] {
		if i > 0 {
			sig = append(sig, '|')
		}
		k, _, _ := strings.Cut(seg, ":")
		sig = append(sig, strings.TrimSpace(k)...)
	}
	p.sigBuf = sig
	if prev := p.nemoKeys; len(sig) < len(prev) && prev[:len(sig)] == string(sig) && prev[len(sig)] == '|' {
		return true
	}
	pv, seen := p.nemoLast[key]
	if seen && len(v) < pv.len {
		if a, b := x, pv.x; a != 0 && b != 0 && (math.Abs(b/a) > 10 || math.Abs(a/b) > 10) {
			return true
		}
	}
	if p.nemoKeys != string(sig) {
		p.nemoKeys = string(sig)
	}
	if seen || len(p.nemoLast) < maxExtraKeys {
		if !seen {
			key = strings.Clone(key)
		}
		p.nemoLast[key] = printedValue{len(v), x}
	}
	return false
}

// splitBar appends to dst the pieces of s between "|", as strings.Split(s, "|").
func splitBar(dst []string, s string) []string {
	for {
		i := strings.IndexByte(s, '|')
		if i < 0 {
			return append(dst, s)
		}
		dst = append(dst, s[:i])
		s = s[i+1:]
	}
}

// cutNumber reports whether a printed value ends where no number can: "6.", "1e",
// "1.2e+", "-".
func cutNumber(v string) bool {
	if v == "" {
		return true
	}
	switch v[len(v)-1] {
	case '.', 'e', 'E', '+', '-':
		return true
	}
	return false
}
