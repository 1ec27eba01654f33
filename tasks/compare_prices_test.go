package tasks

import (
	"context"
	"os"
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
	ct, err := w.CompareTask(nil)
	require.NoError(t, err)
	require.NoError(t, w.Runner.Run(context.Background(), ct))
	for _, o := range ct.Outputs {
		st, err := os.Stat(o.Path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), o.Path)
	}
}
