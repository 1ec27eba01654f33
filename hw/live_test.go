package hw

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDetectLiveNVIDIA runs detection on the host's own NVIDIA GPUs and checks
// it against the driver's answer read independently here (plain CSV split, no
// parser of the package). It runs only where RIVAL_TEST_LIVE_GPU=1, on a host
// with nvidia-smi; RIVAL_CAPTURE_DIR keeps the tool outputs it compared, as
// new fixtures for the capture-driven tests.
//
//	go test -c -o hw.test ./hw && RIVAL_TEST_LIVE_GPU=1 ./hw.test -test.run Live -test.v
func TestDetectLiveNVIDIA(t *testing.T) {
	if os.Getenv("RIVAL_TEST_LIVE_GPU") != "1" {
		t.Skip("needs an NVIDIA GPU host: RIVAL_TEST_LIVE_GPU=1 go test ./hw -run Live -v")
	}
	smi, err := exec.LookPath("nvidia-smi")
	require.NoError(t, err, "RIVAL_TEST_LIVE_GPU=1 but nvidia-smi is not on PATH")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The independent answer: name, memory and power limit per GPU.
	raw, err := exec.CommandContext(ctx, smi, "--query-gpu=index,name,memory.total,power.limit,uuid",
		"--format=csv,noheader,nounits").Output()
	require.NoError(t, err)
	type want struct {
		name   string
		memMiB int64
		powerW float64
		uuid   string
	}
	var wants []want
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Split(line, ", ")
		require.Len(t, f, 5, "nvidia-smi line %q", line)
		mem, err := strconv.ParseInt(strings.TrimSpace(f[2]), 10, 64)
		require.NoError(t, err, "memory.total in %q", line)
		pw, _ := strconv.ParseFloat(strings.TrimSpace(f[3]), 64) // "[N/A]" on some boards
		wants = append(wants, want{strings.TrimSpace(f[1]), mem, pw, strings.TrimSpace(f[4])})
	}
	require.NotEmpty(t, wants)

	host, err := Detect(ctx)
	require.NoError(t, err)
	t.Logf("detected: platform %s from %s, fingerprint %s, warnings %q", host.Platform, host.Source, host.Fingerprint(), host.Warnings)
	assert.Equal(t, PlatformNVIDIA, host.Platform)
	require.Len(t, host.GPUs, len(wants))
	for i, g := range host.GPUs {
		w := wants[i]
		t.Logf("GPU %d: %q model %q %d MiB %.0f W driver %s partition %q pci %s", g.Index, g.Name, g.Model, g.MemoryMiB, g.PowerLimitW, g.Driver, g.Partition, g.PCIDeviceID)
		assert.Equal(t, w.name, g.Name)
		assert.Equal(t, w.memMiB, g.MemoryMiB)
		assert.Equal(t, w.uuid, g.UUID)
		if w.powerW > 0 {
			assert.InDelta(t, w.powerW, g.PowerLimitW, 0.5)
		}
		require.NotEmpty(t, g.Model, "GPU %q has no spec-table name", g.Name)
		spec, ok := LookupSpec(g.Model)
		require.True(t, ok, "no spec for %q", g.Model)
		peak, err := PeakTFLOPs(g.Model, "bf16")
		require.NoError(t, err)
		t.Logf("spec %q: bf16 peak %.1f TFLOP/s, %+v", g.Model, peak, spec)
	}

	// The power query a run samples with parses on this host.
	tool, args := PowerQuery(PlatformNVIDIA)
	out, err := exec.CommandContext(ctx, tool, args...).Output()
	require.NoError(t, err)
	sample, err := ParsePowerSample(PlatformNVIDIA, out)
	require.NoError(t, err)
	assert.Len(t, sample.PowerWatts, len(wants))
	t.Logf("power sample: %v W, %v MiB used", sample.PowerWatts, sample.MemoryUsedMiB)

	if dir := os.Getenv("RIVAL_CAPTURE_DIR"); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, a := range map[string][]string{
			"query-gpu.csv": NvidiaQueryArgs(),
			"smi-q.xml":     NvidiaSMIXMLArgs(),
			"power.csv":     args,
		} {
			b, err := exec.CommandContext(ctx, smi, a...).Output()
			require.NoError(t, err, "nvidia-smi %v", a)
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
		}
	}
}
