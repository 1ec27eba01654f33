package tasks

import (
	"bufio"
	"bytes"
	"context"
	"strings"

	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/tasks/training"
)

// cpuFlagsPath is where the kernel lists the CPU's feature flags.
var cpuFlagsPath = "/proc/cpuinfo"

// bf16Flags are /proc/cpuinfo flags of native bf16 arithmetic: AVX-512
// BF16 (Cooper Lake, Sapphire Rapids, Zen 4 and later) and AMX-BF16.
var bf16Flags = []string{"avx512_bf16", "amx_bf16"}

// cpubf16 reports whether the CPU computes bf16 natively, from the flags
// line of cpuinfo, and the flag that says so ("" when none does).
func cpubf16(cpuinfo []byte) (bool, string) {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(key) != "flags" {
			continue
		}
		for _, f := range strings.Fields(val) {
			for _, want := range bf16Flags {
				if f == want {
					return true, f
				}
			}
		}
		return false, "" // the first processor's flags speak for all
	}
	return false, ""
}

// chooseCPUPrecision picks what the CPU trains fast: bf16 autocast only
// where the CPU has native bf16 (without it PyTorch emulates bf16 and a
// step takes about ten times longer), fp32 otherwise. A PRECISION set in
// the environment is honoured as given; one from config.env or the
// default (written for GPUs) yields to the CPU.
func chooseCPUPrecision(asked, source string, cpuinfo []byte) training.CPUPrecision {
	native, flag := cpubf16(cpuinfo)
	switch {
	case source == "environment" || asked == "fp32":
		p := training.CPUPrecision{Precision: asked, Reason: "PRECISION=" + asked + " from the " + source}
		if asked == "bf16" && !native {
			p.Reason += "; this CPU has no native bf16 (no " + strings.Join(bf16Flags, " or ") + " flag), so bf16 runs emulated and slowly"
		}
		return p
	case native:
		return training.CPUPrecision{Precision: "bf16", Reason: "the CPU has native bf16 (" + flag + ")", Changed: asked != "bf16"}
	default:
		return training.CPUPrecision{Precision: "fp32", Reason: "the CPU has no native bf16 (no " + strings.Join(bf16Flags, " or ") + " flag in " + cpuFlagsPath + ")", Changed: asked != "fp32"}
	}
}

// cpuTrainConfig returns cfg with PRECISION set to what this CPU trains in,
// so the configuration fingerprint, the launch and the result all name
// the precision that ran.
func cpuTrainConfig(cfg *config) (*config, training.CPUPrecision, error) {
	info, _ := safefile.ReadFile(context.Background(), cpuFlagsPath, safefile.LimitSysfs)
	p := chooseCPUPrecision(cfg.get("PRECISION"), cfg.sources["PRECISION"], info)
	if !p.Changed {
		return cfg, p, nil
	}
	n, err := cfg.with("cpu precision: "+p.Reason, map[string]string{"PRECISION": p.Precision})
	return n, p, err
}
