// Package render draws a figure.Figure with gonum/plot into a PNG and an SVG. Only the rival-plot
// program (and tests) import it, so the plotting library, its fonts and its image codecs are
// compiled into that program and not into the targets.
package render

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

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare/figure"
)

// Write draws f into a PNG at pngPath and an SVG at svgPath; an empty path skips that format.
// Both are drawn in memory first and then written atomically (a temporary file, fsync, rename),
// readable by all like report.md, so a failure leaves no half-written figure.
func Write(f *figure.Figure, pngPath, svgPath string) error {
	var pngData, svgData []byte
	var err error
	if pngPath != "" {
		if pngData, err = PNG(f); err != nil {
			return err
		}
	}
	if svgPath != "" {
		if svgData, err = SVG(f); err != nil {
			return err
		}
	}
	for _, out := range []struct {
		path string
		data []byte
	}{{pngPath, pngData}, {svgPath, svgData}} {
		if out.path == "" {
			continue
		}
		if err := cache.WriteFileAtomic(out.path, out.data, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", out.path, err)
		}
	}
	return nil
}

// PNG draws f at its DPI.
func PNG(f *figure.Figure) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(vg.Length(f.Width), vg.Length(f.Height)), vgimg.UseDPI(int(f.DPI)))
	if err := drawOn(draw.New(c), f); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// SVG draws f as vector graphics.
func SVG(f *figure.Figure) ([]byte, error) {
	c := vgsvg.New(vg.Length(f.Width), vg.Length(f.Height))
	if err := drawOn(draw.New(c), f); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode SVG: %w", err)
	}
	return buf.Bytes(), nil
}

// drawOn paints the canvas white, writes the title lines and tiles the panels below them.
func drawOn(dc draw.Canvas, f *figure.Figure) error {
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	ts := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	for _, t := range f.Texts {
		ts.Font.Size = vg.Points(t.Size)
		dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(t.FromTop)}, t.Text)
	}
	body := dc
	if f.CropTop != 0 {
		body = draw.Crop(dc, 0, 0, 0, -vg.Points(f.CropTop))
	}
	var panels []*plot.Plot
	for i, p := range f.Panels {
		pl, err := Panel(p)
		if err != nil {
			return fmt.Errorf("draw panel %d: %w", i+1, err)
		}
		panels = append(panels, pl)
	}
	t := f.Tiles
	cols := max(t.Cols, 1)
	tiles := draw.Tiles{Rows: t.Rows, Cols: t.Cols, PadX: vg.Points(t.PadX), PadY: vg.Points(t.PadY),
		PadTop: vg.Points(t.PadTop), PadBottom: vg.Points(t.PadBottom), PadLeft: vg.Points(t.PadLeft), PadRight: vg.Points(t.PadRight)}
	for i, p := range panels {
		p.Draw(tiles.At(body, i%cols, i/cols))
	}
	return nil
}

func rgba(c *figure.RGBA) color.RGBA { return color.RGBA{c.R, c.G, c.B, c.A} }

func xys(ps []figure.XY) plotter.XYs {
	out := make(plotter.XYs, len(ps))
	for i, p := range ps {
		out[i] = plotter.XY{X: p.X, Y: p.Y}
	}
	return out
}

func lengths(vs []float64) []vg.Length {
	if vs == nil {
		return nil
	}
	out := make([]vg.Length, len(vs))
	for i, v := range vs {
		out[i] = vg.Points(v)
	}
	return out
}

type xerr struct {
	plotter.XYs
	lo, hi []float64
}

func (e xerr) XError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

type yerr struct {
	plotter.XYs
	lo, hi []float64
}

func (e yerr) YError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

// Panel applies a panel's steps, in order, to a new plot.
func Panel(p figure.Panel) (*plot.Plot, error) {
	pl := plot.New()
	for i, s := range p.Steps {
		if err := apply(pl, s); err != nil {
			return nil, fmt.Errorf("step %d (%s): %w", i+1, s.Kind, err)
		}
	}
	return pl, nil
}

func apply(p *plot.Plot, s figure.Step) error {
	switch s.Kind {
	case figure.Title:
		p.Title.Text = s.Text
		if s.Size > 0 {
			p.Title.TextStyle.Font.Size = vg.Points(s.Size)
		}
	case figure.XLabel, figure.YLabel:
		ax := &p.X
		if s.Kind == figure.YLabel {
			ax = &p.Y
		}
		ax.Label.Text = s.Text
		if s.Size > 0 {
			ax.Label.TextStyle.Font.Size = vg.Points(s.Size)
		}
	case figure.XTicks, figure.YTicks:
		ax := &p.X
		if s.Kind == figure.YTicks {
			ax = &p.Y
		}
		if s.Size > 0 {
			ax.Tick.Label.Font.Size = vg.Points(s.Size)
		}
		switch {
		case s.Ticks == "plain":
			ax.Tick.Marker = plainTicks{}
		case s.Ticks != "":
			return fmt.Errorf("unknown ticks %q", s.Ticks)
		case s.Const != nil:
			ticks := make([]plot.Tick, len(s.Const))
			for i, t := range s.Const {
				ticks[i] = plot.Tick{Value: t.Value, Label: t.Label}
			}
			ax.Tick.Marker = plot.ConstantTicks(ticks)
		}
	case figure.Grid:
		p.Add(plotter.NewGrid())
	case figure.XMin:
		p.X.Min = s.Value
	case figure.XMax:
		p.X.Max = s.Value
	case figure.YMin:
		p.Y.Min = s.Value
	case figure.YMax:
		p.Y.Max = s.Value
	case figure.NominalY:
		p.NominalY(s.Labels...)
	case figure.HideY:
		p.HideY()
	case figure.HideAxes:
		p.HideAxes()
	case figure.Legend:
		if s.Size > 0 {
			p.Legend.TextStyle.Font.Size = vg.Points(s.Size)
		}
		p.Legend.Top = s.Top
	case figure.Bar:
		bc, err := plotter.NewBarChart(plotter.Values{s.Value}, vg.Points(s.Width))
		if err != nil {
			return err
		}
		bc.Horizontal, bc.XMin, bc.LineStyle.Width = true, s.At, 0
		if s.Colour != nil {
			bc.Color = rgba(s.Colour)
		}
		bc.Offset = vg.Points(s.Offset)
		p.Add(bc)
	case figure.XErrors, figure.YErrors:
		if len(s.Lo) != len(s.Points) || len(s.Hi) != len(s.Points) {
			return fmt.Errorf("%d points, %d low and %d high errors", len(s.Points), len(s.Lo), len(s.Hi))
		}
		var ls *draw.LineStyle
		var cap *vg.Length
		if s.Kind == figure.XErrors {
			eb, err := plotter.NewXErrorBars(xerr{xys(s.Points), s.Lo, s.Hi})
			if err != nil {
				return err
			}
			p.Add(eb)
			ls, cap = &eb.LineStyle, &eb.CapWidth
		} else {
			eb, err := plotter.NewYErrorBars(yerr{xys(s.Points), s.Lo, s.Hi})
			if err != nil {
				return err
			}
			p.Add(eb)
			ls, cap = &eb.LineStyle, &eb.CapWidth
		}
		if s.Width > 0 {
			ls.Width = vg.Points(s.Width)
		}
		if s.Cap > 0 {
			*cap = vg.Points(s.Cap)
		}
	case figure.Labels:
		l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys(s.Points), Labels: s.Texts})
		if err != nil {
			return err
		}
		for i := range l.TextStyle {
			ts := &l.TextStyle[i]
			if s.Size > 0 {
				ts.Font.Size = vg.Points(s.Size)
			}
			if s.Colour != nil {
				ts.Color = rgba(s.Colour)
			}
			if s.XAlign != nil {
				ts.XAlign = draw.XAlignment(*s.XAlign)
			}
			if s.YAlign != nil {
				ts.YAlign = draw.YAlignment(*s.YAlign)
			}
		}
		p.Add(l)
	case figure.Box:
		bp, err := plotter.NewBoxPlot(vg.Points(s.Width), s.At, plotter.Values(s.Samples))
		if err != nil {
			return err
		}
		bp.Horizontal = true
		if s.Fill != nil {
			bp.FillColor = rgba(s.Fill)
		}
		if s.Radius > 0 {
			bp.GlyphStyle.Radius = vg.Points(s.Radius)
		}
		p.Add(bp)
	case figure.Line:
		l, err := plotter.NewLine(xys(s.Points))
		if err != nil {
			return err
		}
		if s.Colour != nil {
			l.LineStyle.Color = rgba(s.Colour)
		}
		if s.Width > 0 {
			l.LineStyle.Width = vg.Points(s.Width)
		}
		l.LineStyle.Dashes = lengths(s.Dashes)
		p.Add(l)
		if s.LegendText != "" {
			p.Legend.Add(s.LegendText, l)
		}
	case figure.Scatter:
		sc, err := plotter.NewScatter(xys(s.Points))
		if err != nil {
			return err
		}
		if s.Colour != nil {
			sc.GlyphStyle.Color = rgba(s.Colour)
		}
		if s.Radius > 0 {
			sc.GlyphStyle.Radius = vg.Points(s.Radius)
		}
		switch s.Glyph {
		case "":
		case "box":
			sc.GlyphStyle.Shape = draw.BoxGlyph{}
		case "diamond":
			sc.GlyphStyle.Shape = diamond{}
		default:
			return fmt.Errorf("unknown glyph %q", s.Glyph)
		}
		p.Add(sc)
	default:
		return fmt.Errorf("unknown kind of step %q", s.Kind)
	}
	return nil
}

// diamond is a filled rhombus glyph (the framework's own MFU figure).
type diamond struct{}

func (diamond) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	c.FillPolygon(sty.Color, []vg.Point{{X: pt.X, Y: pt.Y + r}, {X: pt.X + r, Y: pt.Y}, {X: pt.X, Y: pt.Y - r}, {X: pt.X - r, Y: pt.Y}})
}

// plainTicks are the default tick positions labelled without trailing zeros and with thousands
// separators ("20,000", "25").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label == "" {
			continue
		}
		v := ticks[i].Value
		prec := 0
		for prec < 4 && math.Abs(v*math.Pow(10, float64(prec))-math.Round(v*math.Pow(10, float64(prec)))) > 1e-9 {
			prec++
		}
		ticks[i].Label = figure.Num(v, prec)
	}
	return ticks
}
