package logparse

import "regexp"

// Megatron-Bridge prints, on rank 0 and just before the iteration line:
//
//	Step Time : 9.09s GPU utilization: 663.5MODEL_TFLOP/s/GPU
//
// Some recipes add tokens/s/GPU and peak memory between the fields; releases of
// Aug-Oct 2025 print "GPU utilization: 58.2TFLOP/s/GPU" without "MODEL_".
var bridgeStep = regexp.MustCompile(`Step Time\s*:\s*(\S+?)s\b(?:\s*,?\s*(\S+)\s*tok/s/gpu\s*,?)?(?:\s*GPU utilization:\s*(\S+?)\s*(?:MODEL_)?TFLOP/s/GPU)?`)

func (p *parser) bridgeStepTime(s string) bool {
	m := bridgeStep.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	if m[3] == "" {
		// Without the utilisation field the line may be cut mid-way.
		p.stats.CutLines++
		return true
	}
	if p.pendingBridge != nil {
		p.flushBridge()
	}
	// its own buffer: the step waits for the iteration line, past the parser's
	st := &stepBuf{Step: Step{NumberInferred: true}}
	st.setFloat(&st.StepTimeSeconds, "step_time_s", m[1], 1)
	if m[2] != "" {
		st.setFloat(&st.TokensPerSecondPerGPU, "framework_tokens_per_s_per_gpu", m[2], 1)
	}
	st.setFloat(&st.TFLOPsPerGPU, "framework_tflops_per_gpu", m[3], 1)
	p.pendingBridge = &st.Step
	p.bridgeSigns++
	return true
}

// flushBridge keeps a Step Time line that no iteration line followed, numbered in
// order; finish uses these only when the log has no iteration line at all.
func (p *parser) flushBridge() {
	st := *p.pendingBridge
	p.pendingBridge = nil
	if p.mega.n > 0 || p.megaCut > 0 {
		// the log prints iteration lines: a Step Time line without one is never
		// numbered in its place
		p.stats.CutLines++
		p.notef(-1, "skipped", "a \"Step Time\" line with no iteration line after it (the log ends or the line was lost); not counted as a step")
		return
	}
	st.Step = p.bridgeOnly.n + 1
	p.bridgeOnly.add(p, st, 0, false, 0)
}
