package compare

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWritePlots renders the golden results; set RIVAL_KEEP_PLOTS=DIR to keep
// the figure for looking at it.
func TestWritePlots(t *testing.T) {
	rep, _, _ := loadGolden(t)
	dir := t.TempDir()
	if keep := os.Getenv("RIVAL_KEEP_PLOTS"); keep != "" {
		dir = keep
	}
	pngPath, svgPath := filepath.Join(dir, "compare.png"), filepath.Join(dir, "compare.svg")
	require.NoError(t, rep.WritePlots(pngPath, svgPath))
	data, err := os.ReadFile(pngPath)
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, 1536, img.Bounds().Dx())
	assert.Equal(t, 1728, img.Bounds().Dy())
	svg, err := os.ReadFile(svgPath)
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), NotIdentical)
	assert.Contains(t, string(svg), "tokens/s per GPU")
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	assert.Empty(t, left, "no temporary files left behind")
}

// manyGroups builds nGroups × nRuns inputs from one golden result.
func manyGroups(t *testing.T, nGroups, nRuns int, platforms ...string) []Input {
	t.Helper()
	data, err := os.ReadFile("testdata/results/nvd_nemo_llama_0.json")
	require.NoError(t, err)
	var out []Input
	for g := range nGroups {
		for r := range nRuns {
			in, prob := Parse("x.json", data)
			require.Nil(t, prob)
			res := in.Result
			p := platforms[g%len(platforms)]
			res.Platform = &p
			cfg := fmt.Sprintf("cfg-%03d", g)
			res.ConfigFingerprint = &cfg
			scale := 1 + 0.01*float64(g) + 0.001*float64(r%7)
			pm := &res.PerformanceMetrics
			pm.AvgStepTimeSeconds /= scale
			pm.TokensPerSecond *= scale
			pm.TokensPerSecondPerGPU *= scale
			in.Source = fmt.Sprintf("g%03d/r%04d.json", g, r)
			in.Fingerprint = in.Source
			out = append(out, *in)
		}
	}
	return out
}

func TestPlotManyRunsStaysCapped(t *testing.T) {
	rep, err := Analyze(manyGroups(t, 40, 25, "amd", "nvd"), DefaultPrices())
	require.NoError(t, err)
	assert.Len(t, rep.Groups, 40)
	assert.Len(t, rep.plotted(), MaxGroupsPlotted)
	dir := t.TempDir()
	if keep := os.Getenv("RIVAL_KEEP_PLOTS"); keep != "" {
		dir = keep
	}
	require.NoError(t, rep.WritePlots(filepath.Join(dir, "many.png"), filepath.Join(dir, "many.svg")))
	svg, err := os.ReadFile(filepath.Join(dir, "many.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "showing the first 12 of 40 groups")
}

func TestPlotSinglePlatform(t *testing.T) {
	rep, err := Analyze(manyGroups(t, 1, 1, "nvd"), DefaultPrices())
	require.NoError(t, err)
	require.Len(t, rep.Models, 1)
	assert.Contains(t, rep.Models[0].NoComparison, "no cross-platform comparison")
	dir := t.TempDir()
	if keep := os.Getenv("RIVAL_KEEP_PLOTS"); keep != "" {
		dir = keep
	}
	require.NoError(t, rep.WritePlots(filepath.Join(dir, "single.png"), ""))
	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "there is no cross-platform comparison")
}
