package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpecTable(t *testing.T) {
	tests := []struct {
		model            string
		bf16, fp8, memGB float64
		bw, tdp          float64
	}{
		{"H100 SXM", 989.4, 1978.9, 80, 3.35, 700},
		{"H100 PCIe", 756.5, 1513, 80, 2.0, 350},
		{"H200", 989.4, 1978.9, 141, 4.8, 700},
		{"B200", 2250, 4500, 180, 8, 1000},
		{"MI300X", 1307.4, 2614.9, 192, 5.3, 750},
		{"MI325X", 1307.4, 2614.9, 256, 6, 1000},
		{"MI355X", 2516.6, 5033.2, 288, 8, 1400},
	}
	require.Len(t, SpecModels(), len(tests))
	for _, tc := range tests {
		s, ok := LookupSpec(tc.model)
		require.True(t, ok, tc.model)
		assert.Equal(t, tc.model, s.Model)
		assert.Equal(t, tc.bf16, s.BF16DenseTFLOPs, tc.model)
		assert.Equal(t, tc.fp8, s.FP8DenseTFLOPs, tc.model)
		assert.Equal(t, tc.memGB, s.MemoryGiB, tc.model)
		assert.Equal(t, tc.bw, s.BandwidthTBs, tc.model)
		assert.Equal(t, tc.tdp, s.TDPWatts, tc.model)
		assert.NotEmpty(t, s.Source, tc.model)
		// FP8 is twice BF16, to the datasheets' rounding.
		assert.InDelta(t, 2*s.BF16DenseTFLOPs, s.FP8DenseTFLOPs, 0.15, tc.model)

		bf16, err := PeakTFLOPs(tc.model, "bf16")
		require.NoError(t, err)
		assert.Equal(t, tc.bf16, bf16)
		fp8, err := PeakTFLOPs(tc.model, "FP8")
		require.NoError(t, err)
		assert.Equal(t, tc.fp8, fp8)
	}
	// Exact derivations: clock x CUs x FLOPs per clock per CU.
	assert.InDelta(t, 1307.4, 2100e6*304*2048/1e12, 0.05)
	assert.InDelta(t, 2516.6, 2400e6*256*4096/1e12, 0.05)
}

func TestPeakTFLOPsErrors(t *testing.T) {
	_, err := PeakTFLOPs("", "bf16")
	assert.ErrorContains(t, err, "GPU model is unknown")
	_, err = PeakTFLOPs("L40S", "bf16")
	assert.ErrorContains(t, err, `no peak TFLOP/s for GPU model "L40S": known models are B200, H100 PCIe`)
	_, err = PeakTFLOPs("MI300X", "fp4")
	assert.ErrorContains(t, err, "use bf16, fp16 or fp8")
	_, ok := LookupSpec("MI308X")
	assert.False(t, ok)
}

func TestFingerprint(t *testing.T) {
	a := GPU{Index: 0, Vendor: VendorAMD, Name: "AMD Instinct MI300X", Model: "MI300X", UUID: "0x1", PCIBusID: "0000:05:00.0",
		Driver: "6.10.5", MemoryMiB: 196592, PowerLimitW: 750}
	b := a
	b.Index, b.UUID, b.PCIBusID = 1, "0x2", "0000:27:00.0"
	h := Host{Platform: PlatformAMD, GPUs: []GPU{a, b}, Source: "amd-smi"}
	fp := h.Fingerprint()
	assert.Len(t, fp, 64)

	// Order, UUIDs, addresses, source and warnings do not matter.
	swapped := Host{Platform: PlatformAMD, GPUs: []GPU{b, a}, Source: "rocm-smi", Warnings: []string{"x"}}
	assert.Equal(t, fp, swapped.Fingerprint())

	// Hardware facts do.
	for name, mut := range map[string]func(*Host){
		"count":     func(h *Host) { h.GPUs = h.GPUs[:1] },
		"memory":    func(h *Host) { h.GPUs[0].MemoryMiB-- },
		"driver":    func(h *Host) { h.GPUs[0].Driver = "6.10.6" },
		"power":     func(h *Host) { h.GPUs[0].PowerLimitW = 600 },
		"partition": func(h *Host) { h.GPUs[0].Partition = "CPX/NPS1" },
		"model":     func(h *Host) { h.GPUs[0].Model = "" },
		"platform":  func(h *Host) { h.Platform = PlatformCPU },
	} {
		c := Host{Platform: h.Platform, GPUs: append([]GPU(nil), h.GPUs...)}
		mut(&c)
		assert.NotEqual(t, fp, c.Fingerprint(), name)
	}
	assert.Equal(t, Host{Platform: PlatformCPU}.Fingerprint(), Host{Platform: PlatformCPU, Source: "elsewhere"}.Fingerprint())
	assert.Equal(t, []string{"MI300X"}, h.Models())
}

// HBM capacities are binary: an 80 GiB H100 exposes 81,559 MiB
// (hw/testdata/nvidia/h100-mig/query-gpu.csv), within 0.5 % of 80 × 1024 MiB; read as
// decimal GB it would be 76,294 MiB, 6.9 % short.
func TestSpecMemoryIsBinary(t *testing.T) {
	s, ok := LookupSpec("H100 SXM")
	require.True(t, ok)
	assert.Equal(t, int64(81920), s.MemoryMiB())
	assert.InEpsilon(t, 81559, float64(s.MemoryMiB()), 0.005)
	m, _ := LookupSpec("MI300X")
	assert.InEpsilon(t, 196592, float64(m.MemoryMiB()), 0.005, "amd-smi's MI300X VRAM total")
}

// TestPeakFP16 checks the fp16 peaks: on H100 and MI300X the dense FP16 tensor rate
// equals BF16 (datasheets: 1,979 TFLOPS sparse on H100 SXM, 1,307.4 dense on MI300X).
func TestPeakFP16(t *testing.T) {
	for _, m := range SpecModels() {
		fp16, err := PeakTFLOPs(m, "fp16")
		require.NoError(t, err, m)
		bf16, err := PeakTFLOPs(m, "bf16")
		require.NoError(t, err, m)
		assert.Equal(t, bf16, fp16, m)
	}
	v, err := PeakTFLOPs("H100 SXM", "FP16")
	require.NoError(t, err)
	assert.InDelta(t, 989.4, v, 1e-9)
}
