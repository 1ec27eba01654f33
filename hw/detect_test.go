package hw

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errNotFound = errors.New("executable file not found in $PATH")

// fakeTools answers tool invocations from fixtures, as the real tools would.
type fakeTools struct {
	outputs map[string][]byte // "name arg1 arg2..." -> stdout
	fails   map[string]string // "name" -> error text (tool installed but failing)
	calls   []string
}

func (f *fakeTools) key(name string, args ...string) string {
	return strings.Join(append([]string{name}, args...), " ")
}

func (f *fakeTools) lookPath(name string) (string, error) {
	for k := range f.outputs {
		if strings.HasPrefix(k, name+" ") {
			return "/usr/bin/" + name, nil
		}
	}
	if _, ok := f.fails[name]; ok {
		return "/usr/bin/" + name, nil
	}
	return "", errNotFound
}

func (f *fakeTools) run(_ context.Context, name string, args ...string) ([]byte, error) {
	k := f.key(name, args...)
	f.calls = append(f.calls, k)
	if msg, ok := f.fails[name]; ok {
		return []byte(msg), fmt.Errorf("%s: exit status 9: %s", name, msg)
	}
	if out, ok := f.outputs[k]; ok {
		return out, nil
	}
	return nil, fmt.Errorf("%s: unexpected invocation %q", name, k)
}

// nvidiaQueryOutput is what `nvidia-smi --query-gpu=<NvidiaQueryFields>
// --format=csv,noheader,nounits` prints on a captured machine: the captured
// full query (with header and units) projected onto our fields, units removed.
func nvidiaQueryOutput(t *testing.T, machine string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nvidiaFixtureDir(machine), "query-gpu.csv"))
	require.NoError(t, err)
	r := csv.NewReader(strings.NewReader(string(data)))
	r.TrimLeadingSpace = true
	rows, err := r.ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimSpace(headerUnit.ReplaceAllString(h, ""))] = i
	}
	var b strings.Builder
	for _, row := range rows[1:] {
		vals := make([]string, len(NvidiaQueryFields))
		for i, f := range NvidiaQueryFields {
			j, ok := col[f]
			require.True(t, ok, "capture lacks %s", f)
			v := row[j]
			if !strings.HasPrefix(v, "[") {
				v = strings.Fields(v + " ")[0]
				if f == "name" {
					v = row[j]
				}
			}
			vals[i] = v
		}
		b.WriteString(strings.Join(vals, ", ") + "\n")
	}
	return []byte(b.String())
}

// readNvidiaFixture reads a file of a captured or built nvidia-smi fixture.
func readNvidiaFixture(t *testing.T, machine, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(nvidiaFixtureDir(machine), name))
	require.NoError(t, err)
	return data
}

func readFixture(t *testing.T, parts ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{"testdata"}, parts...)...))
	require.NoError(t, err)
	return data
}

// sysRoot builds a root with sys/bus from a PCI fixture and, optionally,
// sys/class/kfd/kfd/topology from a KFD capture.
func sysRoot(t *testing.T, pciMachine, kfdTree string) string {
	t.Helper()
	root := t.TempDir()
	if pciMachine != "" {
		abs, err := filepath.Abs(filepath.Join("testdata", "sysfs", pciMachine, "bus"))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(root, "sys"), 0o755))
		require.NoError(t, os.Symlink(abs, filepath.Join(root, "sys", "bus")))
	}
	if kfdTree != "" {
		abs, err := filepath.Abs(filepath.Join("testdata", "amd", kfdTree, "topology"))
		require.NoError(t, err)
		dir := filepath.Join(root, "sys", "class", "kfd", "kfd")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.Symlink(abs, filepath.Join(dir, "topology")))
	}
	return root
}

type detectCase struct {
	name        string
	pci, kfd    string
	tools       func(t *testing.T) *fakeTools
	platform    string
	model       string
	count       int
	memoryMiB   int64
	source      string
	partition   string
	partitions  map[int]string // per-GPU partition where GPUs differ
	warnings    []string       // substrings that must appear
	noWarnings  bool
	powerW      float64
	driver      string
	gpuName     string
	gfx         string
	notCalledOn string
}

func nvidiaTools(machine string) func(t *testing.T) *fakeTools {
	return func(t *testing.T) *fakeTools {
		return &fakeTools{outputs: map[string][]byte{
			strings.Join(append([]string{"nvidia-smi"}, NvidiaQueryArgs()...), " "): nvidiaQueryOutput(t, machine),
			"nvidia-smi -L": readNvidiaFixture(t, machine, "list.txt"),
		}}
	}
}

func amdTools(amdSMI, rocmSMI string, failAMD bool) func(t *testing.T) *fakeTools {
	return func(t *testing.T) *fakeTools {
		f := &fakeTools{outputs: map[string][]byte{}, fails: map[string]string{}}
		if amdSMI != "" {
			f.outputs[strings.Join(append([]string{"amd-smi"}, AMDSMIStaticArgs()...), " ")] = readFixture(t, "amd-smi", amdSMI)
		}
		if rocmSMI != "" {
			f.outputs[strings.Join(append([]string{"rocm-smi"}, ROCmSMIArgs()...), " ")] = readFixture(t, "rocm-smi", rocmSMI)
		}
		if failAMD {
			f.fails["amd-smi"] = "ERROR:root:Unable to detect any GPU devices, check amdgpu version and module status (sudo modprobe amdgpu)"
		}
		return f
	}
}

func noTools(*testing.T) *fakeTools { return &fakeTools{} }

var detectCases = []detectCase{
	{name: "h100-sxm", pci: "h100-sxm", tools: nvidiaTools("h100-sxm"), platform: PlatformNVIDIA, model: "H100 SXM", count: 1,
		memoryMiB: 81559, source: "nvidia-smi --query-gpu", noWarnings: true, powerW: 700, driver: "590.48.01", gpuName: "NVIDIA H100 80GB HBM3",
		notCalledOn: "nvidia-smi -L"},
	{name: "h100-mig", pci: "h100-mig", tools: nvidiaTools("h100-mig"), platform: PlatformNVIDIA, model: "H100 SXM", count: 1,
		memoryMiB: 81559, source: "nvidia-smi --query-gpu", partition: "MIG enabled: 4 instances (3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb)",
		warnings: []string{"MIG mode"}},
	{name: "h200", pci: "h200", tools: nvidiaTools("h200"), platform: PlatformNVIDIA, model: "H200", count: 1,
		memoryMiB: 143771, source: "nvidia-smi --query-gpu", noWarnings: true, powerW: 700, gpuName: "NVIDIA H200"},
	// Built from the h200 capture (testdata/README.md): name, device id, memory and power
	// are the part's. GB200 and GB300 must not be taken for B200 and B300, nor H200 NVL for H200.
	{name: "h200-nvl", pci: "h200-nvl", tools: nvidiaTools("h200-nvl"), platform: PlatformNVIDIA, model: "H200 NVL", count: 1,
		memoryMiB: 143771, source: "nvidia-smi --query-gpu", noWarnings: true, powerW: 600, gpuName: "NVIDIA H200 NVL"},
	{name: "gb200", pci: "gb200", tools: nvidiaTools("gb200"), platform: PlatformNVIDIA, model: "GB200", count: 1,
		memoryMiB: 189471, source: "nvidia-smi --query-gpu", noWarnings: true, powerW: 1200, gpuName: "NVIDIA GB200"},
	{name: "b300", pci: "b300", tools: nvidiaTools("b300"), platform: PlatformNVIDIA, model: "B300", count: 1,
		memoryMiB: 275040, source: "nvidia-smi --query-gpu", noWarnings: true, powerW: 1100, gpuName: "NVIDIA B300 SXM6 AC"},
	{name: "gb300", pci: "gb300", tools: nvidiaTools("gb300"), platform: PlatformNVIDIA, model: "GB300", count: 1,
		memoryMiB: 284208, source: "nvidia-smi --query-gpu", noWarnings: true, powerW: 1400, gpuName: "NVIDIA GB300"},
	{name: "b300-no-nvidia-smi", pci: "b300", tools: noTools, platform: PlatformNVIDIA, model: "B300", count: 1,
		memoryMiB: 0, source: "PCI sysfs (vendor 0x10de)", gpuName: "NVIDIA B300 SXM6 AC",
		warnings: []string{"nvidia-smi not found"}},
	{name: "l40s-unknown-model", pci: "l40s", tools: nvidiaTools("l40s"), platform: PlatformNVIDIA, model: "", count: 1,
		memoryMiB: 46068, source: "nvidia-smi --query-gpu", powerW: 350, driver: "595.80", gpuName: "NVIDIA L40S",
		warnings: []string{`"NVIDIA L40S" (PCI device 0x26b9) is not in the spec table`}},
	{name: "h100-no-nvidia-smi", pci: "h100-sxm", tools: noTools, platform: PlatformNVIDIA, model: "H100 SXM", count: 1,
		memoryMiB: 0, source: "PCI sysfs (vendor 0x10de)", gpuName: "NVIDIA H100 SXM5 80GB",
		warnings: []string{"nvidia-smi not found"}},
	{name: "h100-nvidia-smi-broken", pci: "h100-sxm", tools: func(*testing.T) *fakeTools {
		return &fakeTools{fails: map[string]string{"nvidia-smi": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."}}
	}, platform: PlatformNVIDIA, model: "H100 SXM", count: 1, source: "PCI sysfs (vendor 0x10de)",
		warnings: []string{"nvidia-smi failed, falling back to PCI sysfs", "couldn't communicate with the NVIDIA driver"}},
	{name: "mi300x-cpx-kfd-only", pci: "mi300x-cpx", kfd: "topo-mi300-cpx", tools: noTools, platform: PlatformAMD, model: "MI300X", count: 8,
		memoryMiB: 0, source: "KFD topology", partition: "8 partitions", gfx: "gfx942", gpuName: "AMD Instinct MI300X",
		// The capture has 63 GPU nodes: the last GPU shows only 7 of its 8 partitions.
		partitions: map[int]string{7: "7 partitions"},
		warnings:   []string{"neither amd-smi nor rocm-smi found", "no memory size", "different numbers of KFD partition nodes"}},
	{name: "mi300x-amd-smi-wrapped", pci: "mi300x-cpx", kfd: "topo-mi300-cpx", tools: amdTools("mi300x-x8-wrapped.json", "", false),
		platform: PlatformAMD, model: "MI300X", count: 8, memoryMiB: 196592, source: "amd-smi static --json", noWarnings: false,
		powerW: 750, driver: "6.10.5", partition: "SPX/NPS1", gfx: "gfx942", gpuName: "AMD Instinct MI300X"},
	{name: "mi300x-amd-smi-bare", tools: amdTools("mi300x-x2-bare.json", "", false),
		platform: PlatformAMD, model: "MI300X", count: 2, memoryMiB: 196592, source: "amd-smi static --json", noWarnings: true,
		partition: "SPX/NPS1"},
	{name: "mi300x-amd-smi-cpx-partitions", tools: amdTools("mi300x-cpx-one-gpu.json", "", false),
		platform: PlatformAMD, model: "MI300X", count: 1, memoryMiB: 196592, source: "amd-smi static --json",
		partition: "CPX/NPS1, 8 partitions", warnings: []string{"listed 8 partitions"}},
	{name: "mi300x-amd-smi-broken-rocm-smi-upper", pci: "mi300x-cpx", kfd: "topo-mi300-cpx", tools: amdTools("", "mi300x-x8-upper.json", true),
		platform: PlatformAMD, model: "MI300X", count: 8, memoryMiB: 196592, source: "rocm-smi", powerW: 750, driver: "6.10.5",
		warnings: []string{"amd-smi failed, trying the next source", "Unable to detect any GPU devices"}},
	{name: "mi300x-rocm-smi-lower", tools: amdTools("", "mi300x-x4-lower.json", false),
		platform: PlatformAMD, model: "MI300X", count: 4, memoryMiB: 196592, source: "rocm-smi", driver: "6.7.0", noWarnings: true},
	{name: "mi300x-pci-only", pci: "mi300x-cpx", tools: noTools, platform: PlatformAMD, model: "MI300X", count: 8,
		source: "PCI sysfs (vendor 0x1002)", gpuName: "AMD Instinct MI300X"},
	{name: "mi350x-amd-smi-bare", pci: "mi350x", tools: amdTools("mi350x-x2-bare.json", "", false),
		platform: PlatformAMD, model: "MI350X", count: 2, memoryMiB: 294912, source: "amd-smi static --json", noWarnings: true,
		partition: "SPX/NPS1", powerW: 1000, driver: "6.18.3", gfx: "gfx950", gpuName: "AMD Instinct MI350X"},
	{name: "mi350x-pci-only", pci: "mi350x", tools: noTools, platform: PlatformAMD, model: "MI350X", count: 2,
		source: "PCI sysfs (vendor 0x1002)", gpuName: "AMD Instinct MI350X"},
	{name: "mi308x-kfd-unknown-model", pci: "mi308x", kfd: "topology-parsing-mi308", tools: noTools, platform: PlatformAMD, model: "", count: 8,
		// Partition banks: 3 x 51539607552 + 51522830336 bytes = 196592 MiB.
		memoryMiB: 196592, source: "KFD topology", partition: "4 partitions", gfx: "gfx942", gpuName: "AMD Instinct MI308X",
		warnings: []string{"is not in the spec table"}},
	// Node 2 is node 1 copied with unique_id+1 to simulate a second GPU (the
	// capture's README): two GPUs, and a warning that they share a PCI location.
	{name: "mi25-kfd-copied-node", kfd: "topology-parsing", tools: noTools, platform: PlatformAMD, model: "", count: 2,
		memoryMiB: 16368, source: "KFD topology", gpuName: "AMD Instinct MI25 (Vega 10)",
		warnings: []string{"claim PCI location 0000:19:00.0", "is not in the spec table"}},
	{name: "cpu-only", pci: "cpu-only", tools: noTools, platform: PlatformCPU, count: 0, noWarnings: true, source: "no GPU found"},
	{name: "cpu-only-with-broken-nvidia-smi", pci: "cpu-only", tools: func(*testing.T) *fakeTools {
		return &fakeTools{fails: map[string]string{"nvidia-smi": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."}}
	}, platform: PlatformCPU, count: 0, source: "no GPU found", warnings: []string{"nvidia-smi failed"}},
	{name: "no-sysfs-at-all", tools: noTools, platform: PlatformCPU, count: 0, noWarnings: true},
}

func TestDetectCapturedMachines(t *testing.T) {
	for _, tc := range detectCases {
		t.Run(tc.name, func(t *testing.T) {
			tools := tc.tools(t)
			d := Detector{Run: tools.run, LookPath: tools.lookPath, SysRoot: sysRoot(t, tc.pci, tc.kfd)}
			h, err := d.Detect(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tc.platform, h.Platform, "platform")
			require.Len(t, h.GPUs, tc.count, "GPU count")
			assert.Contains(t, h.Source, tc.source)
			for i, g := range h.GPUs {
				assert.Equal(t, i, g.Index)
				assert.Equal(t, tc.model, g.Model, "model of GPU %d", i)
				assert.Equal(t, tc.memoryMiB, g.MemoryMiB, "memory of GPU %d", i)
				wantPart := tc.partition
				if p, ok := tc.partitions[i]; ok {
					wantPart = p
				}
				assert.Equal(t, wantPart, g.Partition, "partition of GPU %d", i)
				if tc.powerW != 0 {
					assert.Equal(t, tc.powerW, g.PowerLimitW)
				}
				if tc.driver != "" {
					assert.Equal(t, tc.driver, g.Driver)
				}
				if tc.gpuName != "" {
					assert.Equal(t, tc.gpuName, g.Name)
				}
				if tc.gfx != "" {
					assert.Equal(t, tc.gfx, g.GFXTarget)
				}
			}
			if tc.noWarnings {
				assert.Empty(t, h.Warnings)
			}
			all := strings.Join(h.Warnings, "\n")
			for _, w := range tc.warnings {
				assert.Contains(t, all, w)
			}
			if tc.notCalledOn != "" {
				assert.NotContains(t, tools.calls, tc.notCalledOn)
			}
			checkGolden(t, "detect-"+tc.name+".json", h)
		})
	}
}

func checkGolden(t *testing.T, name string, h Host) {
	t.Helper()
	type golden struct {
		Host        Host
		Fingerprint string
	}
	got, err := json.MarshalIndent(golden{h, h.Fingerprint()}, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run: go test ./hw -run TestDetectCapturedMachines -update")
	assert.Equal(t, string(want), string(got), "golden %s differs; if the change is intended rerun with -update", path)
}

func TestDetectRetriesWithTheBaseQuery(t *testing.T) {
	full := strings.Join(append([]string{"nvidia-smi"}, NvidiaQueryArgs()...), " ")
	tools := nvidiaTools("h100-sxm")(t)
	rows := strings.Split(strings.TrimSpace(string(tools.outputs[full])), ", ")
	delete(tools.outputs, full)
	tools.outputs[strings.Join(append([]string{"nvidia-smi"}, NvidiaBaseQueryArgs()...), " ")] = []byte(strings.Join(rows[:7], ", ") + "\n")
	d := Detector{Run: tools.run, LookPath: tools.lookPath, SysRoot: sysRoot(t, "h100-sxm", "")}
	h, err := d.Detect(context.Background())
	require.NoError(t, err)
	require.Len(t, h.GPUs, 1)
	assert.Equal(t, "H100 SXM", h.GPUs[0].Model)
	assert.Equal(t, int64(81559), h.GPUs[0].MemoryMiB)
	assert.Equal(t, "nvidia-smi --query-gpu", h.Source)
	assert.Contains(t, strings.Join(h.Warnings, "\n"), "used the base fields")
}

func TestDetectStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tools := nvidiaTools("h100-sxm")(t)
	d := Detector{Run: tools.run, LookPath: tools.lookPath, SysRoot: sysRoot(t, "h100-sxm", "")}
	_, err := d.Detect(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestDetectPrefersTheVendorWithMoreGPUs(t *testing.T) {
	tools := amdTools("mi300x-x8-wrapped.json", "", false)(t)
	d := Detector{Run: tools.run, LookPath: tools.lookPath, SysRoot: sysRoot(t, "h100-sxm", "")}
	h, err := d.Detect(context.Background())
	require.NoError(t, err)
	assert.Equal(t, PlatformAMD, h.Platform)
	assert.Contains(t, strings.Join(h.Warnings, "\n"), "both NVIDIA (1) and AMD (8) GPUs found")
}

func TestDefaultDetectorOnTheHost(t *testing.T) {
	// Whatever the host has, detection must answer without error and with
	// a consistent platform.
	h, err := Detect(context.Background())
	require.NoError(t, err)
	if h.Platform == PlatformCPU {
		assert.Empty(t, h.GPUs)
	} else {
		assert.NotEmpty(t, h.GPUs)
	}
	assert.Len(t, h.Fingerprint(), 64)
}

func TestRunToolReportsStderr(t *testing.T) {
	_, err := runTool(context.Background(), "sh", "-c", "echo boom >&2; exit 3")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "boom")
	out, err := runTool(context.Background(), "sh", "-c", "echo fine")
	require.NoError(t, err)
	assert.Equal(t, "fine\n", string(out))
}

// TestDetectFallsBackToPCI covers the one PCI fallback from both of its callers: with no
// tool and no KFD topology, each vendor's GPUs come from PCI sysfs alone. Names and models
// are those pci.ids and the spec table give for the device ids; devices the tables lack keep
// a PCI name and an empty model.
func TestDetectFallsBackToPCI(t *testing.T) {
	cases := []struct {
		name     string
		pci      string
		platform string
		source   string
		count    int
		first    GPU
	}{
		{name: "NVIDIA known device", pci: "h100-sxm", platform: PlatformNVIDIA, source: "PCI sysfs (vendor 0x10de)", count: 1,
			first: GPU{Index: 0, Vendor: VendorNVIDIA, Name: "NVIDIA H100 SXM5 80GB", Model: "H100 SXM", PCIBusID: "0000:00:09.0", PCIDeviceID: "0x2330"}},
		{name: "NVIDIA H200 NVL", pci: "h200-nvl", platform: PlatformNVIDIA, source: "PCI sysfs (vendor 0x10de)", count: 1,
			first: GPU{Index: 0, Vendor: VendorNVIDIA, Name: "NVIDIA H200 NVL", Model: "H200 NVL", PCIBusID: "0000:83:00.0", PCIDeviceID: "0x233b"}},
		{name: "NVIDIA GB200", pci: "gb200", platform: PlatformNVIDIA, source: "PCI sysfs (vendor 0x10de)", count: 1,
			first: GPU{Index: 0, Vendor: VendorNVIDIA, Name: "NVIDIA GB200", Model: "GB200", PCIBusID: "0000:83:00.0", PCIDeviceID: "0x2941"}},
		{name: "NVIDIA B300", pci: "b300", platform: PlatformNVIDIA, source: "PCI sysfs (vendor 0x10de)", count: 1,
			first: GPU{Index: 0, Vendor: VendorNVIDIA, Name: "NVIDIA B300 SXM6 AC", Model: "B300", PCIBusID: "0000:83:00.0", PCIDeviceID: "0x3182"}},
		{name: "NVIDIA GB300", pci: "gb300", platform: PlatformNVIDIA, source: "PCI sysfs (vendor 0x10de)", count: 1,
			first: GPU{Index: 0, Vendor: VendorNVIDIA, Name: "NVIDIA GB300", Model: "GB300", PCIBusID: "0000:83:00.0", PCIDeviceID: "0x31c2"}},
		{name: "NVIDIA device not in the tables", pci: "l40s", platform: PlatformNVIDIA, source: "PCI sysfs (vendor 0x10de)", count: 1,
			first: GPU{Index: 0, Vendor: VendorNVIDIA, Name: "PCI 10de:26b9", Model: "", PCIBusID: "0000:01:00.0", PCIDeviceID: "0x26b9"}},
		{name: "AMD known device", pci: "mi300x-cpx", platform: PlatformAMD, source: "PCI sysfs (vendor 0x1002)", count: 8,
			first: GPU{Index: 0, Vendor: VendorAMD, Name: "AMD Instinct MI300X", Model: "MI300X", PCIBusID: "0000:05:00.0", PCIDeviceID: "0x74a1"}},
		{name: "AMD MI350X", pci: "mi350x", platform: PlatformAMD, source: "PCI sysfs (vendor 0x1002)", count: 2,
			first: GPU{Index: 0, Vendor: VendorAMD, Name: "AMD Instinct MI350X", Model: "MI350X", PCIBusID: "0000:05:00.0", PCIDeviceID: "0x75a0"}},
		{name: "AMD device named but not in the spec table", pci: "mi308x", platform: PlatformAMD, source: "PCI sysfs (vendor 0x1002)", count: 8,
			first: GPU{Index: 0, Vendor: VendorAMD, Name: "AMD Instinct MI308X", Model: "", PCIBusID: "0000:0a:00.0", PCIDeviceID: "0x74a2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Detector{Run: noTools(t).run, LookPath: noTools(t).lookPath, SysRoot: sysRoot(t, tc.pci, "")}
			h, err := d.Detect(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tc.platform, h.Platform)
			assert.Equal(t, tc.source, h.Source)
			require.Len(t, h.GPUs, tc.count)
			for i, g := range h.GPUs {
				assert.Equal(t, i, g.Index, "GPUs are numbered in PCI order")
				assert.Zero(t, g.MemoryMiB, "PCI sysfs gives no memory size")
				assert.Zero(t, g.PowerLimitW, "PCI sysfs gives no power limit")
				assert.Empty(t, g.Driver, "PCI sysfs gives no driver version")
			}
			assert.Equal(t, tc.first, h.GPUs[0])
		})
	}
}
