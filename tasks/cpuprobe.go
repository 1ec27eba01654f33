package tasks

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rivalbench/rival/safefile"
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

// cpuPrecision is the precision a CPU run trains in and why.
type cpuPrecision struct {
	Precision string // "fp32" or "bf16"
	Reason    string // for the log line, e.g. "the CPU has no native bf16 (no avx512_bf16 or amx_bf16 flag)"
	Changed   bool   // Precision differs from what the configuration asked
}

// chooseCPUPrecision picks what the CPU trains fast: bf16 autocast only
// where the CPU has native bf16 (without it PyTorch emulates bf16 and a
// step takes about ten times longer), fp32 otherwise. A PRECISION set in
// the environment is honoured as given; one from config.env or the
// default (written for GPUs) yields to the CPU.
func chooseCPUPrecision(asked, source string, cpuinfo []byte) cpuPrecision {
	native, flag := cpubf16(cpuinfo)
	switch {
	case source == "environment" || asked == "fp32":
		p := cpuPrecision{Precision: asked, Reason: "PRECISION=" + asked + " from the " + source}
		if asked == "bf16" && !native {
			p.Reason += "; this CPU has no native bf16 (no " + strings.Join(bf16Flags, " or ") + " flag), so bf16 runs emulated and slowly"
		}
		return p
	case native:
		return cpuPrecision{Precision: "bf16", Reason: "the CPU has native bf16 (" + flag + ")", Changed: asked != "bf16"}
	default:
		return cpuPrecision{Precision: "fp32", Reason: "the CPU has no native bf16 (no " + strings.Join(bf16Flags, " or ") + " flag in " + cpuFlagsPath + ")", Changed: asked != "fp32"}
	}
}

// cpuTrainConfig returns cfg with PRECISION set to what this CPU trains in,
// so the configuration fingerprint, the launch and the result all name
// the precision that ran.
func cpuTrainConfig(cfg *config) (*config, cpuPrecision, error) {
	info, _ := safefile.ReadFile(context.Background(), cpuFlagsPath, safefile.LimitSysfs)
	p := chooseCPUPrecision(cfg.get("PRECISION"), cfg.sources["PRECISION"], info)
	if !p.Changed {
		return cfg, p, nil
	}
	n, err := cfg.with("cpu precision: "+p.Reason, map[string]string{"PRECISION": p.Precision})
	return n, p, err
}

// sayPrecisionOnce tells once per workspace which precision CPU runs train
// in and why, not once per run.
func (ws *Workspace) sayPrecisionOnce(w io.Writer, p cpuPrecision) {
	if _, dup := ws.precisionSaid.LoadOrStore(p, true); !dup {
		fmt.Fprintf(w, "  CPU runs train in %s: %s\n", p.Precision, p.Reason)
	}
}

// cpuDescription reads the processor's model name, its physical cores and
// its logical CPUs (hardware threads) from /proc/cpuinfo text. Cores are
// the distinct (physical id, core id) pairs; where the kernel prints no
// such ids (some virtual machines, other architectures) the logical CPUs
// stand in for them. ok is false when the text lists no processor.
func cpuDescription(cpuinfo []byte) (model string, cores, logical int, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	type core struct{ pkg, id string }
	seen := map[core]bool{}
	var cur core
	hasCore := false
	flush := func() {
		if hasCore {
			seen[cur] = true
		}
		cur, hasCore = core{}, false
	}
	for sc.Scan() {
		key, val, found := strings.Cut(sc.Text(), ":")
		if !found {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "processor":
			flush()
			logical++
		case "model name":
			if model == "" {
				model = strings.Join(strings.Fields(val), " ")
			}
		case "physical id":
			cur.pkg = val
		case "core id":
			cur.id, hasCore = val, true
		}
	}
	flush()
	if logical == 0 {
		return "", 0, 0, false
	}
	if model == "" {
		model = "unknown (no model name in cpuinfo)"
	}
	cores = len(seen)
	if cores == 0 || cores > logical {
		cores = logical
	}
	return model, cores, logical, true
}
