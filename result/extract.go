package result

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/frameworks/logparse"
)

// ExtractEnv lists the environment variables Extract reads, for help texts.
var ExtractEnv = []string{"GPUS", "SL", "GBS", "MBS", "PRECISION", "MODEL", "FRAMEWORK", "PLATFORM", "GPU"}

// Extract reads a training log Rival did not launch and builds its result ("log
// analysis mode"). Facts the log lacks come from env (os.Getenv in the mage target):
// GPUS, SL, GBS, MBS (integers), PRECISION (bf16|fp16|fp8|fp4), MODEL (registry key),
// FRAMEWORK (empty detects it), PLATFORM (nvd|amd|cpu) and GPU (GPU model name).
func Extract(path string, env func(string) string) (*Result, error) {
	return ExtractTraced(path, env, nil)
}

// ExtractTraced is Extract that also reports every decision the parser makes about
// step lines to trace (nil reports nothing).
func ExtractTraced(path string, env func(string) string, trace func(logparse.Event)) (*Result, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	facts := Facts{
		Precision: strings.TrimSpace(env("PRECISION")),
		Model:     strings.TrimSpace(env("MODEL")),
		Platform:  strings.TrimSpace(env("PLATFORM")),
		GPUModel:  strings.TrimSpace(env("GPU")),
	}
	for _, v := range []struct {
		name string
		dst  *int
	}{{"GPUS", &facts.GPUs}, {"SL", &facts.SeqLen}, {"GBS", &facts.GBS}, {"MBS", &facts.MBS}} {
		limit := factLimit[v.name]
		raw := strings.TrimSpace(env(v.name))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("extract %s: %s=%q is not a positive integer", path, v.name, raw)
		}
		if n > limit {
			return nil, fmt.Errorf("extract %s: %s=%d is above %d, more than any training run uses; check the value", path, v.name, n, limit)
		}
		*v.dst = n
	}
	switch p := strings.ToLower(facts.Precision); p {
	case "", "bf16", "fp16", "fp8", "fp4":
		facts.Precision = p
	default:
		return nil, fmt.Errorf("extract %s: PRECISION=%q: use bf16, fp16, fp8 or fp4", path, facts.Precision)
	}
	log, err := logparse.ParseFileTraced(path, env("FRAMEWORK"), trace)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	if facts.LogDigest, err = LogDigest(path); err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	r, err := Build(log, facts)
	if err != nil {
		return nil, fmt.Errorf("extract %s: %w", path, err)
	}
	if trace != nil {
		explain(r, log, env, trace)
	}
	return r, nil
}

// explain reports where each fact came from, which steps the warm-up rule left out
// and what the lines that were not steps were (extract -v). Events have no line
// number (0) unless they name one.
func explain(r *Result, log *logparse.Log, env func(string) string, trace func(logparse.Event)) {
	say := func(action, format string, args ...any) {
		trace(logparse.Event{Step: -1, Action: action, Detail: fmt.Sprintf(format, args...)})
	}
	tc := r.TrainingConfig
	for _, f := range []struct {
		what, key, env string
		v, logged      *int
	}{
		{"global batch size", "global_batch_size", "GBS", tc.GlobalBatchSize, log.Preamble.GlobalBatchSize},
		{"sequence length", "seq_length", "SL", tc.SequenceLength, log.Preamble.SeqLength},
		{"GPU count", "world_size", "GPUS", tc.NumGPUs, log.Preamble.WorldSize},
		{"micro batch size", "micro_batch_size", "MBS", tc.MicroBatchSize, log.Preamble.MicroBatchSize},
		{"train iterations", "train_iters", "", tc.TrainIters, log.Preamble.TrainIters},
	} {
		switch {
		case f.v == nil || *f.v == 0:
			say("fact", "%s: unknown (the log does not print it and %s is not set)", f.what, f.env)
		case f.logged != nil:
			where := log.Preamble.Sources[f.key]
			if where == "" {
				where = "its arguments"
			}
			extra := ""
			if e := strings.TrimSpace(env(f.env)); f.env != "" && e != "" {
				extra = fmt.Sprintf("; %s=%s is overridden", f.env, e)
			}
			say("fact", "%s %d: from the log (%s)%s", f.what, *f.v, where, extra)
		default:
			say("fact", "%s %d: from the environment (%s=%s)", f.what, *f.v, f.env, strings.TrimSpace(env(f.env)))
		}
	}
	if w := r.WarmupStepsExcluded; w > 0 && len(r.StepNumbers) >= w {
		steps := fmt.Sprint(r.StepNumbers[0])
		if w > 1 {
			steps = fmt.Sprintf("%d..%d", r.StepNumbers[0], r.StepNumbers[w-1])
		}
		say("warm-up", "step %s left out: %s", steps, r.warmupRule)
	} else {
		say("warm-up", "no step left out (%s)", r.warmupRule)
	}
	st := log.Stats
	say("lines", "%d lines read: %d step(s) kept, %d duplicate, %d of other ranks, %d cut, %d longer than the line bound; %d memory report(s)%s; "+
		"every other line (arguments, progress bars, profiler and library messages) is noise for the steps and was only searched for facts",
		st.Lines, log.StepCount, st.DuplicateSteps, st.OtherRankLines, st.CutLines, st.LongLines, len(log.Memory), memorySummary(log.Memory))
}

// memorySummary names the first memory report, if any.
func memorySummary(notes []logparse.MemoryNote) string {
	if len(notes) == 0 {
		return ""
	}
	n := notes[0]
	s := fmt.Sprintf(" (rank %d after %d iterations", n.Rank, n.AfterIterations)
	if n.MaxAllocatedMiB != nil {
		s += fmt.Sprintf(": max allocated %.1f MiB", *n.MaxAllocatedMiB)
	}
	if n.MaxReservedMiB != nil {
		s += fmt.Sprintf(", max reserved %.1f MiB", *n.MaxReservedMiB)
	}
	return s + "; used for the memory figures)"
}
