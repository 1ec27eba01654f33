package logparse

import "strings"

// Progress is what one line of a running trainer's output says about how far the
// run got. ProgressLine reads it line by line while the output streams, for a live
// progress display and for dating steps; Parse reads the finished log.
type Progress struct {
	// Family is the format the line is in: Megatron (any of the Megatron family's
	// iteration lines), NeMo or TorchTitan.
	Family string
	// Step is the step number as the line prints it: Megatron's iteration number,
	// TorchTitan's step, NeMo's global_step (which counts completed steps from 0,
	// unlike Step.Step in a parsed Log).
	Step int
	// Total is the run's step count when a Megatron-format line prints it
	// ("iteration N/ T"); 0 otherwise. NeMo prints max_steps-1 after the iteration,
	// not the step count, so its lines leave Total at 0.
	Total int
	// StepTimeMs is the step time a Megatron-format line prints, in milliseconds as
	// printed ("elapsed time per iteration (ms)"); 0 when it prints none or no
	// number.
	StepTimeMs float64
	// GlobalBatchSize is the "global batch size" a Megatron-format line prints; 0
	// when it prints none.
	GlobalBatchSize int
	// Loss is the training loss the line prints (Megatron "lm loss", TorchTitan
	// "loss", NeMo "reduced_train_loss"); HasLoss is false when it prints none or
	// nan/inf.
	Loss    float64
	HasLoss bool
	// TokensPerSecond is TorchTitan's "tps" (tokens per second per device); 0 when
	// the line prints none.
	TokensPerSecond float64
}

// ProgressLine reads one output line of a trainer. ok is false for lines that are
// not training steps. It recognises, anywhere in the line (after rank labels,
// logger prefixes and terminal colours):
//
//   - Megatron-format iteration lines (Megatron-LM, Primus, Megatron-Bridge,
//     Rival's fsdp trainer) that print an "elapsed time per iteration (ms)" segment;
//   - NeMo 2.0 ProgressPrinter lines ("Training epoch E, iteration N/T | ...") that
//     print a global_step segment;
//   - TorchTitan metrics lines ("step: N  loss: ..."), validation lines excepted.
//
// Unlike Parse it keeps no state between lines: a hard-wrapped iteration line
// counts only if its first part holds the step time.
func ProgressLine(line string) (pr Progress, ok bool) {
	s := stripANSI([]byte(line))
	if strings.Contains(s, "iteration") {
		if pr, ok = megatronProgress(s); ok {
			return pr, true
		}
		if strings.Contains(s, "Training epoch") {
			if pr, ok = nemoProgressLine(s); ok {
				return pr, true
			}
		}
	}
	if strings.Contains(s, "step:") {
		return titanProgress(s)
	}
	return Progress{}, false
}

// megatronProgress reads an iteration line with a step time.
func megatronProgress(s string) (Progress, bool) {
	h, ok := matchIteration(s)
	if !ok {
		return Progress{}, false
	}
	pr := Progress{Family: Megatron, Step: h.n, Total: h.total}
	timed := false
	for _, seg := range strings.Split(s[h.end:], "|") {
		raw, val, found := strings.Cut(seg, ":")
		if !found {
			continue
		}
		switch strings.Join(strings.Fields(strings.ToLower(raw)), " ") {
		case "elapsed time per iteration (ms)":
			timed = true
			// Primus prints "this iteration/running average": the first is this step's.
			if v, finite, ok := number(val); ok && finite && v > 0 {
				pr.StepTimeMs = v
			}
		case "global batch size":
			if n, ok := integer(val); ok && n > 0 {
				pr.GlobalBatchSize = n
			}
		case "lm loss":
			if !pr.HasLoss {
				pr.setLoss(val)
			}
		}
	}
	return pr, timed
}

// nemoProgressLine reads a NeMo ProgressPrinter line by its global_step segment.
func nemoProgressLine(s string) (Progress, bool) {
	var mbuf [8]int
	m := nemoProgressMatch(s, &mbuf)
	if m == nil {
		return Progress{}, false
	}
	pr := Progress{Family: NeMo}
	stepped := false
	for _, seg := range strings.Split(s[m[1]:], "|") {
		key, val, found := strings.Cut(seg, ":")
		if !found {
			continue
		}
		switch strings.TrimSpace(key) {
		case "global_step":
			if n, ok := integer(val); ok && n >= 0 {
				pr.Step, stepped = n, true
			}
		case "reduced_train_loss":
			pr.setLoss(val)
		}
	}
	return pr, stepped
}

// titanProgress reads a TorchTitan metrics line, whole or cut after its step.
func titanProgress(s string) (Progress, bool) {
	i := strings.Index(s, "step:")
	if strings.HasSuffix(strings.TrimRight(s[:i], " "), "validate") {
		return Progress{}, false // a validation line, not a training step
	}
	var buf [16]kv
	fields := titanFields(buf[:0], s[i:])
	if len(fields) == 0 || fields[0].key != "step" {
		return Progress{}, false
	}
	n, ok := integer(fields[0].val)
	if !ok || n < 0 {
		return Progress{}, false
	}
	pr := Progress{Family: TorchTitan, Step: n}
	for _, f := range fields[1:] {
		switch f.key {
		case "loss":
			if !pr.HasLoss {
				pr.setLoss(f.val)
			}
		case "tps":
			if v, finite, ok := number(f.val); ok && finite && v > 0 && pr.TokensPerSecond == 0 {
				pr.TokensPerSecond = v
			}
		}
	}
	return pr, true
}

func (pr *Progress) setLoss(val string) {
	if v, finite, ok := number(val); ok && finite {
		pr.Loss, pr.HasLoss = v, true
	}
}
