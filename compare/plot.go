package compare

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/hw"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure size: two columns of up to three panels; the height follows the
// rows drawn (figRowHeight each, plus the title).
const (
	figWidth     = 16 * vg.Inch
	figRowHeight = 5.6 * vg.Inch
	figTitle     = 1.2 * vg.Inch
	figDPI       = 96
	// maxLossCurves caps the loss panel; maxLossPoints downsamples each curve.
	maxLossCurves = 6
	maxLossPoints = 400
)

// Platform colours: AMD red-ish, NVIDIA green-ish, anything else grey; a
// platform's groups take successive shades.
var platformShades = map[string][]color.RGBA{
	"amd": {{200, 30, 45, 255}, {235, 110, 95, 255}, {140, 20, 30, 255}, {245, 160, 140, 255}},
	"nvd": {{90, 160, 20, 255}, {40, 110, 30, 255}, {150, 205, 80, 255}, {20, 80, 40, 255}},
}
var otherShades = []color.RGBA{{110, 110, 110, 255}, {160, 160, 160, 255}, {70, 70, 70, 255}}

// colours assigns each plotted group its colour.
func colours(groups []*Group) map[*Group]color.RGBA {
	out := map[*Group]color.RGBA{}
	next := map[string]int{}
	for _, g := range groups {
		shades, ok := platformShades[g.Key.Platform]
		if !ok {
			shades = otherShades
		}
		out[g] = shades[next[g.Key.Platform]%len(shades)]
		next[g.Key.Platform]++
	}
	return out
}

// plotted is the capped, ordered list of groups the figure shows.
func (r *Report) plotted() []*Group {
	if len(r.Groups) <= MaxGroupsPlotted {
		return r.Groups
	}
	return r.Groups[:MaxGroupsPlotted]
}

func (r *Report) barLabel(g *Group) string {
	l := g.Label
	if len(r.Models) > 1 {
		l += " · " + g.ModelLabel
	}
	l = clipWords(l, 34)
	l += fmt.Sprintf(" (n=%d)", g.TPS.N)
	if g.Marked {
		l += " †"
	}
	return plotText(l)
}

// plotText replaces spaces by no-break spaces: Liberation Serif kerns "A"
// against a plain space, which made "NVIDIA A100" read "NVIDIAA100".
func plotText(s string) string { return strings.ReplaceAll(s, " ", "\u00a0") }

func anyMarked(gs []*Group) bool {
	for _, g := range gs {
		if g.Marked {
			return true
		}
	}
	return false
}

func newPanel(title, xlabel string, groups []*Group, marked bool) *plot.Plot {
	p := plot.New()
	if marked {
		title += "\n† = " + NotIdentical
	}
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = xlabel
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	p.X.Min = 0
	p.X.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	return p
}

// lighten mixes an opaque colour with white (f = 0 keeps it, 1 is white).
func lighten(c color.RGBA, f float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*f) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 255}
}

// plainTicks are the default tick positions labelled without trailing zeros
// and with thousands separators ("20,000", "25").
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
		ticks[i].Label = num(v, prec)
	}
	return ticks
}

// nominal puts one labelled row per group, the first group on top.
func nominal(p *plot.Plot, labels []string) {
	rev := make([]string, len(labels))
	for i, l := range labels {
		rev[len(labels)-1-i] = l
	}
	p.NominalY(rev...)
	p.Y.Min, p.Y.Max = -0.7, float64(len(labels))-0.3
}

func row(i, n int) float64 { return float64(n - 1 - i) }

type xerr struct {
	plotter.XYs
	lo, hi []float64
}

func (e xerr) XError(i int) (float64, float64) { return e.lo[i], e.hi[i] }

func barWidth(n int) vg.Length {
	// rows share the panel height; keep bars thick but apart
	return vg.Length(math.Max(6, math.Min(22, 220/float64(max(n, 1)))))
}

func (r *Report) throughputPanel(gs []*Group, col map[*Group]color.RGBA) (*plot.Plot, error) {
	p := newPanel("Throughput per GPU (mean of runs; whiskers: 95% CI)", "tokens/s per GPU", gs, anyMarked(gs))
	var labels []string
	var whisk xerr
	var vals plotter.XYs
	var text []string
	xmax := 0.0
	for i, g := range gs {
		labels = append(labels, r.barLabel(g))
		bc, err := plotter.NewBarChart(plotter.Values{g.TPS.Mean}, barWidth(len(gs)))
		if err != nil {
			return nil, err
		}
		bc.Horizontal, bc.XMin, bc.Color, bc.LineStyle.Width = true, row(i, len(gs)), col[g], 0
		p.Add(bc)
		end := g.TPS.Mean
		if g.TPS.HasCI {
			whisk.XYs = append(whisk.XYs, plotter.XY{X: g.TPS.Mean, Y: row(i, len(gs))})
			// Throughput is never negative: the whisker stops at zero.
			whisk.lo, whisk.hi = append(whisk.lo, math.Min(g.TPS.Half, g.TPS.Mean)), append(whisk.hi, g.TPS.Half)
			end = g.TPS.CIHi
		}
		vals = append(vals, plotter.XY{X: end, Y: row(i, len(gs))})
		text = append(text, " "+num(g.TPS.Mean, 0))
		xmax = math.Max(xmax, end)
	}
	if len(whisk.XYs) > 0 {
		eb, err := plotter.NewXErrorBars(whisk)
		if err != nil {
			return nil, err
		}
		eb.LineStyle.Width = vg.Points(1.5)
		eb.CapWidth = vg.Points(8)
		p.Add(eb)
	}
	if err := addLabels(p, vals, text); err != nil {
		return nil, err
	}
	nominal(p, labels)
	p.X.Min = 0
	p.X.Max = xmax * 1.22
	return p, nil
}

func addLabels(p *plot.Plot, at plotter.XYs, text []string) error {
	if len(at) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: text})
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = vg.Points(9)
		l.TextStyle[i].YAlign = -0.5
	}
	p.Add(l)
	return nil
}

// noData writes why a panel is empty in its middle, so an empty panel reads as
// "not defined for these runs" rather than as a drawing fault.
func noData(p *plot.Plot, xmax float64, rows int, msg string) error {
	y := float64(rows-1) / 2
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: xmax / 2, Y: y}}, Labels: []string{msg}})
	if err != nil {
		return err
	}
	l.TextStyle[0].Font.Size = vg.Points(11)
	l.TextStyle[0].Color = color.Gray{Y: 0x55}
	l.TextStyle[0].XAlign, l.TextStyle[0].YAlign = draw.XCenter, draw.YCenter
	p.Add(l)
	return nil
}

// whyNone names, for the groups' GPUs, why a figure is missing ("cpu: no GPU").
func whyNone(gs []*Group, what string) string {
	var gpus []string
	for _, g := range gs {
		if !contains(gpus, g.Key.GPU) {
			gpus = append(gpus, g.Key.GPU)
		}
	}
	return what + " for " + strings.Join(gpus, ", ")
}

func (r *Report) stepPanel(gs []*Group, col map[*Group]color.RGBA) (*plot.Plot, error) {
	p := newPanel("Step time per measured step (box: quartiles; whiskers: 1.5 IQR)", "seconds per step", gs, anyMarked(gs))
	var labels []string
	xmax := 0.0
	for i, g := range gs {
		labels = append(labels, r.barLabel(g))
		samples := g.StepSamples
		if len(samples) == 0 && g.StepMedian > 0 {
			samples = []float64{g.StepP10, g.StepMedian, g.StepP90}
		}
		if len(samples) == 0 {
			continue
		}
		bp, err := plotter.NewBoxPlot(barWidth(len(gs)), row(i, len(gs)), plotter.Values(samples))
		if err != nil {
			return nil, err
		}
		bp.Horizontal = true
		c := col[g]
		bp.FillColor = lighten(c, 0.45)
		bp.GlyphStyle.Radius = vg.Points(1.5)
		p.Add(bp)
		xmax = math.Max(xmax, samples[len(samples)-1])
	}
	nominal(p, labels)
	if xmax > 0 {
		p.X.Max = xmax * 1.05
	}
	return p, nil
}

func (r *Report) memoryPanel(gs []*Group, col map[*Group]color.RGBA) (*plot.Plot, error) {
	p := newPanel("Peak memory per GPU (dark: reserved or device used; light: allocated; dashed: GPU memory)", "GiB", gs, anyMarked(gs))
	p.Title.Text = strings.Replace(p.Title.Text, " (dark", "\n(dark", 1)
	var labels []string
	w := barWidth(len(gs))
	xmax := 1.0
	drawn := false
	for i, g := range gs {
		labels = append(labels, r.barLabel(g))
		c := col[g]
		used := g.ReservedMiB
		if g.DeviceUsedMiB != nil && (used == nil || *g.DeviceUsedMiB > *used) {
			used = g.DeviceUsedMiB
		}
		for j, v := range []*float64{used, g.AllocatedMiB} {
			if v == nil {
				continue
			}
			bc, err := plotter.NewBarChart(plotter.Values{*v / 1024}, w/2)
			if err != nil {
				return nil, err
			}
			bc.Horizontal, bc.XMin, bc.LineStyle.Width = true, row(i, len(gs)), 0
			bc.Color = c
			bc.Offset = w / 4
			if j == 1 {
				bc.Color = lighten(c, 0.6)
				bc.Offset = -w / 4
			}
			p.Add(bc)
			drawn = true
			xmax = math.Max(xmax, *v/1024)
		}
		if g.GPUMemoryMiB != nil {
			cap := *g.GPUMemoryMiB / 1024
			l, err := plotter.NewLine(plotter.XYs{{X: cap, Y: row(i, len(gs)) - 0.42}, {X: cap, Y: row(i, len(gs)) + 0.42}})
			if err != nil {
				return nil, err
			}
			l.LineStyle.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			l.LineStyle.Width = vg.Points(1.2)
			p.Add(l)
			drawn = true
			xmax = math.Max(xmax, cap)
		}
	}
	nominal(p, labels)
	p.X.Max = xmax * 1.08
	if !drawn {
		msg := whyNone(gs, "no memory figures recorded")
		if allCPU(gs) {
			msg = "no GPU memory: CPU runs record none"
		}
		if err := noData(p, p.X.Max, len(gs), msg); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func allCPU(gs []*Group) bool {
	for _, g := range gs {
		if g.Key.Platform != hw.PlatformCPU {
			return false
		}
	}
	return len(gs) > 0
}

func (r *Report) mfuPanel(gs []*Group, col map[*Group]color.RGBA) (*plot.Plot, error) {
	p := newPanel("MFU: Rival's formula (bars), the framework's own figure (black diamond)", "% of dense peak at the run's precision", gs, anyMarked(gs))
	var labels []string
	var fw plotter.XYs
	var vals plotter.XYs
	var text []string
	xmax := 10.0
	for i, g := range gs {
		labels = append(labels, r.barLabel(g))
		if g.MFU != nil {
			bc, err := plotter.NewBarChart(plotter.Values{*g.MFU}, barWidth(len(gs)))
			if err != nil {
				return nil, err
			}
			bc.Horizontal, bc.XMin, bc.Color, bc.LineStyle.Width = true, row(i, len(gs)), col[g], 0
			p.Add(bc)
			xmax = math.Max(xmax, *g.MFU)
		}
		fwMFU := g.FrameworkMFU
		if fwMFU == nil && g.FrameworkTF != nil && g.Peak != nil {
			v := 100 * *g.FrameworkTF / *g.Peak
			fwMFU = &v
		}
		if fwMFU != nil {
			fw = append(fw, plotter.XY{X: *fwMFU, Y: row(i, len(gs))})
			xmax = math.Max(xmax, *fwMFU)
		}
		if g.MFU != nil {
			// the value sits right of the bar and of the diamond, never on them
			at := *g.MFU
			if fwMFU != nil {
				at = math.Max(at, *fwMFU+0.03*xmax)
			}
			vals = append(vals, plotter.XY{X: at, Y: row(i, len(gs))})
			text = append(text, " "+num(*g.MFU, 1)+"%")
		}
	}
	if len(fw) > 0 {
		s, err := plotter.NewScatter(fw)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Shape = diamond{}
		s.GlyphStyle.Radius = vg.Points(4)
		s.GlyphStyle.Color = color.Black
		p.Add(s)
	}
	if err := addLabels(p, vals, text); err != nil {
		return nil, err
	}
	nominal(p, labels)
	p.X.Max = xmax * 1.2
	if len(vals) == 0 && len(fw) == 0 {
		msg := whyNone(gs, "no MFU: no dense peak known")
		if allCPU(gs) {
			msg = "no MFU: CPU runs have no GPU peak to divide by"
		}
		if err := noData(p, p.X.Max, len(gs), msg); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// diamond is a filled rhombus glyph (the framework's own figure).
type diamond struct{}

func (diamond) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	c.FillPolygon(sty.Color, []vg.Point{{X: pt.X, Y: pt.Y + r}, {X: pt.X + r, Y: pt.Y}, {X: pt.X, Y: pt.Y - r}, {X: pt.X - r, Y: pt.Y}})
}

func (r *Report) costPanel(gs []*Group, col map[*Group]color.RGBA) (*plot.Plot, error) {
	var priced []*Group
	var missing []string
	for _, g := range gs {
		if g.CostPer1T != nil {
			priced = append(priced, g)
		} else if !contains(missing, g.Key.GPU) {
			missing = append(missing, g.Key.GPU)
		}
	}
	title := "Cost to train on 1T tokens (GPU-hour list prices, see report.md)"
	if len(missing) > 0 {
		title += "\n" + costWhyNone(gs)
	}
	p := newPanel(title, "thousand USD per 1T tokens", priced, anyMarked(priced))
	var labels []string
	var vals plotter.XYs
	var text []string
	xmax := 1.0
	for i, g := range priced {
		labels = append(labels, r.barLabel(g))
		v := *g.CostPer1T / 1000
		bc, err := plotter.NewBarChart(plotter.Values{v}, barWidth(len(priced)))
		if err != nil {
			return nil, err
		}
		bc.Horizontal, bc.XMin, bc.Color, bc.LineStyle.Width = true, row(i, len(priced)), col[g], 0
		p.Add(bc)
		vals = append(vals, plotter.XY{X: v, Y: row(i, len(priced))})
		text = append(text, " $"+num(v, 1)+"k")
		xmax = math.Max(xmax, v)
	}
	if err := addLabels(p, vals, text); err != nil {
		return nil, err
	}
	p.X.Max = xmax * 1.25
	if len(labels) > 0 {
		nominal(p, labels)
	} else {
		p.HideY()
		p.Y.Min, p.Y.Max = -0.5, 0.5
		if err := noData(p, p.X.Max, 1, costWhyNone(gs)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// lossTitle is the loss panel's title: every diverged pair by name, then
// how many pairs are in parity, so no verdict hides behind another.
func lossTitle(models ...*ModelSection) string {
	title := "Training loss, first run of each group"
	var diverged []string
	inParity, compared := 0, 0
	for _, m := range models {
		for _, lp := range m.ParityPairs() {
			if !lp.Available {
				continue
			}
			compared++
			if lp.Diverged {
				diverged = append(diverged, fmt.Sprintf("%s vs %s %.1f%%", lp.A.Label, lp.B.Label, 100*lp.TailGap))
			} else {
				inParity++
			}
		}
	}
	switch {
	case compared == 0:
		return title + "\nno pair on the same data and seed with an equal configuration (apart from precision): curves not compared"
	case len(diverged) > 0:
		title += "\nDIVERGED (last-10% mean gap): " + strings.Join(diverged, "; ")
	}
	if inParity > 0 {
		title += fmt.Sprintf("\n%d of %s in parity (see report.md)", inParity, english.Plural(compared, "pair"))
	}
	return title
}

func (r *Report) lossPanel(gs []*Group, col map[*Group]color.RGBA) (*plot.Plot, error) {
	title := lossTitle(r.Models...)
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "training step"
	p.Y.Label.Text = "loss"
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	p.Add(plotter.NewGrid())
	dashes := [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
	drawn := 0
	for i, g := range gs {
		if drawn == maxLossCurves {
			break
		}
		res := firstRun(g)
		var pts plotter.XYs
		for j, l := range res.LossValues {
			if l != nil && finite(*l) && j < len(res.StepNumbers) {
				pts = append(pts, plotter.XY{X: float64(res.StepNumbers[j]), Y: *l})
			}
		}
		if len(pts) == 0 {
			continue
		}
		if step := (len(pts) + maxLossPoints - 1) / maxLossPoints; step > 1 {
			var thin plotter.XYs
			for j := 0; j < len(pts); j += step {
				thin = append(thin, pts[j])
			}
			pts = thin
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.LineStyle.Color = col[g]
		l.LineStyle.Width = vg.Points(1.6)
		l.LineStyle.Dashes = dashes[i%len(dashes)]
		p.Add(l)
		p.Legend.Add(clipWords(r.barLabel(g), 44), l)
		drawn++
	}
	if len(gs) > maxLossCurves {
		p.Title.Text += fmt.Sprintf("\n(%d of %d groups shown)", maxLossCurves, len(gs))
	}
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Top = true
	return p, nil
}

// render draws the whole figure on a canvas.
func (r *Report) render(dc draw.Canvas) error {
	gs := r.plotted()
	col := colours(gs)
	head := fmt.Sprintf("Rival comparison: %s, %s, %s", english.Plural(len(r.Inputs), "result"), english.Plural(len(r.Groups), "group"), english.Plural(len(r.Models), "model"))
	sub := "Colours: AMD red, NVIDIA green, other grey. "
	if len(r.Groups) > len(gs) {
		sub += fmt.Sprintf("showing the first %d of %d groups (ordered by model, then throughput); every group is in report.md. ", len(gs), len(r.Groups))
	}
	if len(r.Errors) > 0 {
		sub += fmt.Sprintf("%s with errors left out (named in report.md). ", english.Plural(len(r.Errors), "result"))
	}
	var single []string
	for _, m := range r.Models {
		if m.NoComparison != "" {
			single = append(single, m.Label)
		}
	}
	if len(single) > 0 {
		sub += "No cross-platform comparison for " + strings.Join(single, ", ") + "."
	}
	builders, omitted := r.panels(gs)
	titleH := vg.Points(54)
	ts := draw.TextStyle{Color: color.Black, Font: plot.DefaultFont, XAlign: draw.XCenter, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	ts.Font.Size = vg.Points(18)
	dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(8)}, head)
	ts.Font.Size = vg.Points(11)
	dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(34)}, clipWords(sub, 180))
	if len(omitted) > 0 {
		dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(52)}, clipWords("Not drawn: "+strings.Join(omitted, "; ")+".", 200))
		titleH = vg.Points(72)
	}
	body := draw.Crop(dc, 0, 0, 0, -titleH)

	var panels []*plot.Plot
	for _, b := range builders {
		p, err := b(gs, col)
		if err != nil {
			return fmt.Errorf("draw panel: %w", err)
		}
		panels = append(panels, p)
	}
	rows := (len(panels) + 1) / 2
	tiles := draw.Tiles{Rows: rows, Cols: 2, PadX: vg.Points(28), PadY: vg.Points(26), PadTop: vg.Points(6), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(18)}
	for i, p := range panels {
		p.Draw(tiles.At(body, i%2, i/2))
	}
	return nil
}

type panelBuilder = func([]*Group, map[*Group]color.RGBA) (*plot.Plot, error)

// panels picks the panels that have data for gs, in the figure's order,
// and says why each other one is not drawn (an empty panel tells a reader
// nothing the report does not say better).
func (r *Report) panels(gs []*Group) (drawn []panelBuilder, omitted []string) {
	var step, mfu, mem, loss, cost bool
	for _, g := range gs {
		step = step || len(g.StepSamples) > 0 || g.StepMedian > 0
		mfu = mfu || g.MFU != nil || g.FrameworkMFU != nil || g.FrameworkTF != nil && g.Peak != nil
		mem = mem || g.AllocatedMiB != nil || g.ReservedMiB != nil || g.DeviceUsedMiB != nil
		cost = cost || g.CostPer1T != nil
		for _, l := range firstRun(g).LossValues {
			loss = loss || l != nil && finite(*l)
		}
	}
	drawn = append(drawn, r.throughputPanel)
	add := func(ok bool, b panelBuilder, why string) {
		if ok {
			drawn = append(drawn, b)
		} else {
			omitted = append(omitted, why)
		}
	}
	add(step, r.stepPanel, "step times (none recorded)")
	mfuWhy := whyNone(gs, "MFU (no dense peak known") + ")"
	switch {
	case allCPU(gs):
		mfuWhy = "MFU (no MFU: CPU runs have no GPU peak to divide by)"
	case allProxy(gs):
		mfuWhy = "MFU (proxy models: a few layers do not load the GPU as the real model does)"
	}
	add(mfu, r.mfuPanel, mfuWhy)
	memWhy := whyNone(gs, "memory (no memory figures recorded") + ")"
	if allCPU(gs) {
		memWhy = "memory (no GPU memory: CPU runs record none)"
	}
	add(mem, r.memoryPanel, memWhy)
	add(loss, r.lossPanel, "loss (no loss recorded)")
	add(cost, r.costPanel, "cost ("+costWhyNone(gs)+")")
	return drawn, omitted
}

func allProxy(gs []*Group) bool {
	for _, g := range gs {
		if !g.Proxy {
			return false
		}
	}
	return len(gs) > 0
}

// costWhyNone says why groups have no cost: proxy models and CPU runs get
// none; other GPUs lack a price (with the setting that gives one).
func costWhyNone(gs []*Group) string {
	var why, missing []string
	for _, g := range gs {
		switch {
		case g.CostPer1T != nil:
		case g.Proxy || g.CPU:
			if !contains(why, "no cost for proxy models and CPU runs") {
				why = append(why, "no cost for proxy models and CPU runs")
			}
		case !contains(missing, g.Key.GPU):
			missing = append(missing, g.Key.GPU)
		}
	}
	if len(missing) > 0 {
		var keys []string
		for _, m := range missing {
			keys = append(keys, PriceKey(m))
		}
		why = append(why, "no GPU-hour price for "+strings.Join(missing, ", ")+": "+PriceAdvice(keys...))
	}
	return strings.Join(why, "; ")
}

// WritePlots renders the figure to a PNG and an SVG. Both are drawn in memory
// first and then written atomically (temporary file, fsync, rename), so a
// failure leaves no half-written figure. An empty path skips that format.
func (r *Report) WritePlots(pngPath, svgPath string) error {
	if len(r.Groups) == 0 {
		return fmt.Errorf("write plots: no usable run to plot (every result had an error; see the report)")
	}
	var pngBuf, svgBuf bytes.Buffer
	drawn, _ := r.panels(r.plotted())
	figHeight := figTitle + vg.Length((len(drawn)+1)/2)*figRowHeight
	if pngPath != "" {
		c := vgimg.NewWith(vgimg.UseWH(figWidth, figHeight), vgimg.UseDPI(figDPI))
		dc := draw.New(c)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		if err := r.render(dc); err != nil {
			return err
		}
		if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&pngBuf); err != nil {
			return fmt.Errorf("encode PNG: %w", err)
		}
	}
	if svgPath != "" {
		c := vgsvg.New(figWidth, figHeight)
		dc := draw.New(c)
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		if err := r.render(dc); err != nil {
			return err
		}
		if _, err := c.WriteTo(&svgBuf); err != nil {
			return fmt.Errorf("encode SVG: %w", err)
		}
	}
	if pngPath != "" {
		if err := writeAtomic(pngPath, pngBuf.Bytes()); err != nil {
			return err
		}
	}
	if svgPath != "" {
		if err := writeAtomic(svgPath, svgBuf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// writeAtomic writes data next to path, syncs it and renames it into place,
// readable by all (0644) like report.md.
func writeAtomic(path string, data []byte) error {
	if err := cache.WriteFileAtomic(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
