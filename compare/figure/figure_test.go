package figure_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/compare/figure"
	"github.com/rivalbench/rival/compare/figure/render"
	"github.com/rivalbench/rival/internal/goprog"
)

// sample is a small figure with a step of every kind.
func sample() *figure.Figure {
	red := &figure.RGBA{R: 200, G: 30, B: 45, A: 255}
	return &figure.Figure{
		Width: 600, Height: 300, DPI: 96,
		Texts:   []figure.Text{{FromTop: 8, Size: 14, Text: "A figure"}},
		CropTop: 30,
		Tiles:   figure.Tiles{Rows: 1, Cols: 2, PadX: 20},
		Panels: []figure.Panel{
			{Steps: []figure.Step{
				{Kind: figure.Title, Text: "bars", Size: 12}, {Kind: figure.XLabel, Text: "tokens/s", Size: 10},
				{Kind: figure.XTicks, Size: 9, Ticks: "plain"}, {Kind: figure.YTicks, Size: 9}, {Kind: figure.XMin}, {Kind: figure.Grid},
				{Kind: figure.Bar, Value: 20000, At: 1, Width: 12, Colour: red},
				{Kind: figure.Bar, Value: 15000, At: 0, Width: 12, Offset: 2, Colour: red},
				{Kind: figure.XErrors, Points: []figure.XY{{X: 20000, Y: 1}}, Lo: []float64{500}, Hi: []float64{500}, Width: 1.5, Cap: 8},
				{Kind: figure.Box, At: 0, Width: 8, Samples: []float64{14000, 15000, 15500, 16000}, Fill: red, Radius: 1.5},
				{Kind: figure.Labels, Points: []figure.XY{{X: 15000, Y: 0}}, Texts: []string{" 15,000"}, Size: 9, YAlign: figure.Align(-0.5), Colour: red},
				{Kind: figure.Scatter, Points: []figure.XY{{X: 18000, Y: 1}}, Glyph: "diamond", Radius: 4},
				{Kind: figure.NominalY, Labels: []string{"b", "a"}}, {Kind: figure.YMin, Value: -0.7}, {Kind: figure.YMax, Value: 1.7},
				{Kind: figure.XMax, Value: 25000},
			}},
			{Steps: []figure.Step{
				{Kind: figure.Title, Text: "lines"}, {Kind: figure.YLabel, Text: "loss"},
				{Kind: figure.Line, Points: []figure.XY{{X: 0, Y: 10}, {X: 1, Y: 8}, {X: 2, Y: 7}}, Colour: red, Width: 1.6, Dashes: []float64{6, 3}, LegendText: "run"},
				{Kind: figure.YErrors, Points: []figure.XY{{X: 1, Y: 8}}, Lo: []float64{0.5}, Hi: []float64{0.5}},
				{Kind: figure.Scatter, Points: []figure.XY{{X: 2, Y: 7}}, Glyph: "box"},
				{Kind: figure.XTicks, Const: []figure.Tick{{Value: 0, Label: "first"}, {Value: 2, Label: "last"}}},
				{Kind: figure.Legend, Size: 9, Top: true}, {Kind: figure.HideY},
			}},
		},
	}
}

// rival-plot draws the figure it reads exactly as the renderer does in process.
func TestDrawThroughTheProgram(t *testing.T) {
	bin := t.TempDir()
	h := &goprog.Helper{Program: figure.Program, BinDir: bin, Notice: io.Discard}
	dir := t.TempDir()
	png, svg := filepath.Join(dir, "f.png"), filepath.Join(dir, "f.svg")
	require.NoError(t, figure.Draw(context.Background(), h, sample(), png, svg))
	wantPNG, err := render.PNG(sample())
	require.NoError(t, err)
	wantSVG, err := render.SVG(sample())
	require.NoError(t, err)
	gotPNG, err := os.ReadFile(png)
	require.NoError(t, err)
	gotSVG, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(wantPNG, gotPNG), "PNG differs")
	assert.True(t, bytes.Equal(wantSVG, gotSVG), "SVG differs")
	for _, p := range []string{png, svg} {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	}

	// A step the drawer does not know is refused in its words, and nothing is written.
	bad := sample()
	bad.Panels[1].Steps = append(bad.Panels[1].Steps, figure.Step{Kind: "pie"})
	other := filepath.Join(dir, "bad.png")
	err = figure.Draw(context.Background(), h, bad, other, "")
	require.EqualError(t, err, `draw panel 2: step 9 (pie): unknown kind of step "pie"`)
	assert.NoFileExists(t, other)
}
