package compare_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/compare"
)

// stragglerWarnings loads the crafted straggler set (five runs, the last an
// outlier), on platform, and returns the report's warnings.
func stragglerWarnings(t *testing.T, platform string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "crafted", "straggler", "amd_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 5)
	var blobs [][]byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var r map[string]any
		require.NoError(t, json.Unmarshal(raw, &r))
		if platform == "cpu" {
			// As a CPU run records it: the platform, and no GPU.
			r["platform"] = "cpu"
			r["gpu_info"] = map[string]any{"device_count": 8, "device_name": nil, "spec_model": nil}
		}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		blobs = append(blobs, b)
	}
	inputs, problems := compare.LoadFiles(context.Background(), nil, blobs)
	require.Empty(t, problems)
	rep, err := compare.Analyze(inputs, compare.DefaultPrices())
	require.NoError(t, err)
	require.Empty(t, rep.Errors)
	var warnings []string
	for _, w := range rep.Warnings {
		if strings.HasPrefix(w, "outlier run:") {
			warnings = append(warnings, w)
		}
	}
	require.Len(t, warnings, 1, "%q", rep.Warnings)
	return warnings[0]
}

// An outlier among CPU runs is blamed on what a CPU shares (its cores, its
// clock), not on a node or a GPU it does not have.
func TestOutlierAdviceFitsThePlatform(t *testing.T) {
	cpu := stragglerWarnings(t, "cpu")
	assert.NotContains(t, cpu, "throttled GPU")
	assert.NotContains(t, cpu, "straggler node")
	assert.Contains(t, cpu, "another process competing for the cores")
	assert.Contains(t, cpu, "frequency scaling")

	gpu := stragglerWarnings(t, "amd")
	assert.Contains(t, gpu, "a straggler node or a throttled GPU")
}
