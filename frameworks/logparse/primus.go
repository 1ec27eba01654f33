package logparse

import "strings"

// primusSegment reads the segments Primus adds to (or rewrites in) Megatron's
// iteration line. Values are "X/Y" or "X (avg Y)" with X this iteration's value and
// Y a running average; the per-step series takes X. Primus prints memory as "GB" but
// divides by 1024^3, so the numbers are GiB. It reports whether it consumed the segment.
func (p *parser) primusSegment(st *stepBuf, key, val string) bool {
	switch key {
	case "compute per gpu (tflop/s/gpu)":
		st.setFloat(&st.TFLOPsPerGPU, "framework_tflops_per_gpu", val, 1)
	case "tokens per gpu (tokens/s/gpu)", "tokens/s/gpu inst/harmonic mean", "tokens per second per gpu (tok/s/gpu)":
		st.setFloat(&st.TokensPerSecondPerGPU, "framework_tokens_per_s_per_gpu", val, 1)
	case "tokens per gpu per second(tgs)", "tokens per gpu per second (tgs)", "tgs (tokens/gpu/second)":
		// Megatron-DeepSpeed and its forks
		st.setFloat(&st.TokensPerSecondPerGPU, "framework_tokens_per_s_per_gpu", val, 1)
		p.deepspeedSigns++
		return true
	case "mem usages":
		st.setFloat(&st.MemUsedFraction, "mem_used_fraction", val, 1)
	case "hip mem usage/free/total/usage_ratio":
		primusMemory(st, val)
	case "rocm mem usage/free/total/usage_ratio":
		// ROCm SMI's view; HIP's is the primary one when both are printed.
		if st.MemDeviceUsedMiB == nil {
			primusMemory(st, val)
		}
		st.extra(key, val)
	default:
		if strings.HasSuffix(key, "rocm max mem usage/usage_ratio") {
			st.extra(key, val)
			break
		}
		return false
	}
	p.primusSigns++
	return true
}

// primusMemory reads "153.81GB/102.17GB/255.98GB/60.09%" (used/free/total/ratio).
func primusMemory(st *stepBuf, val string) {
	parts := strings.Split(strings.TrimSpace(val), "/")
	if len(parts) != 4 {
		return
	}
	scale := mibPerGiB // Primus's "GB" is bytes/1024^3
	if strings.HasSuffix(strings.TrimSpace(parts[0]), "MB") {
		scale = 1
	}
	st.setFloat(&st.MemDeviceUsedMiB, "mem_device_used_mib", parts[0], scale)
	st.setFloat(&st.MemDeviceTotalMiB, "mem_device_total_mib", parts[2], scale)
	st.setFloat(&st.MemUsedFraction, "mem_used_fraction", parts[3], 0.01)
}
