// Package hw finds out what accelerators a host has (NVIDIA through nvidia-smi, AMD through
// amd-smi, rocm-smi and the KFD topology, both vendors through PCI sysfs as a cross-check and
// fallback) and holds the spec table of peak throughput, memory, bandwidth and TDP used to compute
// MFU.
//
// Detection never guesses: hardware it cannot name gets an empty Model and a warning, and a tool
// that is missing or fails is reported in Host.Warnings while detection falls back to the next
// source.
//
// # Entry points
//
//   - [Detect] inspects the host and returns a [Host]: its platform, one [GPU] per device and
//     where each fact came from. A [Detector] runs the same detection on captured tool outputs and
//     a fixture /sys tree. [Host.Fingerprint] names the hardware so that results from identical
//     hosts compare alike.
//   - [LookupSpec] and [PeakTFLOPs] read the spec table by the canonical model names detection
//     gives ([CanonicalModel]).
//   - [PowerQuery] and [ParsePowerSample] sample power and memory while a benchmark runs.
//   - The Parse functions read each tool's output on its own (nvidia-smi CSV and XML, amd-smi,
//     rocm-smi, the KFD topology, PCI sysfs).
//
// # Dependencies
//
// It imports nothing else from Rival. The framework builders, result, compare, slurm and tasks
// read its platform names, detection and spec table.
package hw

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/zeebo/blake3"
)

// Platform names, as used in result files and mage targets.
const (
	PlatformNVIDIA = "nvd"
	PlatformAMD    = "amd"
	PlatformCPU    = "cpu"
)

// Vendor names for GPU.Vendor.
const (
	VendorNVIDIA = "nvidia"
	VendorAMD    = "amd"
)

// GPU is one physical accelerator. Partitions (NVIDIA MIG instances, AMD
// CPX/DPX/QPX compute partitions) are folded into their physical GPU and
// described in Partition.
type GPU struct {
	Index         int
	Vendor        string // VendorNVIDIA or VendorAMD
	Name          string // as the tool prints it
	Model         string // spec table key ("H100 SXM", "MI300X"); "" when unknown
	UUID          string
	PCIBusID      string
	Driver        string
	MemoryMiB     int64 // 0 when no source reported it
	PowerLimitW   float64
	MaxSMClockMHz int
	Partition     string // MIG or compute/memory partition mode, "" when none
	PCIDeviceID   string // "0x2330"-style, when a source gave it
	GFXTarget     string // AMD only: "gfx942"
}

// Host is the answer of detection.
type Host struct {
	Platform string // PlatformNVIDIA, PlatformAMD or PlatformCPU
	GPUs     []GPU
	Source   string   // which tool or file gave the answer
	Warnings []string // everything that fell back, disagreed or stayed unknown
}

// Models returns the distinct spec keys of the host's GPUs ("" for unknown).
func (h Host) Models() []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range h.GPUs {
		if !seen[g.Model] {
			seen[g.Model] = true
			out = append(out, g.Model)
		}
	}
	sort.Strings(out)
	return out
}

// fingerprintVersion changes whenever the encoding below changes.
const fingerprintVersion = "rival-hw-fingerprint-v1"

// Fingerprint is the BLAKE3 hex digest of the facts that decide how fast a
// benchmark can run: platform, GPU count and, per GPU, vendor, tool name,
// model, memory, driver, power limit, max SM clock and partitioning. It leaves
// out what differs between identical machines or from run to run (UUIDs, PCI
// addresses, indices, tool source, warnings), and is independent of GPU order.
func (h Host) Fingerprint() string {
	rows := make([]string, 0, len(h.GPUs))
	for _, g := range h.GPUs {
		fields := []string{
			g.Vendor, g.Name, g.Model, strconv.FormatInt(g.MemoryMiB, 10), g.Driver,
			strconv.FormatFloat(g.PowerLimitW, 'f', 1, 64), strconv.Itoa(g.MaxSMClockMHz),
			g.Partition, g.GFXTarget,
		}
		var b strings.Builder
		for _, f := range fields {
			b.WriteString(strconv.Quote(f))
			b.WriteByte(' ')
		}
		rows = append(rows, b.String())
	}
	sort.Strings(rows)
	hasher := blake3.New()
	fmt.Fprintf(hasher, "%s\nplatform %q\ngpus %d\n", fingerprintVersion, h.Platform, len(h.GPUs))
	for _, r := range rows {
		fmt.Fprintf(hasher, "gpu %s\n", r)
	}
	return fmt.Sprintf("%x", hasher.Sum(nil))
}
