package compare

import (
	"fmt"
	"math"

	"github.com/rivalbench/rival/compare/figure"
)

// History figure: one panel per workload, at most maxHistoryPanels.
const (
	historyWidth       = 12 * inch
	historyPanelHeight = 4 * inch
	maxHistoryPanels   = 8
)

// historyPanel draws a workload's batches in date order: every run as a
// dot, each batch's mean with its 95 % interval, the x axis labelled with
// the batch's date and stack; regressions are named in the title.
func historyPanel(s *HistorySeries) figure.Panel {
	p := &panel{}
	p.add(figure.Step{Kind: figure.Title, Text: plotText(clipWords(s.Label, 110)), Size: 11},
		figure.Step{Kind: figure.YLabel, Text: "tokens/s per GPU"},
		figure.Step{Kind: figure.XLabel, Text: "batch (date · host · stack), in date order"})
	var means, runs []figure.XY
	whisk := figure.Step{Kind: figure.YErrors, Width: 1.5, Cap: 10}
	var labels []string
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for i, b := range s.Batches {
		x := float64(i)
		means = append(means, figure.XY{X: x, Y: b.TPS.Mean})
		lo, hi := b.TPS.Mean, b.TPS.Mean
		if b.TPS.HasCI {
			whisk.Points = append(whisk.Points, figure.XY{X: x, Y: b.TPS.Mean})
			whisk.Lo, whisk.Hi = append(whisk.Lo, math.Min(b.TPS.Half, b.TPS.Mean)), append(whisk.Hi, b.TPS.Half)
			lo, hi = b.TPS.CILo, b.TPS.CIHi
		}
		for j, run := range b.Runs {
			// Runs of a batch spread a little sideways so equal values stay visible.
			off := 0.12 * (float64(j) - float64(len(b.Runs)-1)/2) / math.Max(1, float64(len(b.Runs)-1))
			runs = append(runs, figure.XY{X: x + off, Y: run.TPSPerGPU})
			lo, hi = math.Min(lo, run.TPSPerGPU), math.Max(hi, run.TPSPerGPU)
		}
		ymin, ymax = math.Min(ymin, lo), math.Max(ymax, hi)
		labels = append(labels, fmt.Sprintf("%d. %s · %s\n%s", i+1, b.Start.UTC().Format("2006-01-02"), truncate(b.Host, 18), clipWords(b.Stack.Short(), 46)))
	}
	p.add(figure.Step{Kind: figure.Line, Points: means, Colour: &figure.RGBA{R: 90, G: 90, B: 90, A: 255}, Dashes: []float64{3, 3}},
		figure.Step{Kind: figure.Scatter, Points: runs, Colour: &figure.RGBA{R: 150, G: 150, B: 150, A: 255}, Radius: 2.5})
	if len(whisk.Points) > 0 {
		p.add(whisk)
	}
	p.add(figure.Step{Kind: figure.Scatter, Points: means, Colour: &figure.RGBA{R: 40, G: 40, B: 40, A: 255}, Radius: 4, Glyph: "box"})
	// Each step's verdict above the later batch.
	var at []figure.XY
	var text []string
	for _, st := range s.Steps {
		i := s.index(st.To) - 1
		at = append(at, figure.XY{X: float64(i), Y: ymax})
		v := st.Verdict
		if st.Kind != StepStack {
			v = st.Kind
		}
		text = append(text, fmt.Sprintf("%d→%d %s %s×", s.index(st.From), i+1, v, num(st.Ratio.Value, 3)))
	}
	if len(at) > 0 {
		p.add(figure.Step{Kind: figure.Labels, Points: at, Texts: text, Size: 9, XAlign: figure.Align(-0.5), YAlign: figure.Align(0.3)})
	}
	ticks := make([]figure.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = figure.Tick{Value: float64(i), Label: l}
	}
	pad := math.Max((ymax-ymin)*0.25, ymax*0.02)
	p.add(figure.Step{Kind: figure.XTicks, Const: ticks, Size: 8},
		figure.Step{Kind: figure.XMin, Value: -0.5}, figure.Step{Kind: figure.XMax, Value: float64(len(s.Batches)) - 0.5},
		figure.Step{Kind: figure.YMin, Value: math.Max(0, ymin-pad)}, figure.Step{Kind: figure.YMax, Value: ymax + pad},
		figure.Step{Kind: figure.Grid})
	return figure.Panel{Steps: p.steps}
}

// emptyHistoryPanel says, in the middle of the panel, why there is no trend.
func emptyHistoryPanel() figure.Panel {
	p := &panel{}
	p.add(figure.Step{Kind: figure.Title, Text: "History"},
		figure.Step{Kind: figure.XMin, Value: 0}, figure.Step{Kind: figure.XMax, Value: 1},
		figure.Step{Kind: figure.YMin, Value: 0}, figure.Step{Kind: figure.YMax, Value: 1},
		figure.Step{Kind: figure.HideAxes},
		figure.Step{Kind: figure.Labels, Points: []figure.XY{{X: 0.5, Y: 0.5}},
			Texts: []string{"no workload was measured on more than one software stack, host or date: nothing to compare over time"}, XAlign: figure.Align(-0.5)})
	return figure.Panel{Steps: p.steps}
}

// HistoryFigure is the trend figure: one panel per workload, at most maxHistoryPanels; without
// a history its one panel says so.
func (r *Report) HistoryFigure() (*figure.Figure, error) {
	var panels []figure.Panel
	var series []*HistorySeries
	if r.History != nil {
		series = r.History.Series
	} else {
		panels = append(panels, emptyHistoryPanel())
	}
	for i, s := range series {
		if i == maxHistoryPanels {
			break
		}
		panels = append(panels, historyPanel(s))
	}
	f := &figure.Figure{
		Width: historyWidth, Height: historyPanelHeight * float64(len(panels)), DPI: figDPI,
		Tiles:  figure.Tiles{Rows: len(panels), Cols: 1, PadTop: 10, PadBottom: 10, PadLeft: 10, PadRight: 20, PadY: 24},
		Panels: panels,
	}
	return f, f.Check()
}
