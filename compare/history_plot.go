package compare

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// History figure: one panel per workload, at most maxHistoryPanels.
const (
	historyWidth       = 12 * vg.Inch
	historyPanelHeight = 4 * vg.Inch
	maxHistoryPanels   = 8
)

type yerr struct {
	plotter.XYs
	lo, hi []float64
}

func (e yerr) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

// historyPanel draws a workload's batches in date order: every run as a
// dot, each batch's mean with its 95 % interval, the x axis labelled with
// the batch's date and stack; regressions are named in the title.
func historyPanel(s *HistorySeries) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = plotText(clipWords(s.Label, 110))
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.Text = "tokens/s per GPU"
	p.X.Label.Text = "batch (date · host · stack), in date order"
	var means, runs plotter.XYs
	var whisk yerr
	var labels []string
	ymin, ymax := math.Inf(1), math.Inf(-1)
	for i, b := range s.Batches {
		x := float64(i)
		means = append(means, plotter.XY{X: x, Y: b.TPS.Mean})
		lo, hi := b.TPS.Mean, b.TPS.Mean
		if b.TPS.HasCI {
			whisk.XYs = append(whisk.XYs, plotter.XY{X: x, Y: b.TPS.Mean})
			whisk.lo, whisk.hi = append(whisk.lo, math.Min(b.TPS.Half, b.TPS.Mean)), append(whisk.hi, b.TPS.Half)
			lo, hi = b.TPS.CILo, b.TPS.CIHi
		}
		for j, run := range b.Runs {
			// Runs of a batch spread a little sideways so equal values stay visible.
			off := 0.12 * (float64(j) - float64(len(b.Runs)-1)/2) / math.Max(1, float64(len(b.Runs)-1))
			runs = append(runs, plotter.XY{X: x + off, Y: run.TPSPerGPU})
			lo, hi = math.Min(lo, run.TPSPerGPU), math.Max(hi, run.TPSPerGPU)
		}
		ymin, ymax = math.Min(ymin, lo), math.Max(ymax, hi)
		labels = append(labels, fmt.Sprintf("%d. %s · %s\n%s", i+1, b.Start.UTC().Format("2006-01-02"), truncate(b.Host, 18), clipWords(b.Stack.Short(), 46)))
	}
	line, err := plotter.NewLine(means)
	if err != nil {
		return nil, err
	}
	line.Color = color.RGBA{90, 90, 90, 255}
	line.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(line)
	dots, err := plotter.NewScatter(runs)
	if err != nil {
		return nil, err
	}
	dots.GlyphStyle.Color = color.RGBA{150, 150, 150, 255}
	dots.GlyphStyle.Radius = vg.Points(2.5)
	p.Add(dots)
	if len(whisk.XYs) > 0 {
		eb, err := plotter.NewYErrorBars(whisk)
		if err != nil {
			return nil, err
		}
		eb.LineStyle.Width = vg.Points(1.5)
		eb.CapWidth = vg.Points(10)
		p.Add(eb)
	}
	mk, err := plotter.NewScatter(means)
	if err != nil {
		return nil, err
	}
	mk.GlyphStyle.Color = color.RGBA{40, 40, 40, 255}
	mk.GlyphStyle.Radius = vg.Points(4)
	mk.GlyphStyle.Shape = draw.BoxGlyph{}
	p.Add(mk)
	// Each step's verdict above the later batch.
	var at plotter.XYs
	var text []string
	for _, st := range s.Steps {
		i := s.index(st.To) - 1
		at = append(at, plotter.XY{X: float64(i), Y: ymax})
		v := st.Verdict
		if st.Kind != StepStack {
			v = st.Kind
		}
		text = append(text, fmt.Sprintf("%d→%d %s %s×", s.index(st.From), i+1, v, num(st.Ratio.Value, 3)))
	}
	if len(at) > 0 {
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: text})
		if err != nil {
			return nil, err
		}
		for i := range l.TextStyle {
			l.TextStyle[i].Font.Size = vg.Points(9)
			l.TextStyle[i].XAlign = draw.XCenter
			l.TextStyle[i].YAlign = 0.3
		}
		p.Add(l)
	}
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(i), Label: l}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	p.X.Min, p.X.Max = -0.5, float64(len(s.Batches))-0.5
	pad := math.Max((ymax-ymin)*0.25, ymax*0.02)
	p.Y.Min, p.Y.Max = math.Max(0, ymin-pad), ymax+pad
	p.Add(plotter.NewGrid())
	return p, nil
}

func renderPanels(dc draw.Canvas, panels []*plot.Plot) {
	n := len(panels)
	tiles := draw.Tiles{Rows: n, Cols: 1, PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(20), PadY: vg.Points(24)}
	for i, p := range panels {
		p.Draw(tiles.At(dc, 0, i))
	}
}

// emptyHistoryPanel says, in the middle of the panel, why there is no trend.
func emptyHistoryPanel() (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "History"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.HideAxes()
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0.5, Y: 0.5}},
		Labels: []string{"no workload was measured on more than one software stack, host or date: nothing to compare over time"}})
	if err != nil {
		return nil, err
	}
	l.TextStyle[0].XAlign = draw.XCenter
	p.Add(l)
	return p, nil
}

// WriteHistoryPlots renders the trend figure (one panel per workload, at
// most maxHistoryPanels) to a PNG and an SVG, each drawn in memory and
// written atomically. Without a history the figure's one panel says so.
func (r *Report) WriteHistoryPlots(pngPath, svgPath string) error {
	var panels []*plot.Plot
	var series []*HistorySeries
	if r.History != nil {
		series = r.History.Series
	} else {
		p, err := emptyHistoryPanel()
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	for i, s := range series {
		if i == maxHistoryPanels {
			break
		}
		p, err := historyPanel(s)
		if err != nil {
			return fmt.Errorf("history figure: %w", err)
		}
		panels = append(panels, p)
	}
	height := historyPanelHeight * vg.Length(len(panels))
	var pngBuf, svgBuf bytes.Buffer
	c := vgimg.NewWith(vgimg.UseWH(historyWidth, height), vgimg.UseDPI(figDPI))
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	renderPanels(dc, panels)
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&pngBuf); err != nil {
		return fmt.Errorf("encode PNG: %w", err)
	}
	sc := vgsvg.New(historyWidth, height)
	sdc := draw.New(sc)
	sdc.SetColor(color.White)
	sdc.Fill(sdc.Rectangle.Path())
	renderPanels(sdc, panels)
	if _, err := sc.WriteTo(&svgBuf); err != nil {
		return fmt.Errorf("encode SVG: %w", err)
	}
	if err := writeAtomic(pngPath, pngBuf.Bytes()); err != nil {
		return err
	}
	return writeAtomic(svgPath, svgBuf.Bytes())
}
