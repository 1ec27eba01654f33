package hw

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseNvidiaSMICSVHeaderFormFromCapture(t *testing.T) {
	tests := []struct {
		machine, name, model string
		mem                  int64
		power                float64
		clock                int
		device               string
		partition            string
	}{
		{"h100-sxm", "NVIDIA H100 80GB HBM3", "H100 SXM", 81559, 700, 1980, "0x2330", ""},
		{"h100-mig", "NVIDIA H100 80GB HBM3", "H100 SXM", 81559, 700, 1980, "0x2330", "MIG enabled"},
		{"h200", "NVIDIA H200", "H200", 143771, 700, 1980, "0x2335", ""},
		{"l40s", "NVIDIA L40S", "", 46068, 350, 2520, "0x26b9", ""},
		// Built from the h200 capture (testdata/README.md).
		{"h200-nvl", "NVIDIA H200 NVL", "H200 NVL", 143771, 600, 1980, "0x233b", ""},
		{"gb200", "NVIDIA GB200", "GB200", 189471, 1200, 1980, "0x2941", ""},
		{"b300", "NVIDIA B300 SXM6 AC", "B300", 275040, 1100, 1980, "0x3182", ""},
		{"gb300", "NVIDIA GB300", "GB300", 284208, 1400, 1980, "0x31c2", ""},
	}
	for _, tc := range tests {
		t.Run(tc.machine, func(t *testing.T) {
			gpus, _, err := ParseNvidiaSMICSV(readNvidiaFixture(t, tc.machine, "query-gpu.csv"))
			require.NoError(t, err)
			require.Len(t, gpus, 1)
			g := gpus[0]
			assert.Equal(t, tc.name, g.Name)
			assert.Equal(t, tc.model, g.Model)
			assert.Equal(t, tc.mem, g.MemoryMiB)
			assert.Equal(t, tc.power, g.PowerLimitW)
			assert.Equal(t, tc.clock, g.MaxSMClockMHz)
			assert.Equal(t, tc.device, g.PCIDeviceID)
			assert.Equal(t, tc.partition, g.Partition)
			assert.Equal(t, "GPU-00000000-0000-0000-0000-000000000000", g.UUID)
		})
	}
}

func TestParseNvidiaSMICSVNoHeader(t *testing.T) {
	out := "NVIDIA H100 80GB HBM3, GPU-aaaa, 81559, 550.54.15, 00000000:18:00.0, 700.00, 1980, 0, Disabled, 0x233010DE\n" +
		"NVIDIA H100 80GB HBM3, GPU-bbbb, 81559, 550.54.15, 00000000:2A:00.0, 700.00, 1980, 1, Disabled, 0x233010DE\n"
	gpus, w, err := ParseNvidiaSMICSV([]byte(out))
	require.NoError(t, err)
	assert.Empty(t, w)
	require.Len(t, gpus, 2)
	assert.Equal(t, 1, gpus[1].Index)
	assert.Equal(t, "00000000:2A:00.0", gpus[1].PCIBusID)
	assert.Equal(t, "550.54.15", gpus[1].Driver)
	assert.Equal(t, "H100 SXM", gpus[1].Model)

	// The first seven fields alone (the query) parse too; N/A stays unset.
	gpus, w, err = ParseNvidiaSMICSV([]byte("NVIDIA H100 PCIe, GPU-c, [N/A], 535.1, 00000000:01:00.0, [Not Supported], 1755, 0, [N/A], [N/A]\n"))
	require.NoError(t, err)
	assert.Equal(t, "H100 PCIe", gpus[0].Model)
	assert.Zero(t, gpus[0].MemoryMiB)
	assert.Zero(t, gpus[0].PowerLimitW)
	assert.Contains(t, w[0], "no memory.total")
}

func TestParseNvidiaSMICSVErrors(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"driver error": {"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "line 1: 1 fields, want 10"},
		"bad memory":   {"NVIDIA H100 PCIe, GPU-c, lots, 535.1, 0:1:0.0, 300, 1755, 0, Disabled, 0x2331\n", "memory.total \"lots\""},
		"bad power":    {"NVIDIA H100 PCIe, GPU-c, 1, 535.1, 0:1:0.0, hot, 1755, 0, Disabled, 0x2331\n", "power.limit \"hot\""},
		"bad index":    {"NVIDIA H100 PCIe, GPU-c, 1, 535.1, 0:1:0.0, 300, 1755, -1, Disabled, 0x2331\n", "index \"-1\""},
		"no name":      {"[N/A], GPU-c, 1, 535.1, 0:1:0.0, 300, 1755, 0, Disabled, 0x2331\n", "no name"},
		"empty":        {"\n\n", "no GPU rows"},
		"header only":  {"name, memory.total [MiB]\n", "no GPU rows"},
		"no name col":  {"uuid, memory.total [MiB]\nGPU-1, 5 MiB\n", "header has no name column"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := ParseNvidiaSMICSV([]byte(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseNvidiaSMIList(t *testing.T) {
	list, err := ParseNvidiaSMIList(readFixture(t, "nvidia", "h100-mig", "list.txt"))
	require.NoError(t, err)
	devs := list["GPU-00000000-0000-0000-0000-000000000000"]
	require.Len(t, devs, 4)
	assert.Equal(t, MIGDevice{Profile: "2g.20gb", Device: 1, UUID: "MIG-00000001-0000-0000-0000-000000000001"}, devs[1])
	assert.Equal(t, "MIG enabled: 4 instances (3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb)", describeMIG(devs))

	plain, err := ParseNvidiaSMIList(readFixture(t, "nvidia", "h200", "list.txt"))
	require.NoError(t, err)
	assert.Len(t, plain, 1)

	_, err = ParseNvidiaSMIList([]byte("  MIG 1g.10gb Device 0: (UUID: MIG-1)\n"))
	assert.ErrorContains(t, err, "before any GPU line")
	_, err = ParseNvidiaSMIList([]byte("No devices were found\n"))
	assert.ErrorContains(t, err, "line 1: unexpected")
	_, err = ParseNvidiaSMIList(nil)
	assert.ErrorContains(t, err, "no GPU lines")
}

func TestParseAMDSMIStaticForms(t *testing.T) {
	gpus, w, err := ParseAMDSMIStatic(readFixture(t, "amd-smi", "mi300x-x8-wrapped.json"))
	require.NoError(t, err)
	assert.Empty(t, w)
	require.Len(t, gpus, 8)
	assert.Equal(t, "0000:e5:00.0", gpus[7].PCIBusID)
	assert.Equal(t, "gfx942", gpus[0].GFXTarget)

	bare, _, err := ParseAMDSMIStatic(readFixture(t, "amd-smi", "mi300x-x2-bare.json"))
	require.NoError(t, err)
	assert.Equal(t, gpus[:2], bare)

	// Older string forms and other units.
	gpus, _, err = ParseAMDSMIStatic([]byte(`[{"gpu": 0, "asic": {"market_name": "Instinct MI325X", "device_id": "0x74a5"},
		"vram": {"size": "256 GB"}, "limit": {"max_power": "1000 W"}, "driver": {"driver_version": "6.8.5"}}]`))
	require.NoError(t, err)
	assert.Equal(t, "MI325X", gpus[0].Model)
	assert.Equal(t, int64(262144), gpus[0].MemoryMiB)
	assert.Equal(t, 1000.0, gpus[0].PowerLimitW)
	assert.Equal(t, "6.8.5", gpus[0].Driver)

	// A codename instead of a market name falls back to the device id.
	gpus, _, err = ParseAMDSMIStatic([]byte(`{"gpu_data": [{"gpu": 0, "asic": {"market_name": "Aqua Vanjaram [Instinct MI300X]", "device_id": "0x74a1"}, "vram": {"size": {"value": "N/A", "unit": "MB"}}}]}`))
	require.NoError(t, err)
	assert.Equal(t, "MI300X", gpus[0].Model)
	assert.Zero(t, gpus[0].MemoryMiB)
}

func TestParseAMDSMIStaticErrors(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"empty":      {"", "empty output"},
		"text":       {"ERROR:root:Unable to detect any GPU devices", "not JSON"},
		"no list":    {`{"gpus": []}`, `without a gpu_data list (keys "gpus")`},
		"empty list": {`{"gpu_data": []}`, "no GPUs listed"},
		"bad json":   {`[{"gpu": 0,`, "list form"},
		"bad size":   {`[{"gpu": 0, "vram": {"size": "huge"}}]`, "gpu 0 vram size"},
		"bad unit":   {`[{"gpu": 0, "vram": {"size": {"value": 3, "unit": "parsecs"}}}]`, `unknown memory unit "parsecs"`},
		"null entry": {`[null]`, "entry 0 is null"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := ParseAMDSMIStatic([]byte(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseROCmSMIBothCasings(t *testing.T) {
	upper, _, err := ParseROCmSMI(readFixture(t, "rocm-smi", "mi300x-x8-upper.json"))
	require.NoError(t, err)
	lower, _, err := ParseROCmSMI(readFixture(t, "rocm-smi", "mi300x-x4-lower.json"))
	require.NoError(t, err)
	require.Len(t, upper, 8)
	require.Len(t, lower, 4)
	for i := range lower {
		assert.Equal(t, upper[i].Name, lower[i].Name)
		assert.Equal(t, upper[i].Model, lower[i].Model)
		assert.Equal(t, upper[i].MemoryMiB, lower[i].MemoryMiB)
		assert.Equal(t, upper[i].PCIBusID, lower[i].PCIBusID)
	}
	assert.Equal(t, "6.10.5", upper[0].Driver, "driver from the system entry")
	assert.Equal(t, "6.7.0", lower[0].Driver, "driver from the card entry")
}

func TestParseROCmSMIErrors(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"text":      {"WARNING: No AMD GPUs specified", "rocm-smi --json"},
		"no cards":  {`{"system": {"Driver version": "6.7.0"}}`, `no cardN entries (keys "system")`},
		"bad card":  {`{"cardX": {}}`, `key "cardX" is not cardN`},
		"bad bytes": {`{"card0": {"VRAM Total Memory (B)": "many"}}`, "is not a byte count"},
		"not obj":   {`{"card0": 5}`, "card0 is not an object"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, _, err := ParseROCmSMI([]byte(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestKFD(t *testing.T) {
	assert.Equal(t, "gfx942", GFXTarget(90402))
	assert.Equal(t, "gfx90a", GFXTarget(90010))
	assert.Equal(t, "gfx950", GFXTarget(90500))
	assert.Equal(t, "gfx1100", GFXTarget(110000))
	assert.Equal(t, "", GFXTarget(0))

	p, err := ParseKFDProperties([]byte("simd_count 152\nunique_id 16404946649897475633\n\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(16404946649897475633), p["unique_id"])
	_, err = ParseKFDProperties([]byte("simd_count\n"))
	assert.ErrorContains(t, err, `line 1: want "name value"`)
	_, err = ParseKFDProperties([]byte("a 1\nsimd_count -4\n"))
	assert.ErrorContains(t, err, "line 2: simd_count value \"-4\"")

	gpus, w, err := ParseKFDTopology(filepath.Join("testdata", "amd", "topo-mi300-cpx", "topology"))
	require.NoError(t, err)
	assert.Len(t, gpus, 8)
	assert.NotEmpty(t, w)

	_, _, err = ParseKFDTopology(filepath.Join("testdata", "no-such-topology"))
	assert.ErrorContains(t, err, "read KFD topology")

	// A corrupt properties file names the file.
	root := t.TempDir()
	node := filepath.Join(root, "nodes", "3")
	require.NoError(t, os.MkdirAll(node, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(node, "properties"), []byte("simd_count lots\n"), 0o644))
	_, _, err = ParseKFDTopology(root)
	assert.ErrorContains(t, err, filepath.Join("nodes", "3", "properties"))
}

func TestPCI(t *testing.T) {
	v, err := ParsePCIHex([]byte("0x10de\n"), 16)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x10de), v)
	_, err = ParsePCIHex([]byte("10de"), 16)
	assert.ErrorContains(t, err, "not a 0x-prefixed")
	_, err = ParsePCIHex([]byte("0x1234567"), 24)
	assert.ErrorContains(t, err, "24-bit")

	devs, err := ScanPCI(filepath.Join("testdata", "sysfs", "h100-sxm", "bus", "pci", "devices"))
	require.NoError(t, err)
	var gpus int
	for _, d := range devs {
		if d.IsNVIDIAGPU() {
			gpus++
		}
		assert.False(t, d.IsAMDGPU())
	}
	assert.Equal(t, 1, gpus, "the NVIDIA bridge-class function is not a GPU")
	none, err := ScanPCI(filepath.Join("testdata", "missing"))
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestCanonicalModel(t *testing.T) {
	tests := []struct {
		vendor, name string
		dev          uint16
		want         string
	}{
		{VendorNVIDIA, "NVIDIA H100 80GB HBM3", 0, "H100 SXM"},
		{VendorNVIDIA, "NVIDIA  H100  PCIe", 0, "H100 PCIe"},
		{VendorNVIDIA, "NVIDIA H100 NVL", 0x2321, ""},
		{VendorNVIDIA, "NVIDIA H200", 0x2335, "H200"},
		{VendorNVIDIA, "NVIDIA B200", 0, "B200"},
		{VendorNVIDIA, "NVIDIA B200", 0x2901, "B200"},
		// Names are matched whole: H200 NVL is not H200, GB200 not B200, GB300 not B300.
		{VendorNVIDIA, "NVIDIA H200 NVL", 0, "H200 NVL"},
		{VendorNVIDIA, "NVIDIA H200 NVL", 0x233b, "H200 NVL"},
		{VendorNVIDIA, "NVIDIA H200 NVL", 0x2335, ""},
		{VendorNVIDIA, "NVIDIA H200", 0x233b, ""},
		{VendorNVIDIA, "NVIDIA GB200", 0x2941, "GB200"},
		{VendorNVIDIA, "NVIDIA GB200", 0x2901, ""},
		{VendorNVIDIA, "NVIDIA B200", 0x2941, ""},
		{VendorNVIDIA, "NVIDIA B300 SXM6 AC", 0, "B300"},
		{VendorNVIDIA, "NVIDIA B300 SXM6 AC", 0x3182, "B300"},
		{VendorNVIDIA, "NVIDIA B300 SXM6 AC", 0x31c2, ""},
		{VendorNVIDIA, "NVIDIA B300", 0, ""},
		{VendorNVIDIA, "NVIDIA GB300", 0, "GB300"},
		{VendorNVIDIA, "NVIDIA GB300", 0x31c2, "GB300"},
		{VendorNVIDIA, "NVIDIA GB300", 0x3182, ""},
		// The DGX Station's GB300 (0x31c3) prints the same name with other memory and power.
		{VendorNVIDIA, "NVIDIA GB300", 0x31c3, ""},
		{VendorNVIDIA, "", 0x233b, "H200 NVL"},
		{VendorNVIDIA, "", 0x2901, "B200"},
		{VendorNVIDIA, "", 0x2941, "GB200"},
		{VendorNVIDIA, "", 0x3182, "B300"},
		{VendorNVIDIA, "", 0x31c2, "GB300"},
		{VendorNVIDIA, "", 0x31c3, ""},
		{VendorNVIDIA, "", 0x2330, "H100 SXM"},
		{VendorNVIDIA, "", 0x26b9, ""},
		{VendorAMD, "AMD Instinct MI300X", 0, "MI300X"},
		{VendorAMD, "AMD Instinct MI300X OAM", 0, "MI300X"},
		{VendorAMD, "AMD Instinct MI325X", 0, "MI325X"},
		{VendorAMD, "AMD Instinct MI355X", 0, "MI355X"},
		{VendorAMD, "AMD Instinct MI350X", 0, "MI350X"},
		{VendorAMD, "AMD Instinct MI350X", 0x75a0, "MI350X"},
		{VendorAMD, "AMD Instinct MI355X", 0x75a3, "MI355X"},
		{VendorAMD, "AMD Instinct MI350X", 0x75a3, ""},
		{VendorAMD, "AMD Instinct MI355X", 0x75a0, ""},
		{VendorAMD, "AMD Instinct MI350X", 0x75a8, ""},
		{VendorAMD, "", 0x75a0, "MI350X"},
		{VendorAMD, "", 0x75a3, "MI355X"},
		{VendorAMD, "", 0x75a8, ""},
		{VendorAMD, "AMD Instinct MI308X", 0x74a2, ""},
		{VendorAMD, "AMD Instinct MI300A", 0x74a0, ""},
		{VendorAMD, "", 0x74a1, "MI300X"},
		{VendorAMD, "", 0x74a5, "MI325X"},
		// A name that contradicts its PCI id resolves to neither.
		{VendorAMD, "AMD Instinct MI300X", 0x74a2, ""},
		{VendorAMD, "AMD Instinct MI325X", 0x74a1, ""},
		{VendorAMD, "AMD Instinct MI300X", 0x74a1, "MI300X"},
		{VendorNVIDIA, "NVIDIA H100 80GB HBM3", 0x2335, ""},
		{VendorNVIDIA, "NVIDIA H100 80GB HBM3", 0x2330, "H100 SXM"},
		{"intel", "Intel Gaudi 3", 0, ""},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, CanonicalModel(tc.vendor, tc.name, tc.dev), "%s %q %#x", tc.vendor, tc.name, tc.dev)
	}
}
