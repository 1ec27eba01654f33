package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rivalbench/rival/compare/figure"
	"github.com/rivalbench/rival/compare/figure/render"
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
	require.NoError(t, rep.writePlots(pngPath, svgPath))
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
			for i, st := range res.StepTimes {
				if st != nil {
					v := *st / scale
					res.StepTimes[i] = &v
				}
			}
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
	require.NoError(t, rep.writePlots(filepath.Join(dir, "many.png"), filepath.Join(dir, "many.svg")))
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
	require.NoError(t, rep.writePlots(filepath.Join(dir, "single.png"), ""))
	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "there is no cross-platform comparison")
	assert.NotContains(t, md.String(), "compared with each other", "one group: no configuration comparison either")
}

// TestCPUOnlyRun uses a result the demo wrote (CPU, fsdp, a proxy model): Rival's
// TFLOP/s is computed without a GPU peak, MFU, memory and cost are shown as not
// defined, and the figure says why in each empty panel.
func TestCPUOnlyRun(t *testing.T) {
	data, err := os.ReadFile("testdata/cpu/train_cpu_fsdp_mistral-proxy_sample.json")
	require.NoError(t, err)
	in, prob := Parse("cpu.json", data)
	require.Nil(t, prob)
	rep, err := Analyze([]Input{*in}, DefaultPrices())
	require.NoError(t, err)
	require.Empty(t, rep.Errors)
	require.Len(t, rep.Groups, 1)
	g := rep.Groups[0]
	require.NotNil(t, g.TFLOPs, "TFLOP/s needs only the model and the tokens/s")
	assert.InDelta(t, 0.0179, *g.TFLOPs, 0.0001)
	assert.Nil(t, g.MFU)
	assert.Nil(t, g.Peak)

	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Regexp(t, `\| CPU FSDP \| fp32 \| — \| 0\.0179 \| — \(proxy model\) \|`, md.String())
	assert.Contains(t, md.String(), "| — | — | — (proxy model: no time-to-train or cost) | — | — | — |", "no power is a dash, not 0 W; a proxy gets no cost and no GPU-hours")

	svg := filepath.Join(t.TempDir(), "cpu.svg")
	require.NoError(t, rep.writePlots("", svg))
	body, err := os.ReadFile(svg)
	require.NoError(t, err)
	for _, note := range []string{"Not drawn: MFU (no MFU: CPU runs have no GPU peak to divide by)", "memory (no GPU memory: CPU runs record none)", "cost (no cost for proxy models and CPU runs)"} {
		assert.Contains(t, string(body), note, "panels without data are not drawn, and the figure says why")
	}
	assert.NotContains(t, string(body), "Cost to train on 1T tokens", "no empty cost panel")
}

// The figure is written 0644 like report.md, so whoever reads one reads both.
func TestPlotFileModes(t *testing.T) {
	rep, _ := crafted(t, "dagger", DefaultPrices())
	dir := t.TempDir()
	png, svg := filepath.Join(dir, "compare.png"), filepath.Join(dir, "compare.svg")
	require.NoError(t, rep.writePlots(png, svg))
	for _, p := range []string{png, svg} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), p)
	}
}

// A CI wider than its mean must not drag the throughput axis below zero.
func TestPlotThroughputAxisStartsAtZero(t *testing.T) {
	g := &Group{Label: "MI300X Primus", ModelLabel: "Llama 3.1 8B",
		TPS: Summary{N: 2, Mean: 3250, SD: 2475, HasCI: true, Half: 22235.9, CILo: -18985.9, CIHi: 25485.9}}
	r := &Report{Models: []*ModelSection{{Label: g.ModelLabel, Groups: []*Group{g}}}, Groups: []*Group{g}}
	p, err := render.Panel(figure.Panel{Steps: r.throughputPanel([]*Group{g}, map[*Group]figure.RGBA{g: {R: 200, A: 255}}).steps})
	require.NoError(t, err)
	assert.Equal(t, 0.0, p.X.Min)
}

// Liberation Serif kerns "A" against a space, so "NVIDIA A100" rendered as
// "NVIDIAA100"; labels use no-break spaces, which are not kerned.
func TestPlotLabelsKeepSpaces(t *testing.T) {
	prices, err := ParsePriceEnv(DefaultPrices(), []string{"PRICE_A100=1.29"})
	require.NoError(t, err)
	rep, _ := crafted(t, "prices", prices)
	a100 := groupBySource(t, rep, "a100.json")
	label := rep.barLabel(a100)
	sty := draw.TextStyle{Font: plot.DefaultFont, Handler: plot.DefaultTextHandler}
	sty.Font.Size = vg.Points(10)
	space := sty.Width("x y") - sty.Width("xy")
	i := strings.IndexFunc(label, func(r rune) bool { return r == ' ' || r == '\u00a0' })
	require.Positive(t, i)
	_, size := utf8.DecodeRuneInString(label[i:])
	joined := label[:i] + label[i+size:]
	assert.GreaterOrEqual(t, float64(sty.Width(label)-sty.Width(joined)), 0.9*float64(space), "%q", label)
}

// A figure travels to rival-plot as JSON and arrives unchanged.
func TestFigureSurvivesJSON(t *testing.T) {
	rep, _, _ := loadGolden(t)
	hist := analyzeDir(t, filepath.Join("testdata", "history", "mixed-hosts"))
	for _, build := range []func() (*figure.Figure, error){rep.Figure, hist.HistoryFigure} {
		f, err := build()
		require.NoError(t, err)
		raw, err := json.Marshal(f)
		require.NoError(t, err)
		var back figure.Figure
		require.NoError(t, json.Unmarshal(raw, &back))
		assert.Equal(t, f, &back)
	}
}

// A value JSON cannot carry is refused, naming where it is.
func TestFigureRefusesNaN(t *testing.T) {
	f := &figure.Figure{Panels: []figure.Panel{{Steps: []figure.Step{{Kind: figure.Grid}, {Kind: figure.XMax, Value: math.NaN()}}}}}
	require.EqualError(t, f.Check(), "figure: panel 1, step 2 (xmax): a value is NaN")
}
