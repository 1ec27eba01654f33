package logparse

import (
	"regexp"
	"strings"
)

// Megatron's iteration line, as training_log prints it (print_rank_last):
//
//	[2024-04-06 02:55:45] iteration        2/     100 | consumed samples: 256 | ... |
//
// The timestamp is absent before 2024 and may carry microseconds in forks.
var megatronIteration = regexp.MustCompile(`(?:\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\]\s*)?\biteration\s+(\d+)\s*/\s*(\d+)\s*\|`)

// megatronLine reads an iteration line of the Megatron family (Megatron-LM, Primus,
// Megatron-Bridge, Rival's fsdp trainer). It reports whether the line was one.
func (p *parser) megatronLine(s string, rank int, hasRank bool) bool {
	// Run the expression only near the first "iteration", where the step number is.
	at := strings.Index(s, "iteration")
	if at < 0 {
		return false
	}
	at = max(0, at-48)
	for at > 0 && s[at] != '[' && s[at] != ' ' {
		at--
	}
	s = s[at:]
	m := megatronIteration.FindStringSubmatchIndex(s)
	if m == nil {
		return false
	}
	n, ok1 := integer(s[m[4]:m[5]])
	total, ok2 := integer(s[m[6]:m[7]])
	if !ok1 || !ok2 {
		return false
	}
	rest := s[m[1]:]
	if !megatronComplete(rest) {
		p.stats.CutLines++
		return true
	}
	st := Step{Step: n, TotalSteps: ptr(total)}
	if m[2] >= 0 {
		st.Timestamp = s[m[2]:m[3]]
	}
	lossRank := 0
	for _, seg := range strings.Split(rest, "|") {
		key, val, found := strings.Cut(seg, ":")
		if !found {
			continue
		}
		key = strings.TrimSpace(key)
		lk := p.canonicalKey(key)
		if p.primusSegment(&st, lk, val) {
			continue
		}
		switch lk {
		case "consumed samples":
			st.setFloat(&st.ConsumedSamples, "consumed_samples", val, 1)
		case "elapsed time per iteration (ms)":
			if strings.Contains(val, "/") {
				p.primusSigns++ // Primus prints "this iteration/running average"
			}
			st.setFloat(&st.StepTimeSeconds, "step_time_s", val, 1e-3)
		case "throughput per gpu (tflop/s/gpu)":
			if strings.Contains(val, "/") {
				p.primusSigns++
			}
			st.setFloat(&st.TFLOPsPerGPU, "framework_tflops_per_gpu", val, 1)
		case "learning rate":
			st.setFloat(&st.LearningRate, "learning_rate", val, 1)
		case "global batch size":
			st.setInt(&st.GlobalBatchSize, val)
		case "lm loss", "loss", "total loss":
			// "lm loss" is the language-model loss; other spellings only when it is absent.
			r := map[string]int{"lm loss": 3, "loss": 2, "total loss": 1}[lk]
			if r > lossRank {
				lossRank = r
				st.setFloat(&st.Loss, "loss", val, 1)
			}
			if lk != "lm loss" {
				st.extra(key, val)
			}
		case "loss scale":
			st.setFloat(&st.LossScale, "loss_scale", val, 1)
		case "grad norm":
			st.setFloat(&st.GradNorm, "grad_norm", val, 1)
		case "number of skipped iterations":
			st.setInt(&st.SkippedIterations, val)
		case "number of nan iterations":
			st.setInt(&st.NaNIterations, val)
		default:
			st.extra(key, val)
		}
	}
	if p.pendingBridge != nil {
		b := p.pendingBridge
		p.pendingBridge = nil
		if st.StepTimeSeconds == nil && !hasNonFinite(st, "step_time_s") {
			st.StepTimeSeconds = b.StepTimeSeconds
		}
		if st.TFLOPsPerGPU == nil && !hasNonFinite(st, "framework_tflops_per_gpu") {
			st.TFLOPsPerGPU = b.TFLOPsPerGPU
		}
		if st.TokensPerSecondPerGPU == nil {
			st.TokensPerSecondPerGPU = b.TokensPerSecondPerGPU
		}
		st.NonFinite = append(st.NonFinite, b.NonFinite...)
	}
	p.mega.add(st, rank, hasRank, p.world)
	return true
}

func hasNonFinite(st Step, name string) bool {
	for _, n := range st.NonFinite {
		if n == name {
			return true
		}
	}
	return false
}

// megatronComplete reports whether an iteration line's segments all arrived:
// Megatron ends each segment with " |"; Primus may end the line with its memory
// segment instead ("... usage_ratio: 153.81GB/102.17GB/255.98GB/60.09%").
func megatronComplete(rest string) bool {
	t := strings.TrimRight(rest, " \t")
	if strings.HasSuffix(t, "|") {
		return true
	}
	last := t[strings.LastIndexByte(t, '|')+1:]
	return strings.Contains(last, "mem usage") && strings.HasSuffix(last, "%") && strings.Count(last, "/") >= 2
}

// canonicalKey lower-cases a printed key and collapses runs of spaces. Keys repeat on
// every line, so the result is cached (boundedly).
func (p *parser) canonicalKey(k string) string {
	if c, ok := p.keys[k]; ok {
		return c
	}
	c := strings.Join(strings.Fields(strings.ToLower(k)), " ")
	if len(p.keys) < 1024 {
		p.keys[k] = c
	}
	return c
}

// Megatron's memory report: "[Rank 1] (after 1 iterations) memory (MB) | allocated: ...".
// Megatron-LM prints MB (really MiB: bytes/1024/1024); Megatron-Bridge prints
// "memory (GB)" with "mem-...-gigabytes" keys of 10^9 bytes.
var memoryHeader = regexp.MustCompile(`\[Rank (\d+)\] \(after (\d+) iterations\) memory \(([A-Za-z]+)\)`)

func (p *parser) memoryLine(s string) bool {
	m := memoryHeader.FindStringSubmatchIndex(s)
	if m == nil {
		return false
	}
	rank, _ := integer(s[m[2]:m[3]])
	after, _ := integer(s[m[4]:m[5]])
	unit := s[m[6]:m[7]]
	scale := 1.0 // MB and MiB
	switch strings.ToLower(unit) {
	case "gb":
		scale = mibPerGB
	case "gib":
		scale = mibPerGiB
	}
	note := MemoryNote{Rank: rank, AfterIterations: after}
	for _, seg := range strings.Split(s[m[1]:], "|") {
		key, val, found := strings.Cut(seg, ":")
		if !found {
			continue
		}
		key = strings.TrimSpace(key)
		lk := strings.ToLower(key)
		f, finite, ok := number(val)
		if !ok || !finite {
			note.setExtra(key, val)
			continue
		}
		sc := scale
		base := lk
		switch {
		case strings.HasSuffix(lk, "-gigabytes"):
			sc, base = mibPerGB, strings.TrimSuffix(strings.TrimPrefix(lk, "mem-"), "-gigabytes")
		case strings.HasSuffix(lk, "-bytes"):
			sc, base = mibPerB, strings.TrimSuffix(strings.TrimPrefix(lk, "mem-"), "-bytes")
		}
		v := ptr(f * sc)
		switch base {
		case "allocated":
			note.AllocatedMiB = v
		case "max allocated", "max-allocated":
			note.MaxAllocatedMiB = v
		case "reserved":
			note.ReservedMiB = v
		case "max reserved", "max-reserved":
			note.MaxReservedMiB = v
		default:
			note.setExtra(key, val)
		}
	}
	if strings.Contains(s, "-gigabytes") {
		p.bridgeSigns++
	}
	if len(p.mem) < maxMemoryNotes {
		p.mem = append(p.mem, note)
	}
	return true
}

// maxMemoryNotes bounds the memory reports kept (Megatron prints one per
// model-parallel rank, once).
const maxMemoryNotes = 4096

func (n *MemoryNote) setExtra(key, val string) {
	if n.Extra == nil {
		n.Extra = map[string]string{}
	}
	if len(n.Extra) < maxExtraKeys {
		n.Extra[key] = strings.TrimSpace(val)
	}
}
