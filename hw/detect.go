package hw

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Detector holds what detection touches, so tests can replace the tools with
// captured outputs and the file system with a fixture tree.
type Detector struct {
	// Run executes a tool and returns its standard output.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// SysRoot is prefixed to /sys paths: "/" normally, a fixture tree in tests.
	SysRoot string
	// LookPath reports whether a tool is installed.
	LookPath func(string) (string, error)
}

// toolTimeout bounds each smi call: a wedged driver can hang them for minutes.
const toolTimeout = 30 * time.Second

// DefaultDetector runs the real tools on the real /sys.
func DefaultDetector() Detector {
	return Detector{Run: runTool, SysRoot: "/", LookPath: exec.LookPath}
}

// Detect inspects the host with DefaultDetector.
func Detect(ctx context.Context) (Host, error) { return DefaultDetector().Detect(ctx) }

func runTool(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.Bytes(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, truncate(msg, 200))
	}
	return stdout.Bytes(), nil
}

func (d Detector) sys(parts ...string) string {
	root := d.SysRoot
	if root == "" {
		root = "/"
	}
	return filepath.Join(append([]string{root, "sys"}, parts...)...)
}

func (d Detector) has(tool string) bool {
	if d.LookPath == nil {
		return false
	}
	_, err := d.LookPath(tool)
	return err == nil
}

func (d Detector) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if d.Run == nil {
		return nil, fmt.Errorf("%s: no runner configured", name)
	}
	return d.Run(ctx, name, args...)
}

// Detect finds the platform and its GPUs. It returns an error only when ctx
// ends; every other failure becomes a warning and a fallback.
func (d Detector) Detect(ctx context.Context) (Host, error) {
	var warnings []string
	pci, err := ScanPCI(d.sys("bus", "pci", "devices"))
	if err != nil {
		warnings = append(warnings, "PCI scan failed, no cross-check: "+err.Error())
	}
	var nvPCI, amdPCI []PCIDevice
	for _, dev := range pci {
		switch {
		case dev.IsNVIDIAGPU():
			nvPCI = append(nvPCI, dev)
		case dev.IsAMDGPU():
			amdPCI = append(amdPCI, dev)
		}
	}
	kfdRoot := d.sys("class", "kfd", "kfd", "topology")
	_, kfdErr := os.Stat(filepath.Join(kfdRoot, "nodes"))
	hasKFD := kfdErr == nil

	var candidates []Host
	if len(nvPCI) > 0 || d.has("nvidia-smi") {
		h := d.detectNVIDIA(ctx, nvPCI)
		if err := ctx.Err(); err != nil {
			return Host{}, fmt.Errorf("hardware detection: %w", err)
		}
		candidates = append(candidates, h)
	}
	if len(amdPCI) > 0 || hasKFD || d.has("amd-smi") || d.has("rocm-smi") {
		h := d.detectAMD(ctx, amdPCI, kfdRoot, hasKFD)
		if err := ctx.Err(); err != nil {
			return Host{}, fmt.Errorf("hardware detection: %w", err)
		}
		candidates = append(candidates, h)
	}

	best := Host{Platform: PlatformCPU, Source: "no GPU found (PCI sysfs, smi tools, KFD)"}
	var withGPUs []Host
	for _, h := range candidates {
		warnings = append(warnings, h.Warnings...)
		if len(h.GPUs) > 0 {
			withGPUs = append(withGPUs, h)
		}
	}
	switch len(withGPUs) {
	case 0:
	case 1:
		best = withGPUs[0]
	default:
		best = withGPUs[0]
		if len(withGPUs[1].GPUs) > len(best.GPUs) {
			best = withGPUs[1]
		}
		warnings = append(warnings, fmt.Sprintf("both NVIDIA (%d) and AMD (%d) GPUs found; platform %s chosen by count",
			len(withGPUs[0].GPUs), len(withGPUs[1].GPUs), best.Platform))
	}
	for _, g := range best.GPUs {
		if g.Model == "" {
			warnings = append(warnings, fmt.Sprintf("GPU %d %q (PCI device %s) is not in the spec table: model unknown, no peak FLOP/s or MFU",
				g.Index, g.Name, orDash(g.PCIDeviceID)))
		}
	}
	best.Warnings = dedupe(warnings)
	return best, nil
}

func (d Detector) detectNVIDIA(ctx context.Context, pci []PCIDevice) Host {
	h := Host{Platform: PlatformNVIDIA}
	if d.has("nvidia-smi") {
		out, err := d.run(ctx, "nvidia-smi", NvidiaQueryArgs()...)
		if err != nil && ctx.Err() == nil {
			// Older drivers reject newer fields; the base query still gives memory and power.
			if base, berr := d.run(ctx, "nvidia-smi", NvidiaBaseQueryArgs()...); berr == nil {
				h.Warnings = append(h.Warnings, "nvidia-smi rejected the full query, used the base fields: "+err.Error())
				out, err = base, nil
			}
		}
		if err == nil {
			gpus, w, perr := ParseNvidiaSMICSV(out)
			h.Warnings = append(h.Warnings, w...)
			if perr == nil {
				h.GPUs, h.Source = gpus, "nvidia-smi --query-gpu"
				d.addMIG(ctx, &h)
				if len(pci) > 0 && len(pci) != len(gpus) {
					h.Warnings = append(h.Warnings, fmt.Sprintf("nvidia-smi lists %d GPUs but PCI sysfs has %d NVIDIA display devices", len(gpus), len(pci)))
				}
				return h
			}
			err = perr
		}
		// The XML report answers where a query field is refused.
		if xmlOut, xerr := d.run(ctx, "nvidia-smi", NvidiaSMIXMLArgs()...); xerr == nil {
			if gpus, w, perr := ParseNvidiaSMIXML(xmlOut); perr == nil {
				h.Warnings = append(h.Warnings, "nvidia-smi --query-gpu failed, used nvidia-smi -q -x: "+err.Error())
				h.Warnings = append(h.Warnings, w...)
				h.GPUs, h.Source = gpus, "nvidia-smi -q -x"
				return h
			}
		}
		h.Warnings = append(h.Warnings, "nvidia-smi failed, falling back to PCI sysfs: "+err.Error())
	} else {
		h.Warnings = append(h.Warnings, "nvidia-smi not found, falling back to PCI sysfs (no memory, power or driver facts)")
	}
	h.Source, h.GPUs = gpusFromPCI(pciNVIDIA, pci)
	return h
}

func (d Detector) addMIG(ctx context.Context, h *Host) {
	mig := false
	for _, g := range h.GPUs {
		mig = mig || g.Partition != ""
	}
	if !mig {
		return
	}
	out, err := d.run(ctx, "nvidia-smi", "-L")
	if err != nil {
		h.Warnings = append(h.Warnings, "MIG is enabled but nvidia-smi -L failed: "+err.Error())
		return
	}
	list, err := ParseNvidiaSMIList(out)
	if err != nil {
		h.Warnings = append(h.Warnings, "MIG is enabled but nvidia-smi -L was unreadable: "+err.Error())
		return
	}
	for i := range h.GPUs {
		g := &h.GPUs[i]
		if g.Partition == "" {
			continue
		}
		devs, ok := list[g.UUID]
		if !ok {
			h.Warnings = append(h.Warnings, fmt.Sprintf("GPU %d: MIG enabled but nvidia-smi -L does not list UUID %s", g.Index, g.UUID))
			continue
		}
		g.Partition = describeMIG(devs)
		h.Warnings = append(h.Warnings, fmt.Sprintf("GPU %d runs in MIG mode (%s): a benchmark sees only one instance, not the whole GPU", g.Index, g.Partition))
	}
}

func (d Detector) detectAMD(ctx context.Context, pci []PCIDevice, kfdRoot string, hasKFD bool) Host {
	h := Host{Platform: PlatformAMD}
	var kfd []GPU
	var kfdWarnings []string // reported only when the KFD topology is the source
	if hasKFD {
		g, w, err := ParseKFDTopology(kfdRoot)
		if err != nil {
			h.Warnings = append(h.Warnings, "KFD topology unreadable: "+err.Error())
		} else {
			kfd, kfdWarnings = g, w
		}
	}
	tools := []struct {
		name  string
		args  []string
		parse func([]byte) ([]GPU, []string, error)
	}{
		{"amd-smi", AMDSMIStaticArgs(), ParseAMDSMIStatic},
		{"rocm-smi", ROCmSMIArgs(), ParseROCmSMI},
	}
	for _, t := range tools {
		if !d.has(t.name) {
			continue
		}
		out, err := d.run(ctx, t.name, t.args...)
		if err == nil {
			gpus, w, perr := t.parse(out)
			if perr == nil {
				h.GPUs, h.Source = gpus, t.name+" "+strings.Join(t.args, " ")
				h.Warnings = append(h.Warnings, w...)
				if kfd != nil && len(kfd) != len(gpus) {
					h.Warnings = append(h.Warnings, fmt.Sprintf("%s lists %d GPUs but the KFD topology has %d physical GPUs", t.name, len(gpus), len(kfd)))
				}
				d.crossCheckAMDPCI(&h, pci)
				return h
			}
			err = perr
		}
		h.Warnings = append(h.Warnings, t.name+" failed, trying the next source: "+err.Error())
	}
	if !d.has("amd-smi") && !d.has("rocm-smi") {
		h.Warnings = append(h.Warnings, "neither amd-smi nor rocm-smi found, reading the KFD topology and PCI sysfs")
	}
	if len(kfd) > 0 {
		h.GPUs, h.Source = kfd, "KFD topology /sys/class/kfd/kfd/topology"
		h.Warnings = append(h.Warnings, kfdWarnings...)
		d.crossCheckAMDPCI(&h, pci)
		return h
	}
	h.Source, h.GPUs = gpusFromPCI(pciAMD, pci)
	return h
}

// crossCheckAMDPCI compares with the PCI functions of class 0x12 (Instinct);
// partitions do not appear on PCI, so the physical count must match.
func (d Detector) crossCheckAMDPCI(h *Host, pci []PCIDevice) {
	n := 0
	for _, dev := range pci {
		if dev.Class>>16 == 0x12 {
			n++
		}
	}
	if n > 0 && n != len(h.GPUs) {
		h.Warnings = append(h.Warnings, fmt.Sprintf("%s gives %d GPUs but PCI sysfs has %d AMD accelerators (class 0x12)", h.Source, len(h.GPUs), n))
	}
}

// pciVendor is what the PCI fallback needs to know of a vendor.
type pciVendor struct {
	vendor string            // VendorNVIDIA or VendorAMD
	id     uint16            // PCI vendor id
	names  map[uint16]string // product names by PCI device id
}

var (
	pciNVIDIA = pciVendor{VendorNVIDIA, 0x10de, nvidiaPCINames}
	pciAMD    = pciVendor{VendorAMD, 0x1002, amdPCINames}
)

// gpusFromPCI is the last fallback of both vendors, when no tool (and for AMD no KFD topology)
// answered: one GPU per PCI function, named from the vendor's device table and modelled from the
// device id alone, without the memory, power and driver facts only the tools give.
func gpusFromPCI(v pciVendor, pci []PCIDevice) (source string, gpus []GPU) {
	for i, dev := range pci {
		gpus = append(gpus, GPU{
			Index: i, Vendor: v.vendor, PCIBusID: dev.Address,
			Name:        pciName(v.names, dev),
			Model:       CanonicalModel(v.vendor, "", dev.Device),
			PCIDeviceID: fmt.Sprintf("0x%04x", dev.Device),
		})
	}
	return fmt.Sprintf("PCI sysfs (vendor 0x%04x)", v.id), gpus
}

func pciName(names map[uint16]string, dev PCIDevice) string {
	if n, ok := names[dev.Device]; ok {
		return n
	}
	return fmt.Sprintf("PCI %04x:%04x", dev.Vendor, dev.Device)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dedupe(ws []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
