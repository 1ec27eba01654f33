package tasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report tells the reader to set PRICE_<GPU> for an unpriced GPU; any
// such setting (a CPU, a GPU outside the spec table) must be accepted by
// compare rather than abort it, and the figures are written 0644 like
// report.md.
func TestComparePriceSettingsForAnyGPU(t *testing.T) {
	w, _ := newWorkspace(t, "")
	trainOnce(t, w)
	t.Setenv("PRICE_CPU", "0.05")
	t.Setenv("PRICE_NVIDIA_A100_SXM4_80GB", "1.29")
	ct, err := w.compareTask(nil)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), ct))
	for _, o := range ct.Outputs {
		st, err := os.Stat(o.Path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), o.Path)
	}
}

// A headline's reproduce command sets, in front of train:run, every recorded
// configuration key that differs from its default (here an FP8 run at GBS
// 256), and leaves out the keys at their defaults.
func TestCompareReproduceCommandCarriesTheRecordedConfig(t *testing.T) {
	w, _ := newWorkspace(t, "")
	dir, err := filepath.Abs(filepath.Join("..", "compare", "testdata", "crafted", "reproduce"))
	require.NoError(t, err)
	ct, err := w.compareTask([]string{dir})
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), ct))
	report, err := os.ReadFile(ct.Outputs[0].Path)
	require.NoError(t, err)
	assert.Contains(t, string(report), "`GBS=256 PRECISION=fp8 go run mage.go train:run amd prim qwen`")
	assert.Contains(t, string(report), "`GBS=256 PRECISION=fp8 go run mage.go train:run nvd mega qwen`")
	assert.NotContains(t, string(report), "SEED=42")
}
