package hw

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseNvidiaSMIXML reads a real `nvidia-smi -q -x` capture; the expected
// values are the element texts of the capture.
func TestParseNvidiaSMIXML(t *testing.T) {
	data, err := os.ReadFile("testdata/nvidia-smi-xml/a100-sxm4-mig-excerpt.xml")
	require.NoError(t, err)
	gpus, warnings, err := ParseNvidiaSMIXML(data)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.Len(t, gpus, 1)
	g := gpus[0]
	assert.Equal(t, "NVIDIA A100-SXM4-80GB", g.Name)
	assert.Equal(t, "GPU-513536b6-7d19-9063-b049-1e69664bb298", g.UUID)
	assert.Equal(t, "535.54.03", g.Driver)
	assert.Equal(t, "00000000:01:00.0", g.PCIBusID)
	assert.Equal(t, int64(81920), g.MemoryMiB, "the GPU's fb_memory_usage, not a MIG instance's 19968")
	assert.Equal(t, 500.0, g.PowerLimitW)
	assert.Equal(t, 1410, g.MaxSMClockMHz)
	assert.Equal(t, "0x20b2", g.PCIDeviceID)
	assert.Equal(t, "MIG enabled: 4 instances", g.Partition)
	assert.Equal(t, "", g.Model, "A100 is not in the spec table")

	h100 := strings.NewReplacer("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "20B210DE", "233010DE").Replace(string(data))
	gpus, _, err = ParseNvidiaSMIXML([]byte(h100))
	require.NoError(t, err)
	assert.Equal(t, "H100 SXM", gpus[0].Model)

	for name, bad := range map[string]string{
		"not xml":     "nvidia-smi: command not found",
		"no gpu":      "<nvidia_smi_log><driver_version>1</driver_version></nvidia_smi_log>",
		"bad memory":  `<nvidia_smi_log><gpu><product_name>X</product_name><fb_memory_usage><total>lots</total></fb_memory_usage></gpu></nvidia_smi_log>`,
		"other root":  "<html></html>",
		"truncated":   string(data[:len(data)/2]),
		"wrong units": `<nvidia_smi_log><gpu><product_name>X</product_name><fb_memory_usage><total>80 GiB</total></fb_memory_usage></gpu></nvidia_smi_log>`,
	} {
		_, _, err := ParseNvidiaSMIXML([]byte(bad))
		assert.Error(t, err, name)
	}
}

func TestAMDSMIPermissionPrefix(t *testing.T) {
	data, err := os.ReadFile("testdata/amd-smi/mi300x-permission-prefix.txt")
	require.NoError(t, err)
	gpus, warnings, err := ParseAMDSMIStatic(data)
	require.NoError(t, err)
	require.Len(t, gpus, 2)
	assert.Equal(t, "MI300X", gpus[0].Model)
	assert.Equal(t, int64(196592), gpus[0].MemoryMiB)
	require.NotEmpty(t, warnings)
	assert.Contains(t, warnings[0], "Permission needed")
}

func TestAMDSMIMI355XWithoutVRAM(t *testing.T) {
	data, err := os.ReadFile("testdata/amd-smi/mi355x-no-vram.json")
	require.NoError(t, err)
	gpus, warnings, err := ParseAMDSMIStatic(data)
	require.NoError(t, err)
	require.Len(t, gpus, 1)
	assert.Equal(t, "MI355X", gpus[0].Model)
	assert.Equal(t, int64(0), gpus[0].MemoryMiB, "0 is unknown")
	assert.Contains(t, strings.Join(warnings, "\n"), "memory unknown")
}

// TestDetectFallsBackToXML: a driver that refuses the CSV query still answers
// `nvidia-smi -q -x`, which detection then reads.
func TestDetectFallsBackToXML(t *testing.T) {
	data, err := os.ReadFile("testdata/nvidia-smi-xml/a100-sxm4-mig-excerpt.xml")
	require.NoError(t, err)
	h100 := strings.NewReplacer("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "20B210DE", "233010DE").Replace(string(data))
	tools := &fakeTools{outputs: map[string][]byte{"nvidia-smi -q -x": []byte(h100)}}
	d := Detector{Run: tools.run, LookPath: tools.lookPath, SysRoot: sysRoot(t, "h100-sxm", "")}
	h, err := d.Detect(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "nvidia-smi -q -x", h.Source)
	require.Len(t, h.GPUs, 1)
	assert.Equal(t, "H100 SXM", h.GPUs[0].Model)
	assert.Equal(t, int64(81920), h.GPUs[0].MemoryMiB)
}
