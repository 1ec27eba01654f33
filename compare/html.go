package compare

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/result"
)

// palette colours groups in every figure alike (Okabe–Ito, readable by
// colour-blind readers).
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#999999", "#F0E442"}

const htmlStyle = `
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",sans-serif;color:#1d232a;background:#f6f7f9;margin:0}
main{max-width:1100px;margin:0 auto;padding:24px 28px 60px}
h1{font-size:26px;margin:8px 0 4px}h2{font-size:21px;margin:34px 0 10px;border-bottom:2px solid #dde1e6;padding-bottom:4px}
h3{font-size:16px;margin:22px 0 8px}
.sub{color:#5b6570;margin:0 0 16px}
.headline{background:#fff;border-left:5px solid #0072B2;padding:10px 14px;margin:8px 0;border-radius:4px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
.headline b{font-size:19px}
.warn{border-left-color:#D55E00}
table{border-collapse:collapse;background:#fff;margin:6px 0 14px;font-size:14px;box-shadow:0 1px 2px rgba(0,0,0,.06)}
th,td{border:1px solid #e3e6ea;padding:5px 9px;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.cfg{color:#5b6570;font-size:12.5px;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px;vertical-align:baseline}
figure{background:#fff;margin:10px 0 18px;padding:10px;box-shadow:0 1px 2px rgba(0,0,0,.06);border-radius:4px}
figcaption{color:#5b6570;font-size:13px;margin-top:4px}
svg{display:block;max-width:100%;height:auto}
svg text{font:12px system-ui,"Liberation Sans",sans-serif;fill:#1d232a}
details{background:#fff;margin:4px 0;border:1px solid #e3e6ea;border-radius:4px}
summary{cursor:pointer;padding:6px 10px}
details table{margin:4px 10px 10px;box-shadow:none}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12.5px;word-break:break-all}
.ok{color:#00734d}.bad{color:#b13d00;font-weight:600}
`

type htmlWriter struct {
	w   *bufio.Writer
	rep *Report
	col map[*Group]string
}

func (h *htmlWriter) p(format string, a ...any) { fmt.Fprintf(h.w, format, a...) }

// e escapes text for HTML.
func e(s string) string { return html.EscapeString(s) }

// WriteHTML writes report.html: one self-contained page (inline CSS and
// SVG, no script, nothing fetched) with the headlines, per-group tables with
// their configuration, the fairness table, loss parity, figures of
// throughput with intervals, step times and loss curves, and every run's
// provenance one click away. Output is deterministic for the same inputs.
func (r *Report) WriteHTML(w io.Writer) error {
	h := &htmlWriter{w: bufio.NewWriter(w), rep: r, col: map[*Group]string{}}
	for i, g := range r.Groups {
		h.col[g] = palette[i%len(palette)]
	}
	h.p("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	h.p("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n")
	h.p("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>Rival comparison report</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", htmlStyle)
	h.p("<h1>Rival comparison report</h1>\n<p class=\"sub\">%s in %s, %s; platforms: %s.</p>\n",
		english.Plural(len(r.Inputs), "result"), english.Plural(len(r.Groups), "group"), english.Plural(len(r.Models), "model"), e(strings.Join(r.Platforms, ", ")))
	if len(r.Errors) > 0 {
		h.p("<div class=\"headline warn\">%s in results: those runs are left out of every figure (see <a href=\"#errors\">Errors</a>).</div>\n", english.Plural(len(r.Errors), "error"))
	}
	for _, x := range r.Warnings {
		h.p("<div class=\"headline warn\">%s</div>\n", e(x))
	}
	h.headlines()
	for i, m := range r.Models {
		h.model(i, m)
	}
	h.history()
	h.errors()
	h.provenance()
	h.p("<h2>Method</h2>\n<p>Each run contributes its headline tokens/s/GPU over the measured steps (warm-up excluded; from the median step time where the result records it so, else the mean). A group's interval is the 95%% Student-t confidence interval of the mean over its runs; a ratio's interval uses the delta method with Welch–Satterthwaite degrees of freedom; groups that do different work per token (another SL or model) are compared by model TFLOP/s/GPU, never by tokens or cost per token, and a ratio whose interval includes 1 is reported as no difference shown, with the runs that would decide. Loss parity compares the first run of each group: the verdict is the relative gap between the mean losses over the last 10%% of the common steps, above %.0f%% is divergence; the largest single-step gap is shown beside it. Runs that record the same sample-order digest read the same batches and are also compared at every step, warm-up included: the curves part at the first step from which every later step differs by more than %.0f%%; groups of different frameworks on the same configuration, data, seed and sample order are judged so. report.md holds the same figures with the full methodology.</p>\n", 100*LossDivergenceThreshold, 100*StepLossTolerance)
	h.p("</main>\n</body>\n</html>\n")
	return h.w.Flush()
}

func (h *htmlWriter) headlines() {
	h.p("<h2>Headlines</h2>\n")
	for _, m := range h.rep.Models {
		for _, c := range m.Headlines {
			cls := "headline"
			if !c.Identical {
				cls += " warn"
			}
			if c.Ratio.Inconclusive() {
				cls = "headline warn"
			}
			h.p("<div class=\"%s\">%s: %s vs %s, %s<br><span class=\"cfg\">%s</span></div>\n", cls, htmlRatio(c.Ratio, c.Metric, c.RunsNeeded),
				e(m.DisplayName(c.Faster)), e(m.DisplayName(c.Slower)), e(m.Label), e(headTail(c)))
		}
		for _, c := range m.ConfigComparisons() {
			cls := "headline"
			if c.Ratio.Inconclusive() {
				cls += " warn"
			}
			h.p("<div class=\"%s\">%s: %s vs %s, %s<br><span class=\"cfg\">%s</span></div>\n", cls, htmlRatio(c.Ratio, c.Metric, c.RunsNeeded),
				e(m.DisplayName(c.Faster)), e(m.DisplayName(c.Slower)), e(m.Label), e(configTail(c)))
		}
		if m.NoComparison != "" && len(m.ConfigComparisons()) == 0 {
			h.p("<div class=\"headline warn\">%s: %s.</div>\n", e(m.Label), e(m.NoComparison))
		}
	}
}

// htmlRatio is ratioText in HTML: a decided ratio in bold, an inconclusive
// one never.
func htmlRatio(r Ratio, metric string, runsNeeded int) string {
	if r.Inconclusive() {
		return e(ratioText(r, metric, runsNeeded))
	}
	return "<b>" + e(r.valueText()) + "</b> " + e(metric+r.noCI())
}

func headTail(c Comparison) string { return strings.Join(c.notes(), "; ") }

func configTail(c ConfigComparison) string {
	var t []string
	if c.Ratio.HasCI && !c.Ratio.Inconclusive() {
		t = append(t, "95% CI "+c.Ratio.CIText())
	}
	t = append(t, fmt.Sprintf("n=%d vs %d", c.Faster.TPS.N, c.Slower.TPS.N), "total tokens/s "+c.TotalRatio.String())
	if c.WorkDiffers != "" {
		t = append(t, workNote(c.Metric, c.WorkDiffers))
	}
	t = append(t, "same platform, framework and data; differs in "+strings.Join(c.Differs, ", "))
	return strings.Join(t, "; ")
}

// configLine is a group's configuration in one line.
func configLine(g *Group) string {
	c := g.Config
	s := fmt.Sprintf("%s · TP %s PP %s DP %s · GBS %s MBS %s SL %s · %s",
		c["precision"], c["tensor_parallel"], c["pipeline_parallel"], c["data_parallel"],
		c["global_batch_size"], c["micro_batch_size"], c["sequence_length"], clipWords(c["framework_version"], 44))
	if len(g.Runs) > 0 && g.Runs[0].Input != nil && g.Runs[0].Input.Result != nil {
		if cu := cpuUse(g.Runs[0].Input.Result); cu != "" {
			s += " · CPU" + cu
		}
	}
	return s + " · cfg " + truncate(strings.TrimPrefix(c["config_fingerprint"], "blake3:"), 13) + " · data " + truncate(c["dataset_fingerprint"], 13)
}

func (h *htmlWriter) swatch(g *Group) string {
	return fmt.Sprintf("<span class=\"sw\" style=\"background:%s\"></span>", h.col[g])
}

func (h *htmlWriter) model(i int, m *ModelSection) {
	h.p("<h2 id=\"model-%d\">%s</h2>\n", i, e(m.Label))
	if m.NoComparison != "" {
		more := ""
		if len(m.ConfigComparisons()) > 0 {
			more = "; its configurations are compared with each other"
		}
		h.p("<p>%s%s.</p>\n", e(strings.ToUpper(m.NoComparison[:1])+m.NoComparison[1:]), more)
	}
	h.p("<h3>Groups</h3>\n<table class=\"groups\">\n<tr><th>group and configuration</th><th>runs</th><th>tokens/s/GPU (mean ± 95%% CI)</th><th>total tokens/s</th><th>step median (p10–p90) s</th><th>TFLOP/s/GPU (Rival)</th><th>MFU</th></tr>\n")
	for _, g := range m.Groups {
		mfu := "—"
		if g.MFU != nil {
			mfu = num(*g.MFU, 1) + "%"
		}
		h.p("<tr><td>%s<b>%s</b><br><span class=\"cfg\">%s</span></td><td class=\"num\">%d</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s (%s–%s)</td><td class=\"num\">%s</td><td class=\"num\">%s</td></tr>\n",
			h.swatch(g), e(m.DisplayName(g)), e(configLine(g)), g.TPS.N, e(summaryCell(g.TPS, 1)), e(summaryCell(g.TotalTPS, 0)),
			num(g.StepMedian, 3), num(g.StepP10, 3), num(g.StepP90, 3), e(sig(g.TFLOPs)), mfu)
	}
	h.p("</table>\n")

	h.p("<h3>Throughput</h3>\n")
	h.throughputSVG(m)
	h.p("<h3>Step time</h3>\n")
	h.stepSVG(m)

	h.p("<h3>Fairness</h3>\n")
	if len(m.Fairness) == 0 {
		h.p("<p>Every compared configuration field is equal across the groups of %s.</p>\n", e(m.Label))
	} else {
		h.p("<table class=\"fairness\">\n<tr><th>field that differs</th>")
		for _, g := range m.Groups {
			h.p("<th>%s%s</th>", h.swatch(g), e(m.DisplayName(g)))
		}
		h.p("</tr>\n")
		for _, row := range m.Fairness {
			h.p("<tr><td>%s</td>", e(row.Field))
			for i, v := range differingCells(row.Values, 40, false) {
				h.p("<td title=\"%s\"><code>%s</code></td>", e(row.Values[i]), e(v))
			}
			h.p("</tr>\n")
		}
		h.p("</table>\n<p class=\"cfg\">Equal in every group: %s.</p>\n", e(strings.Join(m.Identical, ", ")))
	}

	h.p("<h3>Loss</h3>\n")
	h.lossSVG(m)
	var rows []string
	for _, lp := range m.Parity {
		kind := "across platforms"
		if lp.PrecisionOnly {
			kind = fmt.Sprintf("precision only: %s vs %s", lp.A.Config["precision"], lp.B.Config["precision"])
		}
		rows = append(rows, parityRow(m, lp, kind))
	}
	for _, c := range m.ConfigComparisons() {
		if c.Parity != nil {
			rows = append(rows, parityRow(m, *c.Parity, "between configurations, same data and seed"))
		}
	}
	for _, lp := range m.FrameworkParity {
		rows = append(rows, parityRow(m, lp, frameworkKind(lp.A, lp.B)+", same batches"))
	}
	for _, sk := range m.FrameworkSkipped {
		rows = append(rows, fmt.Sprintf("<tr><td>%s vs %s</td><td>%s</td><td colspan=\"5\">not compared step by step: %s</td></tr>\n", e(m.DisplayName(sk.A)), e(m.DisplayName(sk.B)), e(frameworkKind(sk.A, sk.B)), e(sk.Why)))
	}
	if len(rows) == 0 {
		h.p("<p>No two groups of %s ran on identical data with the same seed, so loss curves are not compared.</p>\n", e(m.Label))
	} else {
		h.p("<table class=\"parity\">\n<tr><th>groups</th><th>kind</th><th>gap of the tail means</th><th>largest step gap (at step)</th><th>steps compared (after warm-up)</th><th>step by step, same batches (tolerance %.0f%%)</th><th>verdict</th></tr>\n%s</table>\n", 100*StepLossTolerance, strings.Join(rows, ""))
	}
	h.heldOut(m)
}

// parityRow is one pair of the parity table. A framework pair's verdict is
// its step-by-step one: its tail-mean cells say so instead of a second verdict.
func parityRow(m *ModelSection, lp LossParity, kind string) string {
	names := e(m.DisplayName(lp.A)) + " vs " + e(m.DisplayName(lp.B))
	if lp.Frameworks {
		if !lp.Compared() {
			return fmt.Sprintf("<tr><td>%s</td><td>%s</td><td colspan=\"5\">the loss curves share no step</td></tr>\n", names, e(kind))
		}
		v, bad := frameworkVerdict(lp)
		verdict := "<span class=\"ok\">" + e(v) + "</span>"
		if bad {
			verdict = "<span class=\"bad\">" + e(v) + "</span>"
		}
		return fmt.Sprintf("<tr><td>%s</td><td>%s</td><td colspan=\"3\">compared step by step, warm-up included</td><td>%s</td><td>%s</td></tr>\n", names, e(kind), e(frameworkFigures(lp)), verdict)
	}
	if !lp.Available {
		return fmt.Sprintf("<tr><td>%s</td><td>%s</td><td colspan=\"5\">the loss curves share no step after warm-up</td></tr>\n", names, e(kind))
	}
	verdict := "<span class=\"ok\">in parity</span>"
	if lp.Diverged {
		verdict = "<span class=\"bad\">diverged</span>"
	}
	return fmt.Sprintf("<tr><td>%s</td><td>%s</td><td class=\"num\">%.2f%% over the last %d (threshold %.0f%%)</td><td class=\"num\">%.2f%% (%d)</td><td class=\"num\">%d (after %d)</td><td>%s</td><td>%s</td></tr>\n",
		names, e(kind), 100*lp.TailGap, lp.TailSteps, 100*LossDivergenceThreshold, 100*lp.MaxGap, lp.AtStep, lp.Steps, lp.Warmup, e(stepCell(lp.StepWise)), verdict)
}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		hi = lo + 1
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	first, last := math.Floor(lo/step), math.Ceil(hi/step-1e-9)
	for k := first; k <= last; k++ {
		out = append(out, k*step)
	}
	if len(out) < 2 {
		out = append(out, (last+1)*step)
	}
	return out
}

func tickLabel(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return num(v, 0)
	case a >= 10:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
	}
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

const (
	figW     = 960
	labelW   = 300
	rowH     = 34
	figRight = 30
)

// throughputSVG draws tokens/s/GPU per group: the mean as a bar, its 95%
// interval as a whisker, and every run as a dot.
func (h *htmlWriter) throughputSVG(m *ModelSection) {
	hi := 0.0
	for _, g := range m.Groups {
		hi = max(hi, g.TPS.Mean)
		if g.TPS.HasCI {
			hi = max(hi, g.TPS.CIHi)
		}
		for _, r := range g.Runs {
			hi = max(hi, r.TPSPerGPU)
		}
	}
	ticks := niceTicks(0, hi, 6)
	top := ticks[len(ticks)-1]
	H := 30 + rowH*len(m.Groups) + 40
	x := func(v float64) float64 { return labelW + (figW-labelW-figRight)*v/top }
	h.p("<figure><svg class=\"fig\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"tokens per second per GPU\">\n", figW, H, figW, H)
	base := 20 + rowH*len(m.Groups)
	for _, t := range ticks {
		h.p("<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e3e6ea\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x(t), x(t), base, x(t), base+16, tickLabel(t))
	}
	h.p("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">tokens/s/GPU (bar: mean; whisker: 95%% CI; dots: runs)</text>\n", x(top/2), base+34)
	for i, g := range m.Groups {
		y := 20 + rowH*i
		c := h.col[g]
		h.p("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", labelW-8, y+rowH/2+4, e(clipWords(m.DisplayName(g), 44)))
		h.p("<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.75\"><title>%s: %s tokens/s/GPU</title></rect>\n",
			labelW, y+6, x(g.TPS.Mean)-labelW, rowH-12, c, e(m.DisplayName(g)), e(summaryCell(g.TPS, 1)))
		if g.TPS.HasCI {
			cy := y + rowH/2
			h.p("<path d=\"M%.1f %dH%.1fM%.1f %dV%dM%.1f %dV%d\" stroke=\"#1d232a\" stroke-width=\"1.6\" fill=\"none\"/>\n",
				x(g.TPS.CILo), cy, x(g.TPS.CIHi), x(g.TPS.CILo), cy-6, cy+6, x(g.TPS.CIHi), cy-6, cy+6)
		}
		for _, r := range g.Runs {
			h.p("<circle cx=\"%.1f\" cy=\"%d\" r=\"3.2\" fill=\"#fff\" stroke=\"#1d232a\"><title>%s: %s</title></circle>\n", x(r.TPSPerGPU), y+rowH/2, e(r.Input.Source), num(r.TPSPerGPU, 1))
		}
	}
	h.p("</svg><figcaption>Tokens per second per GPU (per process on a CPU) for each group; %s.</figcaption></figure>\n",
		"groups of one run have no interval")
}

// stepSVG draws each group's pooled step times: p10–p90 as a band, the
// median as a tick.
func (h *htmlWriter) stepSVG(m *ModelSection) {
	hi := 0.0
	for _, g := range m.Groups {
		hi = max(hi, g.StepP90, g.StepMedian)
	}
	ticks := niceTicks(0, hi, 6)
	top := ticks[len(ticks)-1]
	H := 30 + rowH*len(m.Groups) + 40
	x := func(v float64) float64 { return labelW + (figW-labelW-figRight)*v/top }
	base := 20 + rowH*len(m.Groups)
	h.p("<figure><svg class=\"fig\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"step time\">\n", figW, H, figW, H)
	for _, t := range ticks {
		h.p("<line x1=\"%.1f\" y1=\"14\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e3e6ea\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x(t), x(t), base, x(t), base+16, tickLabel(t))
	}
	h.p("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">step time, seconds (band: p10–p90 of measured steps; tick: median)</text>\n", x(top/2), base+34)
	for i, g := range m.Groups {
		y := 20 + rowH*i
		h.p("<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", labelW-8, y+rowH/2+4, e(clipWords(m.DisplayName(g), 44)))
		h.p("<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\" fill-opacity=\"0.45\"/>\n", x(g.StepP10), y+9, max(1.5, x(g.StepP90)-x(g.StepP10)), rowH-18, h.col[g])
		h.p("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"><title>median %s s</title></line>\n", x(g.StepMedian), y+5, x(g.StepMedian), y+rowH-5, h.col[g], num(g.StepMedian, 3))
	}
	h.p("</svg><figcaption>Step time over the measured steps of every run of a group.</figcaption></figure>\n")
}

// lossSVG draws every run's loss against the step, one colour per group.
// svgCurve is one line of a curve figure: a run of a group, thick when it is the group's first.
type svgCurve struct {
	g      *Group
	pts    [][2]float64
	source string
	first  bool
}

func (h *htmlWriter) lossSVG(m *ModelSection) {
	var curves []svgCurve
	for _, g := range m.Groups {
		runs := append([]*Run(nil), g.Runs...)
		sort.Slice(runs, func(i, j int) bool { return runs[i].Input.Source < runs[j].Input.Source })
		for k, r := range runs {
			c := svgCurve{g: g, source: r.Input.Source, first: k == 0}
			byStep := lossByStep(r.Input.Result)
			steps := make([]int, 0, len(byStep))
			for s := range byStep {
				steps = append(steps, s)
			}
			sort.Ints(steps)
			for _, s := range steps {
				c.pts = append(c.pts, [2]float64{float64(s), byStep[s]})
			}
			if len(c.pts) > 0 {
				curves = append(curves, c)
			}
		}
	}
	h.curveSVG(m, curves, curveAxes{x: "step", y: "loss", aria: "loss curves", none: "no run of " + m.Label + " records its loss",
		caption: "Training loss per step; the thick line is each group's first run, thin lines its other runs."})
}

// curveAxes names a curve figure's axes and says what it shows; hline, when set, is a dashed
// horizontal line (a target) with its label.
type curveAxes struct {
	x, y, aria, none, caption string
	hline                     *float64
	hlineLabel                string
}

// curveSVG draws curves on one pair of axes, every other group dashed (curves that agree lie on
// one another), with a legend of m's groups.
func (h *htmlWriter) curveSVG(m *ModelSection, curves []svgCurve, ax curveAxes) {
	xmin, xmax, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, c := range curves {
		for _, p := range c.pts {
			xmin, xmax, ylo, yhi = min(xmin, p[0]), max(xmax, p[0]), min(ylo, p[1]), max(yhi, p[1])
		}
	}
	if ax.hline != nil {
		ylo, yhi = min(ylo, *ax.hline), max(yhi, *ax.hline)
	}
	const W, H, L, B, T = figW, 360, 70, 50, 16
	h.p("<figure><svg class=\"fig\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"%s\">\n", W, H, W, H, e(ax.aria))
	if len(curves) == 0 {
		h.p("<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n</svg></figure>\n", W/2, H/2, e(ax.none))
		return
	}
	if yhi == ylo {
		ylo, yhi = ylo-math.Max(math.Abs(ylo)*0.01, 1e-6), yhi+math.Max(math.Abs(yhi)*0.01, 1e-6)
	}
	xt, yt := niceTicks(min(0, xmin), xmax, 8), niceTicks(ylo, yhi, 5)
	x0, x1, y0, y1 := xt[0], xt[len(xt)-1], yt[0], yt[len(yt)-1]
	px := func(v float64) float64 { return L + (W-L-figRight)*(v-x0)/(x1-x0) }
	py := func(v float64) float64 { return float64(H-B) - float64(H-B-T)*(v-y0)/(y1-y0) }
	for _, t := range xt {
		h.p("<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e3e6ea\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px(t), T, px(t), H-B, px(t), H-B+16, tickLabel(t))
	}
	for _, t := range yt {
		h.p("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e3e6ea\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", L, py(t), W-figRight, py(t), L-6, py(t)+4, tickLabel(t))
	}
	h.p("<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px((x0+x1)/2), H-B+34, e(ax.x))
	h.p("<text x=\"16\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 16 %.1f)\">%s</text>\n", py((y0+y1)/2), py((y0+y1)/2), e(ax.y))
	if ax.hline != nil {
		h.p("<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#1d232a\" stroke-dasharray=\"3 4\"/><text x=\"%d\" y=\"%.1f\">%s</text>\n",
			L, py(*ax.hline), W-figRight, py(*ax.hline), L+6, py(*ax.hline)-5, e(ax.hlineLabel))
	}
	for _, c := range curves {
		var d strings.Builder
		for i, p := range c.pts {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f", cmd, px(p[0]), py(p[1]))
		}
		op, wd := "0.35", "1.2"
		if c.first {
			op, wd = "0.95", "2"
		}
		dash := ""
		if h.index(m, c.g)%2 == 1 {
			dash = ` stroke-dasharray="7 5"`
		}
		h.p("<path d=\"%s\" fill=\"none\" stroke=\"%s\" stroke-opacity=\"%s\" stroke-width=\"%s\"%s><title>%s</title></path>\n", d.String(), h.col[c.g], op, wd, dash, e(c.source))
	}
	// Legend, top right.
	for i, g := range m.Groups {
		y := T + 10 + 18*i
		dash := ""
		if i%2 == 1 {
			dash = ` stroke-dasharray="7 5"`
		}
		h.p("<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>", W-figRight-334, y+2, W-figRight-314, y+2, h.col[g], dash)
		h.p("<text x=\"%d\" y=\"%d\">%s</text>\n", W-figRight-310, y+6, e(clipWords(m.DisplayName(g), 48)))
	}
	h.p("</svg><figcaption>%s</figcaption></figure>\n", e(ax.caption))
}

func (h *htmlWriter) errors() {
	r := h.rep
	if len(r.Errors) > 0 {
		h.p("<h2 id=\"errors\">Errors</h2>\n<table>\n<tr><th>result</th><th>error</th><th>detail</th></tr>\n")
		for _, x := range r.Errors {
			h.p("<tr><td><code>%s</code></td><td>%s</td><td>%s</td></tr>\n", e(x.Source), e(x.Name), e(x.Detail))
		}
		h.p("</table>\n")
	}
	if len(r.Skipped) > 0 {
		h.p("<h2>Skipped</h2>\n<table>\n<tr><th>source</th><th>kind</th><th>reason</th></tr>\n")
		for _, s := range r.Skipped {
			h.p("<tr><td><code>%s</code></td><td>%s</td><td>%s</td></tr>\n", e(s.Source), e(s.Kind), e(s.Reason))
		}
		h.p("</table>\n")
	}
}

// provenance lists every input with its provenance behind a <details>.
func (h *htmlWriter) provenance() {
	h.p("<h2>Runs and their provenance</h2>\n")
	for _, in := range h.rep.Inputs {
		res := in.Result
		var when, host string
		if pv := res.Provenance; pv != nil {
			when, host = pv.StartedAt, pv.Host
		}
		h.p("<details class=\"run\"><summary><code>%s</code> · %s %s %s · %s tokens/s/GPU · %s%s</summary>\n<table>\n",
			e(in.Source), e(platformOf(res)), e(res.Framework.Name), e(modelLabel(res)), num(res.PerformanceMetrics.TokensPerSecondPerGPU, 1), e(when), hostSuffix(host))
		row := func(k, v string) { h.p("<tr><th>%s</th><td><code>%s</code></td></tr>\n", e(k), e(v)) }
		row("result fingerprint", in.Fingerprint)
		row("format", in.Format)
		row("precision", res.TrainingConfig.Precision)
		row("config fingerprint", strp(res.ConfigFingerprint))
		row("dataset", strp(res.Dataset.Name)+" "+strp(res.Dataset.Fingerprint))
		row("tokenizer fingerprint", strp(res.TokenizerFingerprint))
		row("framework", res.Framework.Name+" "+strp(res.Framework.Version))
		row("image digest", strp(res.ImageDigest))
		if pv := res.Provenance; pv != nil {
			h.provRows(pv, row)
		}
		if len(in.Missing) > 0 {
			row("missing fields", strings.Join(in.Missing, ", "))
		}
		if len(in.Notes) > 0 {
			row("notes", strings.Join(in.Notes, "; "))
		}
		h.p("</table></details>\n")
	}
}

func hostSuffix(host string) string {
	if host == "" {
		return ""
	}
	return " on " + e(host)
}

func (h *htmlWriter) provRows(pv *result.Provenance, row func(k, v string)) {
	row("run index", fmt.Sprint(pv.RunIndex))
	row("started – finished", pv.StartedAt+" – "+pv.FinishedAt)
	row("launch command", strings.Join(pv.LaunchCommand, " "))
	row("launch environment", kvLine(pv.LaunchEnv))
	row("entry script digest", strp(pv.EntryScriptDigest))
	row("data prefix", pv.DataPrefix)
	row("tokenizer", pv.TokenizerPath)
	for _, x := range []struct {
		k string
		v *string
	}{{"image id", pv.ImageID}, {"container id", pv.ContainerID}, {"Slurm job", pv.SlurmJobID}, {"remapped", pv.Remapped}} {
		if x.v != nil {
			row(x.k, *x.v)
		}
	}
	if len(pv.NodeList) > 0 {
		row("nodes", strings.Join(pv.NodeList, ", "))
	}
	row("configuration", kvLine(pv.Config))
}

func kvLine(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, " ")
}

func (h *htmlWriter) index(m *ModelSection, g *Group) int {
	for i, x := range m.Groups {
		if x == g {
			return i
		}
	}
	return 0
}

// historyHTML writes report.html's History section.
func (h *htmlWriter) history() {
	defer h.anchors()
	hs := h.rep.History
	if hs == nil {
		return
	}
	h.p("<h2 id=\"history\">History</h2>\n<p>%s</p>\n", e(hs.Method()))
	for _, s := range hs.Series {
		h.p("<h3>%s</h3>\n<table>\n<tr><th>batch</th><th>started</th><th>host</th><th>stack</th><th>runs</th><th>tokens/s/GPU</th></tr>\n", e(s.Label))
		for i, b := range s.Batches {
			h.p("<tr><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td></tr>\n", i+1, e(batchDate(b)), e(b.Host), e(b.Stack.Short()), len(b.Runs), e(summaryCI(b.TPS)))
		}
		h.p("</table>\n<table>\n<tr><th>step</th><th>kind</th><th>what changed</th><th>later ÷ earlier</th><th>verdict</th><th>loss parity</th></tr>\n")
		for _, st := range s.Steps {
			cls := ""
			if st.Kind == StepStack && st.Verdict == VerdictRegression {
				cls = " class=\"bad\""
			}
			h.p("<tr><td>%d → %d</td><td>%s</td><td>%s</td><td>%s</td><td%s>%s <small>(%s)</small></td><td>%s</td></tr>\n", s.index(st.From), s.index(st.To), e(st.Kind),
				e(dashIfEmpty(strings.Join(st.Changed, "; "))), e(ratioCI(st.Ratio)), cls, e(st.Phrase()), e(st.Why), e(parityCell(st.Parity)))
		}
		h.p("</table>\n")
		if len(s.Undated) > 0 {
			h.p("<p>Not placed (no provenance.started_at): %s</p>\n", e(strings.Join(s.Undated, ", ")))
		}
	}
}

// anchorsHTML writes the measured ÷ published lines of report.html, when a
// group ran an anchor's workload.
func (h *htmlWriter) anchors() {
	lines := h.rep.AnchorLines()
	ml := h.rep.MLPerfLines()
	if len(lines) == 0 && len(ml) == 0 {
		return
	}
	h.p("<h2 id=\"anchors\">Published anchors</h2>\n<ul>\n")
	for _, l := range lines {
		h.p("<li>%s<br><small>%s</small></li>\n", e(l.Text()), e(l.Anchor.Record()))
	}
	for _, l := range ml {
		h.p("<li>%s<br><small>%s; %s</small></li>\n", e(l.Text()), e(l.Record.Source.String()), e(l.Record.PrecisionSource))
	}
	h.p("</ul>\n")
	if len(ml) > 0 {
		h.p("<p class=\"cfg\">%s.</p>\n", e(mlperfRule))
	}
}

// heldOut writes a model's held-out losses: the table of time to target, every run's held-out
// curve against training samples with the target, and the difference of curves that agree.
func (h *htmlWriter) heldOut(m *ModelSection) {
	ho := m.HeldOut
	if ho == nil {
		return
	}
	r := h.rep
	h.p("<h3>Held-out loss and time to target</h3>\n<p>%s</p>\n", e(r.targetLine()))
	h.p("<table class=\"heldout\">\n<tr><th>group</th><th>runs with evaluations</th><th>last held-out loss</th><th>reached the target</th><th>samples to target</th><th>tokens to target</th><th>wall time to target</th><th>training time to target</th></tr>\n")
	for _, hg := range ho.Groups {
		cells := []string{"—", "—", "—", "—"}
		if r.HasTarget {
			cells = []string{hg.toTargetCell(hg.Samples, 0, 1, ""), "—", "no clock in the log", "no step times"}
			if hg.Tokens.N > 0 || hg.Reached == 0 {
				cells[1] = hg.tokensCell()
			}
			if hg.WallSeconds.N > 0 || hg.Reached == 0 {
				cells[2] = hg.timeCell(hg.WallSeconds)
			}
			if hg.TrainSeconds.N > 0 || hg.Reached == 0 {
				cells[3] = hg.timeCell(hg.TrainSeconds)
			}
		}
		h.p("<tr><td>%s%s</td><td class=\"num\">%d</td><td class=\"num\">%s</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td></tr>\n",
			h.swatch(hg.Group), e(m.DisplayName(hg.Group)), len(hg.Runs), e(summaryCell(hg.Final, 4)), e(hg.reachedCell(r.HasTarget)),
			e(cells[0]), e(cells[1]), e(cells[2]), e(cells[3]))
	}
	h.p("</table>\n")
	var curves []svgCurve
	for _, hg := range ho.Groups {
		for k, tr := range hg.Runs {
			c := svgCurve{g: hg.Group, source: tr.Run.Input.Source, first: k == 0}
			for _, ev := range tr.Evals {
				c.pts = append(c.pts, [2]float64{float64(*ev.SamplesSeen), ev.Loss})
			}
			curves = append(curves, c)
		}
	}
	ax := curveAxes{x: "training samples seen", y: "held-out loss (nats per token)", aria: "held-out loss curves",
		caption: "Held-out loss at each evaluation against the training samples seen before it; the thick line is each group's first run."}
	if r.HasTarget {
		t := r.Target
		ax.hline, ax.hlineLabel = &t, "target "+lossText(t)
	}
	h.curveSVG(m, curves, ax)
	for _, p := range ho.Same {
		c := svgCurve{g: p.B, source: m.DisplayName(p.B) + " minus " + m.DisplayName(p.A), first: true}
		for i := range p.Samples {
			c.pts = append(c.pts, [2]float64{p.Samples[i], p.Diff[i]})
		}
		zero := 0.0
		h.curveSVG(m, []svgCurve{c}, curveAxes{x: "training samples seen", y: "held-out loss difference",
			aria: "held-out loss difference", hline: &zero, hlineLabel: "0",
			caption: fmt.Sprintf("%s minus %s: the same held-out loss within %.0f%% at every common evaluation (largest %.3f%%), drawn apart.",
				m.DisplayName(p.B), m.DisplayName(p.A), 100*HeldOutTolerance, 100*p.MaxRel)})
	}
}
