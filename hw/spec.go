package hw

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Spec is the vendor-published datasheet of one accelerator model. Peak
// throughputs are dense (no structured sparsity), in TFLOP/s.
type Spec struct {
	Model           string
	BF16DenseTFLOPs float64
	FP8DenseTFLOPs  float64
	// FP16DenseTFLOPs is the dense FP16 tensor peak; on every part listed the
	// datasheets give FP16 the same figure as BF16.
	FP16DenseTFLOPs float64
	// FP4DenseTFLOPs is the dense FP4 tensor peak (NVFP4 on Blackwell, MXFP4 on
	// CDNA 4); 0 on parts without FP4 tensor support (Hopper, CDNA 3).
	FP4DenseTFLOPs float64
	// MemoryGiB is the HBM capacity. Vendors write "80 GB" but HBM stacks
	// are binary: an 80 GiB H100 exposes 81,559 MiB of its 81,920.
	MemoryGiB    float64
	BandwidthTBs float64
	TDPWatts     float64
	Source       string
}

// specs is keyed by the Model that detection returns. Vendors quote sparse
// figures on most datasheets; the dense figure is half of those, and FP8 is
// twice BF16 on every part listed. FP4 is no fixed multiple: twice FP8 on B200,
// GB200 and CDNA 4, three times on Blackwell Ultra (B300, GB300), whose sparse
// FP4 is not twice its dense, so its dense figure is the one printed.
var specs = map[string]Spec{
	"H100 SXM": {
		Model: "H100 SXM", BF16DenseTFLOPs: 989.4, FP8DenseTFLOPs: 1978.9, MemoryGiB: 80, BandwidthTBs: 3.35, TDPWatts: 700,
		Source:          "NVIDIA H100 Tensor Core GPU datasheet, SXM column: BF16 1,979 and FP8 3,958 TFLOPS with sparsity (989.4 / 1,978.9 dense, the H100 whitepaper's exact figures), 80 GB HBM3, 3.35 TB/s, up to 700 W",
		FP16DenseTFLOPs: 989.4, // datasheet FP16 1,979 with sparsity
	},
	"H100 PCIe": {
		Model: "H100 PCIe", BF16DenseTFLOPs: 756.5, FP8DenseTFLOPs: 1513, MemoryGiB: 80, BandwidthTBs: 2.0, TDPWatts: 350,
		Source:          "NVIDIA H100 Tensor Core GPU datasheet, PCIe column: BF16 1,513 and FP8 3,026 TFLOPS with sparsity (half dense), 80 GB HBM2e, 2.0 TB/s, 300-350 W",
		FP16DenseTFLOPs: 756.5, // datasheet FP16 1,513 with sparsity
	},
	"H200": {
		Model: "H200", BF16DenseTFLOPs: 989.4, FP8DenseTFLOPs: 1978.9, MemoryGiB: 141, BandwidthTBs: 4.8, TDPWatts: 700,
		Source:          "NVIDIA H200 Tensor Core GPU datasheet, SXM column: BF16 1,979 and FP8 3,958 TFLOPS with sparsity (same GH100 compute as H100 SXM), 141 GB HBM3e, 4.8 TB/s, up to 700 W",
		FP16DenseTFLOPs: 989.4, // datasheet FP16 1,979 with sparsity
	},
	// H200 NVL is the PCIe card: same GH100 and memory as H200, lower clocks and power.
	"H200 NVL": {
		Model: "H200 NVL", BF16DenseTFLOPs: 835.5, FP8DenseTFLOPs: 1670.5, MemoryGiB: 141, BandwidthTBs: 4.8, TDPWatts: 600,
		Source:          "NVIDIA H200 Tensor Core GPU datasheet, NVL column: BF16 1,671 and FP8 3,341 TFLOPS with sparsity (835.5 / 1,670.5 dense), 141 GB HBM3e, 4.8 TB/s, up to 600 W (configurable)",
		FP16DenseTFLOPs: 835.5, // datasheet FP16 1,671 with sparsity
	},
	"B200": {
		Model: "B200", BF16DenseTFLOPs: 2250, FP8DenseTFLOPs: 4500, MemoryGiB: 180, BandwidthTBs: 8, TDPWatts: 1000,
		Source:          "NVIDIA HGX B200 specifications at 1,000 W: FP4 18, FP8 9 and BF16 4.5 PFLOPS with sparsity (9 / 4.5 / 2.25 dense per GPU); 1,440 GB HBM3e per 8 GPUs = 180 GB usable per GPU (192 GB physical), 8 TB/s",
		FP16DenseTFLOPs: 2250, // HGX B200 FP16 4.5 PFLOPS with sparsity per GPU
		FP4DenseTFLOPs:  9000, // HGX B200 FP4 18 PFLOPS with sparsity per GPU
	},
	// GB200 is the B200 of a Grace Blackwell superchip (NVL72): more power, hence
	// higher peaks, and 186 GB per GPU.
	"GB200": {
		Model: "GB200", BF16DenseTFLOPs: 2500, FP8DenseTFLOPs: 5000, MemoryGiB: 186, BandwidthTBs: 8, TDPWatts: 1200,
		Source:          "NVIDIA GB200 NVL72 specifications, per Blackwell GPU: FP4 20, FP8/FP6 10 and FP16/BF16 5 PFLOPS with sparsity (10 / 5 / 2.5 dense), 186 GB HBM3E, 8 TB/s, configurable up to 1,200 W",
		FP16DenseTFLOPs: 2500,  // FP16/BF16 5 PFLOPS with sparsity
		FP4DenseTFLOPs:  10000, // FP4 20 PFLOPS with sparsity
	},
	// B300 (Blackwell Ultra) keeps B200's BF16 and FP8 and raises FP4. nvidia-smi
	// shows 275,040 MiB (268.6 GiB) of the 288 GB.
	"B300": {
		Model: "B300", BF16DenseTFLOPs: 2250, FP8DenseTFLOPs: 4500, MemoryGiB: 288, BandwidthTBs: 8, TDPWatts: 1100,
		Source:          "NVIDIA HGX B300 specifications (8 GPUs): FP4 144 PFLOPS with sparsity and 108 dense, FP8 72 and FP16/BF16 36 PFLOPS with sparsity (13.5 / 4.5 / 2.25 dense per GPU); 2.3 TB HBM3e per 8 GPUs = 288 GB per GPU, 8 TB/s, 1,100 W per GPU",
		FP16DenseTFLOPs: 2250,  // FP16/BF16 36 PFLOPS with sparsity per 8 GPUs
		FP4DenseTFLOPs:  13500, // FP4 108 PFLOPS dense per 8 GPUs, as printed
	},
	// GB300 is the B300 of a Grace Blackwell Ultra superchip (NVL72) at up to
	// 1,400 W. nvidia-smi shows 284,208 MiB (277.5 GiB) of the 288 GB.
	"GB300": {
		Model: "GB300", BF16DenseTFLOPs: 2500, FP8DenseTFLOPs: 5000, MemoryGiB: 288, BandwidthTBs: 8, TDPWatts: 1400,
		Source:          "NVIDIA GB300 NVL72 specifications (72 GPUs): FP4 1.1 EFLOPS dense (1,080 PFLOPS: 15 per GPU), FP8 360 PFLOPS dense for training (5 per GPU), FP16/BF16 360 PFLOPS with sparsity (2.5 dense per GPU); up to 288 GB HBM3E and 8 TB/s per GPU, up to 1,400 W",
		FP16DenseTFLOPs: 2500,  // FP16/BF16 360 PFLOPS with sparsity per 72 GPUs
		FP4DenseTFLOPs:  15000, // 1,080 PFLOPS dense FP4 / 72 GPUs
	},
	"MI300X": {
		Model: "MI300X", BF16DenseTFLOPs: 1307.4, FP8DenseTFLOPs: 2614.9, MemoryGiB: 192, BandwidthTBs: 5.3, TDPWatts: 750,
		Source:          "AMD Instinct MI300X data sheet: peak BF16 1,307.4 and FP8 2,614.9 TFLOPS dense (2,100 MHz x 304 CUs x 2,048 BF16 FLOPs/clock/CU), 192 GB HBM3, 5.3 TB/s, 750 W",
		FP16DenseTFLOPs: 1307.4, // data sheet peak FP16 1,307.4 dense
	},
	"MI325X": {
		Model: "MI325X", BF16DenseTFLOPs: 1307.4, FP8DenseTFLOPs: 2614.9, MemoryGiB: 256, BandwidthTBs: 6, TDPWatts: 1000,
		Source:          "AMD Instinct MI325X data sheet: peak BF16 1,307.4 and FP8 2,614.9 TFLOPS dense (same CDNA 3 compute as MI300X), 256 GB HBM3E, 6 TB/s, 1,000 W",
		FP16DenseTFLOPs: 1307.4, // data sheet peak FP16 1,307.4 dense
	},
	// MI350X is the air-cooled CDNA 4 part: MI355X's silicon at 2,200 MHz and 1,000 W.
	"MI350X": {
		Model: "MI350X", BF16DenseTFLOPs: 2306.9, FP8DenseTFLOPs: 4613.7, MemoryGiB: 288, BandwidthTBs: 8, TDPWatts: 1000,
		Source:          "AMD Instinct MI350X data sheet: BF16 2.3, FP8 4.6 and MXFP4 9.2 PFLOPS dense, rounded; exact values from 2,200 MHz x 256 CUs x 4,096 BF16 FLOPs/clock/CU (FP8 twice, MXFP4 four times that); 288 GB HBM3E, 8 TB/s, 1,000 W",
		FP16DenseTFLOPs: 2306.9, // data sheet FP16 2.3 PFLOPS dense
		FP4DenseTFLOPs:  9227.5, // 2,200 MHz x 256 CUs x 16,384 MXFP4 FLOPs/clock/CU
	},
	"MI355X": {
		Model: "MI355X", BF16DenseTFLOPs: 2516.6, FP8DenseTFLOPs: 5033.2, MemoryGiB: 288, BandwidthTBs: 8, TDPWatts: 1400,
		Source:          "AMD Instinct MI355X data sheet: BF16 2.5, FP8 5.0 and MXFP4 10.1 PFLOPS dense, rounded; exact values from 2,400 MHz x 256 CUs x 4,096 BF16 FLOPs/clock/CU (16,384 MXFP4); 288 GB HBM3E, 8 TB/s, 1,400 W",
		FP16DenseTFLOPs: 2516.6,  // data sheet FP16 2.5 PFLOPS dense
		FP4DenseTFLOPs:  10066.3, // 2,400 MHz x 256 CUs x 16,384 MXFP4 FLOPs/clock/CU
	},
}

// MemoryMiB is the HBM capacity in MiB.
func (s Spec) MemoryMiB() int64 { return int64(math.Round(s.MemoryGiB * 1024)) }

// LookupSpec returns the datasheet of a model key as detection returns it.
func LookupSpec(model string) (Spec, bool) {
	s, ok := specs[model]
	return s, ok
}

// SpecModels lists the keys of the spec table, sorted.
func SpecModels() []string {
	out := make([]string, 0, len(specs))
	for k := range specs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PeakTFLOPs is the dense peak of model at precision "bf16", "fp16", "fp8" or
// "fp4", the denominator of MFU. A part without FP4 tensor support has no fp4
// peak: an error, not a peak borrowed from another precision.
func PeakTFLOPs(model, precision string) (float64, error) {
	s, ok := specs[model]
	if !ok {
		if model == "" {
			return 0, fmt.Errorf("no peak TFLOP/s: the GPU model is unknown (detection could not name it); MFU cannot be computed")
		}
		return 0, fmt.Errorf("no peak TFLOP/s for GPU model %q: known models are %s", model, strings.Join(SpecModels(), ", "))
	}
	switch strings.ToLower(precision) {
	case "bf16":
		return s.BF16DenseTFLOPs, nil
	case "fp8":
		return s.FP8DenseTFLOPs, nil
	case "fp16":
		if s.FP16DenseTFLOPs > 0 {
			return s.FP16DenseTFLOPs, nil
		}
	case "fp4":
		if s.FP4DenseTFLOPs > 0 {
			return s.FP4DenseTFLOPs, nil
		}
		return 0, fmt.Errorf("no peak TFLOP/s at fp4: %s has no FP4 peak (no FP4 tensor support); use bf16, fp16 or fp8", model)
	}
	return 0, fmt.Errorf("no peak TFLOP/s for precision %q: use bf16, fp16, fp8 or fp4", precision)
}

// nvidiaNames maps what nvidia-smi prints (lower-cased, "nvidia " removed) to
// a spec key. Only names seen from real tools are listed, and they are matched
// whole: "h200 nvl" is not "h200", nor "gb200" "b200". H200 NVL has its own row
// (its clocks and power are not H200's); H100 NVL, H800 and the like are not in
// the table, so they stay unknown. HGX B300 prints "NVIDIA B300 SXM6 AC".
var nvidiaNames = map[string]string{
	"h100 80gb hbm3": "H100 SXM",
	"h100 sxm5 80gb": "H100 SXM",
	"h100 pcie":      "H100 PCIe",
	"h200":           "H200",
	"h200 nvl":       "H200 NVL",
	"b200":           "B200",
	"gb200":          "GB200",
	"b300 sxm6 ac":   "B300",
	"gb300":          "GB300",
}

// nvidiaDeviceIDs maps PCI device ids (pci.ids, and the captured H100/H200
// machines' pci.device_id) for the sysfs fallback. 0x31c3, the GB300 of the DGX
// Station (less memory, bandwidth and power than NVL72's 0x31c2), is named but
// absent from the spec table.
var nvidiaDeviceIDs = map[uint16]string{
	0x2330: "H100 SXM",
	0x2331: "H100 PCIe",
	0x2335: "H200",
	0x233b: "H200 NVL",
	0x2901: "B200",
	0x2941: "GB200",
	0x3182: "B300",
	0x31c2: "GB300",
}

// amdNames maps market names (lower-cased, "amd " and "instinct " removed).
var amdNames = map[string]string{
	"mi300x":     "MI300X",
	"mi300x oam": "MI300X",
	"mi300x vf":  "MI300X",
	"mi300x hf":  "MI300X",
	"mi325x":     "MI325X",
	"mi325x oam": "MI325X",
	"mi325x vf":  "MI325X",
	"mi350x":     "MI350X",
	"mi355x":     "MI355X",
	"mi355x oam": "MI355X",
}

// amdDeviceIDs maps PCI device ids from pci.ids ("Aqua Vanjaram" family).
// 0x74a2 is MI308X and 0x75a8 MI350P, named but absent from the spec table.
var amdDeviceIDs = map[uint16]string{
	0x74a1: "MI300X",
	0x74a9: "MI300X",
	0x74b5: "MI300X",
	0x74bd: "MI300X",
	0x74a5: "MI325X",
	0x74b9: "MI325X",
	0x75a0: "MI350X",
	0x75a3: "MI355X",
}

// amdPCINames gives a product name by PCI device id (pci.ids) for KFD/PCI-only
// detection, where no tool prints one.
var amdPCINames = map[uint16]string{
	0x74a0: "AMD Instinct MI300A",
	0x74a1: "AMD Instinct MI300X",
	0x74a2: "AMD Instinct MI308X",
	0x74a5: "AMD Instinct MI325X",
	0x74a9: "AMD Instinct MI300X HF",
	0x74b5: "AMD Instinct MI300X VF",
	0x74b9: "AMD Instinct MI325X VF",
	0x74bd: "AMD Instinct MI300X HF",
	0x75a0: "AMD Instinct MI350X",
	0x75a3: "AMD Instinct MI355X",
	0x75a8: "AMD Instinct MI350P",
	0x6860: "AMD Instinct MI25 (Vega 10)",
	0x738c: "AMD Instinct MI100",
	0x740c: "AMD Instinct MI250X/MI250",
	0x740f: "AMD Instinct MI210",
}

// nvidiaPCINames gives a product name by PCI device id (pci.ids) for PCI-only
// detection, where nvidia-smi does not answer.
var nvidiaPCINames = map[uint16]string{
	0x2330: "NVIDIA H100 SXM5 80GB",
	0x2331: "NVIDIA H100 PCIe",
	0x2335: "NVIDIA H200",
	0x233b: "NVIDIA H200 NVL",
	0x2901: "NVIDIA B200",
	0x2941: "NVIDIA GB200",
	0x3182: "NVIDIA B300 SXM6 AC",
	0x31c2: "NVIDIA GB300",
	0x31c3: "NVIDIA GB300",
}

// CanonicalModel names the spec key of a GPU from what a tool printed, with the
// PCI device id (0 when unknown) as a second opinion. It returns "" rather than
// a guess.
func CanonicalModel(vendor, name string, pciDevice uint16) string {
	n := strings.ToLower(strings.Join(strings.Fields(name), " "))
	switch vendor {
	case VendorNVIDIA:
		n = strings.TrimPrefix(n, "nvidia ")
		if m, ok := nvidiaNames[n]; ok {
			return agree(m, pciDevice, nvidiaDeviceIDs, nvidiaPCINames)
		}
		if name == "" {
			return nvidiaDeviceIDs[pciDevice]
		}
	case VendorAMD:
		n = strings.TrimPrefix(n, "amd ")
		n = strings.TrimPrefix(n, "instinct ")
		if m, ok := amdNames[n]; ok {
			return agree(m, pciDevice, amdDeviceIDs, amdPCINames)
		}
		// Tools that print a codename or nothing fall back to the device id.
		if name == "" || strings.HasPrefix(n, "aqua vanjaram") || n == "n/a" {
			return amdDeviceIDs[pciDevice]
		}
	}
	return ""
}

// agree returns model unless the PCI device id (0: unknown) names another
// part: a name that contradicts its id (MI300X printed for 0x74a2, an
// MI308X) is unknown rather than a guess.
func agree(model string, pciDevice uint16, ids map[uint16]string, names map[uint16]string) string {
	if pciDevice == 0 {
		return model
	}
	if m, ok := ids[pciDevice]; ok {
		if m == model {
			return model
		}
		return ""
	}
	if _, named := names[pciDevice]; named {
		return ""
	}
	return model
}

// parseDeviceID reads a hexadecimal PCI device id: "0x74a1", "74a1", or
// nvidia-smi's "0x233010DE" (device id in the high half). 0 means unreadable.
func parseDeviceID(s string) uint16 {
	s = strings.TrimSpace(strings.ToLower(s))
	var v uint64
	var err error
	if strings.HasPrefix(s, "0x") {
		v, err = parseUintBase(s[2:], 16)
	} else {
		v, err = parseUintBase(s, 16)
	}
	if err != nil || v > 0xffff {
		// nvidia-smi prints pci.device_id as 0x233010DE: device in the high half.
		if err == nil && v > 0xffff && v <= 0xffffffff {
			return uint16(v >> 16)
		}
		return 0
	}
	return uint16(v)
}

func parseUintBase(s string, base int) (uint64, error) {
	return strconv.ParseUint(strings.TrimSpace(s), base, 64)
}
