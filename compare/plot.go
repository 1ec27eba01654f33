package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/rivalbench/rival/compare/figure"
	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/hw"
)

// Figure size: two columns of up to three panels; the height follows the
// rows drawn (figRowHeight each, plus the title).
const (
	inch         = 72 // points
	figWidth     = 16 * inch
	figRowHeight = 5.6 * inch
	figTitle     = 1.2 * inch
	figDPI       = 96
	// maxLossCurves caps the loss panel; maxLossPoints downsamples each curve.
	maxLossCurves = 6
	maxLossPoints = 400
)

// Platform colours: AMD red-ish, NVIDIA green-ish, anything else grey; a
// platform's groups take successive shades.
var platformShades = map[string][]figure.RGBA{
	"amd": {rgb(200, 30, 45), rgb(235, 110, 95), rgb(140, 20, 30), rgb(245, 160, 140)},
	"nvd": {rgb(90, 160, 20), rgb(40, 110, 30), rgb(150, 205, 80), rgb(20, 80, 40)},
}
var otherShades = []figure.RGBA{rgb(110, 110, 110), rgb(160, 160, 160), rgb(70, 70, 70)}

// rgb is an opaque colour.
func rgb(r, g, b uint8) figure.RGBA { return figure.RGBA{R: r, G: g, B: b, A: 255} }

// colours assigns each plotted group its colour.
func colours(groups []*Group) map[*Group]figure.RGBA {
	out := map[*Group]figure.RGBA{}
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

// panel is a figure panel being built, step by step.
type panel struct{ steps []figure.Step }

func (p *panel) add(s ...figure.Step) { p.steps = append(p.steps, s...) }

func newPanel(title, xlabel string, marked bool) *panel {
	if marked {
		title += "\n† = " + NotIdentical
	}
	p := &panel{}
	p.add(figure.Step{Kind: figure.Title, Text: title, Size: 13},
		figure.Step{Kind: figure.XLabel, Text: xlabel, Size: 11},
		figure.Step{Kind: figure.XTicks, Size: 10, Ticks: "plain"},
		figure.Step{Kind: figure.YTicks, Size: 10},
		figure.Step{Kind: figure.XMin, Value: 0},
		figure.Step{Kind: figure.Grid})
	return p
}

// lighten mixes an opaque colour with white (f = 0 keeps it, 1 is white).
func lighten(c figure.RGBA, f float64) *figure.RGBA {
	mix := func(v uint8) uint8 { return uint8(float64(v) + (255-float64(v))*f) }
	return &figure.RGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 255}
}

// nominal puts one labelled row per group, the first group on top.
func nominal(p *panel, labels []string) {
	rev := make([]string, len(labels))
	for i, l := range labels {
		rev[len(labels)-1-i] = l
	}
	p.add(figure.Step{Kind: figure.NominalY, Labels: rev},
		figure.Step{Kind: figure.YMin, Value: -0.7}, figure.Step{Kind: figure.YMax, Value: float64(len(labels)) - 0.3})
}

func row(i, n int) float64 { return float64(n - 1 - i) }

// barWidth is a bar's thickness in points: rows share the panel height; keep bars thick but apart.
func barWidth(n int) float64 {
	return math.Max(6, math.Min(22, 220/float64(max(n, 1))))
}

// bar is a horizontal bar of length v in row at.
func bar(v, at, width float64, c figure.RGBA) figure.Step {
	return figure.Step{Kind: figure.Bar, Value: v, At: at, Width: width, Colour: &c}
}

func (r *Report) throughputPanel(gs []*Group, col map[*Group]figure.RGBA) *panel {
	p := newPanel("Throughput per GPU (mean of runs; whiskers: 95% CI)", "tokens/s per GPU", anyMarked(gs))
	var labels []string
	whisk := figure.Step{Kind: figure.XErrors, Width: 1.5, Cap: 8}
	var vals []figure.XY
	var text []string
	xmax := 0.0
	for i, g := range gs {
		labels = append(labels, r.barLabel(g))
		p.add(bar(g.TPS.Mean, row(i, len(gs)), barWidth(len(gs)), col[g]))
		end := g.TPS.Mean
		if g.TPS.HasCI {
			whisk.Points = append(whisk.Points, figure.XY{X: g.TPS.Mean, Y: row(i, len(gs))})
			// Throughput is never negative: the whisker stops at zero.
			whisk.Lo, whisk.Hi = append(whisk.Lo, math.Min(g.TPS.Half, g.TPS.Mean)), append(whisk.Hi, g.TPS.Half)
			end = g.TPS.CIHi
		}
		vals = append(vals, figure.XY{X: end, Y: row(i, len(gs))})
		text = append(text, " "+num(g.TPS.Mean, 0))
		xmax = math.Max(xmax, end)
	}
	if len(whisk.Points) > 0 {
		p.add(whisk)
	}
	addLabels(p, vals, text)
	nominal(p, labels)
	p.add(figure.Step{Kind: figure.XMin, Value: 0}, figure.Step{Kind: figure.XMax, Value: xmax * 1.22})
	return p
}

// addLabels writes each value beside its bar.
func addLabels(p *panel, at []figure.XY, text []string) {
	if len(at) == 0 {
		return
	}
	p.add(figure.Step{Kind: figure.Labels, Points: at, Texts: text, Size: 9, YAlign: figure.Align(-0.5)})
}

// noData writes why a panel is empty in its middle, so an empty panel reads as
// "not defined for these runs" rather than as a drawing fault.
func noData(p *panel, xmax float64, rows int, msg string) {
	y := float64(rows-1) / 2
	p.add(figure.Step{Kind: figure.Labels, Points: []figure.XY{{X: xmax / 2, Y: y}}, Texts: []string{msg}, Size: 11,
		Colour: &figure.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}, XAlign: figure.Align(-0.5), YAlign: figure.Align(-0.5)})
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

func (r *Report) stepPanel(gs []*Group, col map[*Group]figure.RGBA) *panel {
	p := newPanel("Step time per measured step (box: quartiles; whiskers: 1.5 IQR)", "seconds per step", anyMarked(gs))
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
		p.add(figure.Step{Kind: figure.Box, Width: barWidth(len(gs)), At: row(i, len(gs)), Samples: samples, Fill: lighten(col[g], 0.45), Radius: 1.5})
		xmax = math.Max(xmax, samples[len(samples)-1])
	}
	nominal(p, labels)
	if xmax > 0 {
		p.add(figure.Step{Kind: figure.XMax, Value: xmax * 1.05})
	}
	return p
}

func (r *Report) memoryPanel(gs []*Group, col map[*Group]figure.RGBA) *panel {
	p := newPanel("Peak memory per GPU\n(dark: reserved or device used; light: allocated; dashed: GPU memory)", "GiB", anyMarked(gs))
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
			b := bar(*v/1024, row(i, len(gs)), w/2, c)
			b.Offset = w / 4
			if j == 1 {
				b.Colour = lighten(c, 0.6)
				b.Offset = -w / 4
			}
			p.add(b)
			drawn = true
			xmax = math.Max(xmax, *v/1024)
		}
		if g.GPUMemoryMiB != nil {
			cap := *g.GPUMemoryMiB / 1024
			p.add(figure.Step{Kind: figure.Line, Points: []figure.XY{{X: cap, Y: row(i, len(gs)) - 0.42}, {X: cap, Y: row(i, len(gs)) + 0.42}},
				Dashes: []float64{3, 2}, Width: 1.2})
			drawn = true
			xmax = math.Max(xmax, cap)
		}
	}
	nominal(p, labels)
	p.add(figure.Step{Kind: figure.XMax, Value: xmax * 1.08})
	if !drawn {
		msg := whyNone(gs, "no memory figures recorded")
		if allCPU(gs) {
			msg = "no GPU memory: CPU runs record none"
		}
		noData(p, xmax*1.08, len(gs), msg)
	}
	return p
}

func allCPU(gs []*Group) bool {
	for _, g := range gs {
		if g.Key.Platform != hw.PlatformCPU {
			return false
		}
	}
	return len(gs) > 0
}

func (r *Report) mfuPanel(gs []*Group, col map[*Group]figure.RGBA) *panel {
	p := newPanel("MFU: Rival's formula (bars), the framework's own figure (black diamond)", "% of dense peak at the run's precision", anyMarked(gs))
	var labels []string
	var fw []figure.XY
	var vals []figure.XY
	var text []string
	xmax := 10.0
	for i, g := range gs {
		labels = append(labels, r.barLabel(g))
		if g.MFU != nil {
			p.add(bar(*g.MFU, row(i, len(gs)), barWidth(len(gs)), col[g]))
			xmax = math.Max(xmax, *g.MFU)
		}
		fwMFU := g.FrameworkMFU
		if fwMFU == nil && g.FrameworkTF != nil && g.Peak != nil {
			v := 100 * *g.FrameworkTF / *g.Peak
			fwMFU = &v
		}
		if fwMFU != nil {
			fw = append(fw, figure.XY{X: *fwMFU, Y: row(i, len(gs))})
			xmax = math.Max(xmax, *fwMFU)
		}
		if g.MFU != nil {
			// the value sits right of the bar and of the diamond, never on them
			at := *g.MFU
			if fwMFU != nil {
				at = math.Max(at, *fwMFU+0.03*xmax)
			}
			vals = append(vals, figure.XY{X: at, Y: row(i, len(gs))})
			text = append(text, " "+num(*g.MFU, 1)+"%")
		}
	}
	if len(fw) > 0 {
		p.add(figure.Step{Kind: figure.Scatter, Points: fw, Glyph: "diamond", Radius: 4, Colour: &figure.RGBA{A: 255}})
	}
	addLabels(p, vals, text)
	nominal(p, labels)
	p.add(figure.Step{Kind: figure.XMax, Value: xmax * 1.2})
	if len(vals) == 0 && len(fw) == 0 {
		msg := whyNone(gs, "no MFU: no dense peak known")
		if allCPU(gs) {
			msg = "no MFU: CPU runs have no GPU peak to divide by"
		}
		noData(p, xmax*1.2, len(gs), msg)
	}
	return p
}

func (r *Report) costPanel(gs []*Group, col map[*Group]figure.RGBA) *panel {
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
	p := newPanel(title, "thousand USD per 1T tokens", anyMarked(priced))
	var labels []string
	var vals []figure.XY
	var text []string
	xmax := 1.0
	for i, g := range priced {
		labels = append(labels, r.barLabel(g))
		v := *g.CostPer1T / 1000
		p.add(bar(v, row(i, len(priced)), barWidth(len(priced)), col[g]))
		vals = append(vals, figure.XY{X: v, Y: row(i, len(priced))})
		text = append(text, " $"+num(v, 1)+"k")
		xmax = math.Max(xmax, v)
	}
	addLabels(p, vals, text)
	p.add(figure.Step{Kind: figure.XMax, Value: xmax * 1.25})
	if len(labels) > 0 {
		nominal(p, labels)
	} else {
		p.add(figure.Step{Kind: figure.HideY}, figure.Step{Kind: figure.YMin, Value: -0.5}, figure.Step{Kind: figure.YMax, Value: 0.5})
		noData(p, xmax*1.25, 1, costWhyNone(gs))
	}
	return p
}

// lossTitle is the loss panel's title: every diverged pair and every
// framework pair whose curves part by name, then how many pairs are in
// parity, so no verdict hides behind another.
func lossTitle(models ...*ModelSection) string {
	title := "Training loss, first run of each group"
	var diverged, parted []string
	inParity, compared := 0, 0
	for _, m := range models {
		for _, lp := range m.ParityPairs() {
			if !lp.Compared() {
				continue
			}
			compared++
			switch {
			case lp.InParity():
				inParity++
			case lp.Frameworks && lp.StepWise.Parted:
				parted = append(parted, fmt.Sprintf("%s vs %s at step %d", lp.A.Label, lp.B.Label, lp.StepWise.PartedAt))
			default:
				diverged = append(diverged, fmt.Sprintf("%s vs %s %.1f%%", lp.A.Label, lp.B.Label, 100*lp.TailGap))
			}
		}
	}
	if compared == 0 {
		return title + "\nno pair on the same data and seed with an equal configuration (apart from precision): curves not compared"
	}
	if len(diverged) > 0 {
		title += "\nDIVERGED (last-10% mean gap): " + strings.Join(diverged, "; ")
	}
	if len(parted) > 0 {
		title += "\nPARTED (frameworks, step by step on the same batches): " + strings.Join(parted, "; ")
	}
	if inParity > 0 {
		title += fmt.Sprintf("\n%d of %s in parity (see report.md)", inParity, english.Plural(compared, "pair"))
	}
	return title
}

func (r *Report) lossPanel(gs []*Group, col map[*Group]figure.RGBA) *panel {
	title := lossTitle(r.Models...)
	if len(gs) > maxLossCurves {
		title += fmt.Sprintf("\n(%d of %d groups shown)", maxLossCurves, len(gs))
	}
	p := curvePanel(title, "training step", "loss")
	dashes := lineDashes
	drawn := 0
	for i, g := range gs {
		if drawn == maxLossCurves {
			break
		}
		res := firstRun(g)
		var pts []figure.XY
		for j, l := range res.LossValues {
			if l != nil && finite(*l) && j < len(res.StepNumbers) {
				pts = append(pts, figure.XY{X: float64(res.StepNumbers[j]), Y: *l})
			}
		}
		if len(pts) == 0 {
			continue
		}
		if step := (len(pts) + maxLossPoints - 1) / maxLossPoints; step > 1 {
			var thin []figure.XY
			for j := 0; j < len(pts); j += step {
				thin = append(thin, pts[j])
			}
			pts = thin
		}
		c := col[g]
		p.add(figure.Step{Kind: figure.Line, Points: pts, Colour: &c, Width: 1.6, Dashes: dashes[i%len(dashes)], LegendText: clipWords(r.barLabel(g), 44)})
		drawn++
	}
	p.add(figure.Step{Kind: figure.Legend, Size: 9, Top: true})
	return p
}

// Figure is the comparison figure: a title, then two columns of the panels that have data, in
// the order panels gives. It is an error when no group has a usable run.
func (r *Report) Figure() (*figure.Figure, error) {
	if len(r.Groups) == 0 {
		return nil, fmt.Errorf("write plots: no usable run to plot (every result had an error; see the report)")
	}
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
	f := &figure.Figure{
		Width: figWidth, Height: figTitle + float64((len(builders)+1)/2)*figRowHeight, DPI: figDPI,
		Texts:   []figure.Text{{FromTop: 8, Size: 18, Text: head}, {FromTop: 34, Size: 11, Text: clipWords(sub, 180)}},
		CropTop: 54,
		Tiles:   figure.Tiles{Rows: (len(builders) + 1) / 2, Cols: 2, PadX: 28, PadY: 26, PadTop: 6, PadBottom: 10, PadLeft: 10, PadRight: 18},
	}
	if len(omitted) > 0 {
		f.Texts = append(f.Texts, figure.Text{FromTop: 52, Size: 11, Text: clipWords("Not drawn: "+strings.Join(omitted, "; ")+".", 200)})
		f.CropTop = 72
	}
	for _, b := range builders {
		f.Panels = append(f.Panels, figure.Panel{Steps: b(gs, col).steps})
	}
	return f, f.Check()
}

type panelBuilder = func([]*Group, map[*Group]figure.RGBA) *panel

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
	heldOut, same := false, false
	for _, m := range r.Models {
		if m.HeldOut != nil {
			heldOut = true
			same = same || len(m.HeldOut.Same) > 0
		}
	}
	if heldOut {
		drawn = append(drawn, r.heldOutPanel)
	}
	if same {
		drawn = append(drawn, r.heldOutDiffPanel)
	}
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

// heldOutPanel draws every group's held-out loss (first run) against the training samples seen,
// with the target as a dashed line.
func (r *Report) heldOutPanel(gs []*Group, col map[*Group]figure.RGBA) *panel {
	title := "Held-out loss, first run of each group"
	if r.HasTarget {
		title += fmt.Sprintf("\ntarget %s (%s)", lossText(r.Target), r.TargetSource)
	}
	p := curvePanel(title, "training samples seen", "held-out loss (nats/token)")
	dashes := lineDashes
	xmax := 0.0
	for i, g := range gs {
		hg := r.heldOutOf(g)
		if hg == nil {
			continue
		}
		var pts []figure.XY
		for _, ev := range hg.Runs[0].Evals {
			pts = append(pts, figure.XY{X: float64(*ev.SamplesSeen), Y: ev.Loss})
			xmax = max(xmax, float64(*ev.SamplesSeen))
		}
		c := col[g]
		p.add(figure.Step{Kind: figure.Line, Points: pts, Colour: &c, Width: 1.6, Dashes: dashes[i%len(dashes)], LegendText: clipWords(r.barLabel(g), 44)},
			figure.Step{Kind: figure.Scatter, Points: pts, Colour: &c, Radius: 2})
	}
	if r.HasTarget && xmax > 0 {
		black := rgb(40, 40, 40)
		p.add(figure.Step{Kind: figure.Line, Points: []figure.XY{{X: 0, Y: r.Target}, {X: xmax, Y: r.Target}}, Colour: &black, Width: 1, Dashes: []float64{3, 3}, LegendText: "target"})
	}
	p.add(figure.Step{Kind: figure.Legend, Size: 9, Top: true})
	return p
}

// heldOutDiffPanel draws, for each pair of groups whose held-out curves agree within
// HeldOutTolerance, the second's loss minus the first's: on the loss panel they lie on one another.
func (r *Report) heldOutDiffPanel(gs []*Group, col map[*Group]figure.RGBA) *panel {
	p := curvePanel(fmt.Sprintf("Held-out loss difference of groups within %.0f%%", 100*HeldOutTolerance), "training samples seen", "loss difference (nats/token)")
	for _, m := range r.Models {
		if m.HeldOut == nil {
			continue
		}
		for _, pr := range m.HeldOut.Same {
			var pts []figure.XY
			for i := range pr.Samples {
				pts = append(pts, figure.XY{X: pr.Samples[i], Y: pr.Diff[i]})
			}
			c, ok := col[pr.B]
			if !ok {
				c = rgb(120, 120, 120) // a group past the plotted ones
			}
			p.add(figure.Step{Kind: figure.Line, Points: pts, Colour: &c, Width: 1.6,
				LegendText: clipWords(r.barLabel(pr.B)+" − "+r.barLabel(pr.A), 60)})
		}
	}
	p.add(figure.Step{Kind: figure.Legend, Size: 9, Top: true})
	return p
}

// heldOutOf is g's held-out group, nil when its runs recorded no periodic evaluation.
func (r *Report) heldOutOf(g *Group) *HeldOutGroup {
	for _, m := range r.Models {
		if m.HeldOut == nil {
			continue
		}
		for _, hg := range m.HeldOut.Groups {
			if hg.Group == g {
				return hg
			}
		}
	}
	return nil
}

// lineDashes tell curves apart where they lie on one another.
var lineDashes = [][]float64{nil, {6, 3}, {2, 2}, {8, 2, 2, 2}}

// curvePanel starts a line-plot panel: its title, axis labels, plain ticks and a grid.
func curvePanel(title, xlabel, ylabel string) *panel {
	p := &panel{}
	p.add(figure.Step{Kind: figure.Title, Text: title, Size: 13},
		figure.Step{Kind: figure.XLabel, Text: xlabel, Size: 11},
		figure.Step{Kind: figure.YLabel, Text: ylabel, Size: 11},
		figure.Step{Kind: figure.XTicks, Size: 10, Ticks: "plain"},
		figure.Step{Kind: figure.YTicks, Size: 10, Ticks: "plain"},
		figure.Step{Kind: figure.Grid})
	return p
}
