package hw

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpecTable(t *testing.T) {
	tests := []struct {
		model                 string
		bf16, fp8, fp4, memGB float64
		bw, tdp               float64
	}{
		{"H100 SXM", 989.4, 1978.9, 0, 80, 3.35, 700},
		{"H100 PCIe", 756.5, 1513, 0, 80, 2.0, 350},
		{"H200", 989.4, 1978.9, 0, 141, 4.8, 700},
		{"H200 NVL", 835.5, 1670.5, 0, 141, 4.8, 600},
		{"B200", 2250, 4500, 9000, 180, 8, 1000},
		{"GB200", 2500, 5000, 10000, 186, 8, 1200},
		{"B300", 2250, 4500, 13500, 288, 8, 1100},
		{"GB300", 2500, 5000, 15000, 288, 8, 1400},
		{"MI300X", 1307.4, 2614.9, 0, 192, 5.3, 750},
		{"MI325X", 1307.4, 2614.9, 0, 256, 6, 1000},
		{"MI350X", 2306.9, 4613.7, 9227.5, 288, 8, 1000},
		{"MI355X", 2516.6, 5033.2, 10066.3, 288, 8, 1400},
	}
	require.Len(t, SpecModels(), len(tests))
	for _, tc := range tests {
		s, ok := LookupSpec(tc.model)
		require.True(t, ok, tc.model)
		assert.Equal(t, tc.model, s.Model)
		assert.Equal(t, tc.bf16, s.BF16DenseTFLOPs, tc.model)
		assert.Equal(t, tc.fp8, s.FP8DenseTFLOPs, tc.model)
		assert.Equal(t, tc.fp4, s.FP4DenseTFLOPs, tc.model)
		assert.Equal(t, tc.memGB, s.MemoryGiB, tc.model)
		assert.Equal(t, tc.bw, s.BandwidthTBs, tc.model)
		assert.Equal(t, tc.tdp, s.TDPWatts, tc.model)
		assert.NotEmpty(t, s.Source, tc.model)
		// FP8 is twice BF16, to the datasheets' rounding: H200 NVL's whole sparse
		// TFLOPS, 3,341 FP8 against 2 x 1,671 BF16, leave 0.5 dense between them.
		assert.InDelta(t, 2*s.BF16DenseTFLOPs, s.FP8DenseTFLOPs, 0.5, tc.model)

		bf16, err := PeakTFLOPs(tc.model, "bf16")
		require.NoError(t, err)
		assert.Equal(t, tc.bf16, bf16)
		fp8, err := PeakTFLOPs(tc.model, "FP8")
		require.NoError(t, err)
		assert.Equal(t, tc.fp8, fp8)
		fp4, err := PeakTFLOPs(tc.model, "fp4")
		if tc.fp4 == 0 {
			assert.ErrorContains(t, err, tc.model+" has no FP4 peak")
		} else {
			require.NoError(t, err)
			assert.Equal(t, tc.fp4, fp4)
		}
	}
	// Exact derivations: clock x CUs x FLOPs per clock per CU.
	assert.InDelta(t, 1307.4, 2100e6*304*2048/1e12, 0.05)   // MI300X BF16
	assert.InDelta(t, 2306.9, 2200e6*256*4096/1e12, 0.05)   // MI350X BF16
	assert.InDelta(t, 4613.7, 2200e6*256*8192/1e12, 0.05)   // MI350X FP8
	assert.InDelta(t, 9227.5, 2200e6*256*16384/1e12, 0.05)  // MI350X MXFP4
	assert.InDelta(t, 2516.6, 2400e6*256*4096/1e12, 0.05)   // MI355X BF16
	assert.InDelta(t, 10066.3, 2400e6*256*16384/1e12, 0.05) // MI355X MXFP4
	// Per-GPU shares of the NVIDIA system figures, in TFLOP/s and GB.
	b300, _ := LookupSpec("B300")
	assert.Equal(t, 108e3/8, b300.FP4DenseTFLOPs)   // HGX B300: FP4 108 PFLOPS dense per 8 GPUs
	assert.Equal(t, 72e3/2/8, b300.FP8DenseTFLOPs)  // FP8 72 PFLOPS with sparsity per 8 GPUs
	assert.Equal(t, 36e3/2/8, b300.BF16DenseTFLOPs) // BF16 36 PFLOPS with sparsity per 8 GPUs
	assert.Equal(t, 2304.0/8, b300.MemoryGiB)       // 2.3 TB HBM3e per 8 GPUs
	gb300, _ := LookupSpec("GB300")
	assert.Equal(t, 1080e3/72, gb300.FP4DenseTFLOPs)   // GB300 NVL72: FP4 1,080 PFLOPS dense
	assert.Equal(t, 360e3/72, gb300.FP8DenseTFLOPs)    // FP8 360 PFLOPS dense
	assert.Equal(t, 360e3/2/72, gb300.BF16DenseTFLOPs) // BF16 360 PFLOPS with sparsity
}

// TestMFUPeaks: every model of the table gives a peak at bf16 and fp8, and at
// fp4 where the part has FP4, and an MFU (achieved / peak, as result.Build
// computes it) is a finite percentage at each. A model added to the table
// without a row here fails.
func TestMFUPeaks(t *testing.T) {
	want := map[string]struct{ bf16, fp8, fp4 float64 }{
		"H100 SXM":  {989.4, 1978.9, 0},
		"H100 PCIe": {756.5, 1513, 0},
		"H200":      {989.4, 1978.9, 0},
		"H200 NVL":  {835.5, 1670.5, 0},
		"B200":      {2250, 4500, 9000},
		"GB200":     {2500, 5000, 10000},
		"B300":      {2250, 4500, 13500},
		"GB300":     {2500, 5000, 15000},
		"MI300X":    {1307.4, 2614.9, 0},
		"MI325X":    {1307.4, 2614.9, 0},
		"MI350X":    {2306.9, 4613.7, 9227.5},
		"MI355X":    {2516.6, 5033.2, 10066.3},
	}
	require.Len(t, SpecModels(), len(want))
	const achieved = 400.0 // TFLOP/s per GPU, a plausible measured figure
	for _, m := range SpecModels() {
		w, ok := want[m]
		require.True(t, ok, "no expected peaks for %s", m)
		for _, p := range []struct {
			precision string
			peak      float64
		}{{"bf16", w.bf16}, {"fp8", w.fp8}, {"fp4", w.fp4}} {
			peak, err := PeakTFLOPs(m, p.precision)
			if p.peak == 0 {
				assert.ErrorContains(t, err, "has no FP4 peak", m)
				continue
			}
			require.NoError(t, err, "%s %s", m, p.precision)
			assert.Equal(t, p.peak, peak, "%s %s", m, p.precision)
			mfu := 100 * achieved / peak
			assert.False(t, math.IsInf(mfu, 0) || math.IsNaN(mfu), "%s %s: MFU %v", m, p.precision, mfu)
			assert.Greater(t, mfu, 0.0, "%s %s", m, p.precision)
			assert.LessOrEqual(t, mfu, 100.0, "%s %s", m, p.precision)
		}
	}
}

func TestPeakTFLOPsErrors(t *testing.T) {
	_, err := PeakTFLOPs("", "bf16")
	assert.ErrorContains(t, err, "GPU model is unknown")
	_, err = PeakTFLOPs("L40S", "bf16")
	assert.ErrorContains(t, err, `no peak TFLOP/s for GPU model "L40S": known models are B200, B300, GB200, GB300, H100 PCIe`)
	// A part without FP4 tensor support says so, rather than "use another precision".
	_, err = PeakTFLOPs("MI300X", "fp4")
	assert.ErrorContains(t, err, "MI300X has no FP4 peak")
	_, err = PeakTFLOPs("H200 NVL", "FP4")
	assert.ErrorContains(t, err, "H200 NVL has no FP4 peak")
	_, err = PeakTFLOPs("MI355X", "int8")
	assert.ErrorContains(t, err, `no peak TFLOP/s for precision "int8": use bf16, fp16, fp8 or fp4`)
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
