package logparse

import "strings"

// TorchTitan's metrics line (MetricsProcessor.log), after its logger prefix:
//
//	step: 20  loss: 11.83506  grad_norm:  9.6669  memory: 48.87GiB(51.44%)  tps: 4,376  tflops: 253.41  mfu: 25.62%
//
// tps is tokens per second per device, with thousands separators; memory is the peak
// reserved memory in GiB and its share of the device. Older versions print "wps"
// for tps and no grad_norm or tflops. Validation lines ("validate step: ...") are not
// training steps.
//
// The fields are found by titanFields (match.go), which returns what
// `\b(step|loss|grad_norm|memory|tps|wps|tflops|mfu):\s*(\S+)` finds; the memory
// value is read by titanMemMatch, `^([0-9.]+)GiB\(([0-9.]+)%\)$`.

func (p *parser) titanLine(s string, rank int, hasRank bool) bool {
	i := strings.Index(s, "step:")
	if i < 0 {
		return false
	}
	if strings.HasSuffix(strings.TrimRight(s[:i], " "), "validate") {
		p.titanEvalLine(s[i:]) // a validation line, not a training step
		return true
	}
	var buf [16]kv
	fields := titanFields(buf[:0], s[i:])
	if len(fields) < 2 || fields[0].key != "step" {
		return false
	}
	n, ok := integer(fields[0].val)
	if !ok {
		return false
	}
	last := fields[len(fields)-1]
	if last.key != "mfu" || !(strings.HasSuffix(last.val, "%") || last.val == "N/A") {
		p.stats.CutLines++
		return true
	}
	st := p.newStep(Step{Step: n})
	for _, f := range fields[1:] {
		key, val := f.key, f.val
		switch key {
		case "loss":
			st.setFloat(&st.Loss, "loss", val, 1)
		case "grad_norm":
			st.setFloat(&st.GradNorm, "grad_norm", val, 1)
		case "memory":
			if gib, pct, ok := titanMemMatch(val); ok {
				st.setFloat(&st.MemMaxReservedMiB, "mem_max_reserved_mib", gib, mibPerGiB)
				st.setFloat(&st.MemUsedFraction, "mem_used_fraction", pct, 0.01)
			} else {
				st.extra(key, val)
			}
		case "tps", "wps":
			st.setFloat(&st.TokensPerSecondPerGPU, "framework_tokens_per_s_per_gpu", val, 1)
		case "tflops":
			st.setFloat(&st.TFLOPsPerGPU, "framework_tflops_per_gpu", val, 1)
		case "mfu":
			if val != "N/A" {
				st.setFloat(&st.MFUPercent, "framework_mfu_percent", val, 1)
			}
		}
	}
	p.titan.add(p, st.Step, rank, hasRank, p.world)
	return true
}
