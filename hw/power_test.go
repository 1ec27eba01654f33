package hw

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The outputs below follow each tool's documented format (nvidia-smi
// --query-gpu CSV without header or units; amd-smi metric --json in its
// wrapped and bare forms); they are not captures.
func TestParsePowerSample(t *testing.T) {
	tests := []struct {
		name, platform, out string
		power, mem          []float64
	}{
		{"nvidia", PlatformNVIDIA, "0, 312.45, 60123\n1, 298.10, 59870\n", []float64{312.45, 298.10}, []float64{60123, 59870}},
		{"nvidia n/a power", PlatformNVIDIA, "0, [N/A], 1024\n", nil, []float64{1024}},
		{"amd wrapped", PlatformAMD, `{"gpu_data":[{"gpu":0,"power":{"socket_power":{"value":512,"unit":"W"}},"mem_usage":{"used_vram":{"value":20480,"unit":"MB"}}}]}`, []float64{512}, []float64{20480}},
		{"amd bare, older keys", PlatformAMD, `[{"gpu":0,"power":{"average_socket_power":"701 W"},"mem_usage":{"used_vram":100}},{"gpu":1,"power":{"current_socket_power":650},"mem_usage":{}}]`, []float64{701, 650}, []float64{100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParsePowerSample(tt.platform, []byte(tt.out))
			require.NoError(t, err)
			assert.Equal(t, tt.power, s.PowerWatts)
			assert.Equal(t, tt.mem, s.MemoryUsedMiB)
		})
	}
	for _, bad := range []struct{ platform, out string }{
		{PlatformNVIDIA, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."},
		{PlatformAMD, "not json"},
		{PlatformAMD, `{"gpu_data": 3}`},
		{PlatformCPU, ""},
	} {
		_, err := ParsePowerSample(bad.platform, []byte(bad.out))
		assert.Error(t, err, bad.out)
	}
}

func FuzzParsePowerSample(f *testing.F) {
	f.Add("nvd", "0, 312.45, 60123\n")
	f.Add("amd", `{"gpu_data":[{"power":{"socket_power":{"value":1}}}]}`)
	f.Fuzz(func(t *testing.T, platform, out string) {
		ParsePowerSample(platform, []byte(out))
	})
}
