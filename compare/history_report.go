package compare

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// ratioCI is "0.903× (95% CI 0.871–0.935)", or the ratio with why it has no
// interval.
func ratioCI(r Ratio) string {
	if !r.HasCI {
		return fmt.Sprintf("%s× (no interval)", num(r.Value, 3))
	}
	return fmt.Sprintf("%s× (95%% CI %s–%s)", num(r.Value, 3), num(r.Lo, 3), num(r.Hi, 3))
}

// summaryCI is "1,234 (95% CI 1,200–1,268)" for a batch's tokens/s/GPU.
func summaryCI(s Summary) string {
	prec := 0
	if s.Mean < 100 {
		prec = 2
	}
	if !s.HasCI {
		return num(s.Mean, prec) + " (no interval)"
	}
	return fmt.Sprintf("%s (95%% CI %s–%s)", num(s.Mean, prec), num(s.CILo, prec), num(s.CIHi, prec))
}

// HistoryMethod says how the history is built and judged.
func (h *History) Method() string {
	th := num(100*h.Threshold, 1) + "%"
	return "Runs of one workload (model, recorded configuration and config fingerprint, dataset and its fingerprint, platform, GPU model and count, framework) " +
		"are batched by recorded software stack (framework version with the torch, CUDA/ROCm and library versions it names, image digest, and on one host the hardware fingerprint, which covers the GPU driver) and by host, " +
		"then ordered by date (provenance.started_at; runs of one stack and host more than " + num(HistorySessionGap.Hours(), 0) + " h apart are separate batches). " +
		"Each batch is compared with the latest earlier batch on the same host, else with the batch just before it. " +
		"The ratio is later ÷ earlier mean tokens/s/GPU with its 95% interval (delta method, Welch–Satterthwaite degrees of freedom). " +
		"Threshold θ = " + th + " (HISTORY_THRESHOLD): regression when the interval lies below 1 and the ratio below 1 − θ; improvement when it lies above 1 and the ratio above 1 + θ; " +
		"no change when the whole interval lies within 1 ± θ; otherwise inconclusive (more runs needed). " +
		"Only a step between stacks on one host is a software verdict: with the same recorded stack (only the date differs) a change lies outside the recorded stack, " +
		"and a step to another host is a host difference. Loss parity compares the first runs of the two batches when they used the same data and seed."
}

func parityCell(lp *LossParity) string {
	if lp == nil {
		return "—"
	}
	v := "parity"
	if lp.Diverged {
		v = "DIVERGED"
	}
	return fmt.Sprintf("%s: tail gap %s%% over the last %s (largest step gap %s%% at step %d)", v, num(100*lp.TailGap, 2), Plural(lp.TailSteps, "step"), num(100*lp.MaxGap, 2), lp.AtStep)
}

func batchDate(b *HistoryBatch) string {
	return b.Start.UTC().Format("2006-01-02 15:04") + " UTC"
}

// writeHistory writes report.md's History section (nothing when no
// workload has two batches).
func (r *Report) writeHistory(m md) {
	if r.History == nil {
		return
	}
	m.p("\n## History\n\n%s\n", mdEscape(r.History.Method()))
	for _, s := range r.History.Series {
		m.p("\n### %s\n\n", mdEscape(s.Label))
		m.header("batch", "started", "host", "stack", "runs", "tokens/s/GPU")
		for i, b := range s.Batches {
			m.row(fmt.Sprint(i+1), batchDate(b), b.Host, b.Stack.Short(), fmt.Sprint(len(b.Runs)), summaryCI(b.TPS))
		}
		m.p("\n")
		m.header("step", "kind", "what changed", "later ÷ earlier", "verdict", "loss parity")
		for _, st := range s.Steps {
			m.row(fmt.Sprintf("%d → %d", s.index(st.From), s.index(st.To)), st.Kind, dashIfEmpty(strings.Join(st.Changed, "; ")), ratioCI(st.Ratio), st.Phrase()+" ("+st.Why+")", parityCell(st.Parity))
		}
		if len(s.Undated) > 0 {
			m.p("\nNot placed (no provenance.started_at): %s\n", mdEscape(strings.Join(s.Undated, ", ")))
		}
	}
}

func (s *HistorySeries) index(b *HistoryBatch) int {
	for i, x := range s.Batches {
		if x == b {
			return i + 1
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

// ConsoleHistory writes the history for the terminal: per workload, each
// step with its ratio, interval and verdict. It writes nothing when no
// workload has two batches.
func (r *Report) ConsoleHistory(w io.Writer) {
	if r.History == nil {
		return
	}
	fmt.Fprintf(w, "history (threshold %s%%):\n", num(100*r.History.Threshold, 1))
	for _, s := range r.History.Series {
		fmt.Fprintf(w, "  %s\n", s.Label)
		for i, b := range s.Batches {
			fmt.Fprintf(w, "    %d. %s on %s: %s, n=%d, %s tokens/s/GPU\n", i+1, batchDate(b), b.Host, b.Stack.Short(), len(b.Runs), summaryCI(b.TPS))
		}
		for _, st := range s.Steps {
			fmt.Fprintf(w, "    %d → %d [%s]: %s, %s\n", s.index(st.From), s.index(st.To), st.Kind, ratioCI(st.Ratio), st.Phrase())
			if len(st.Changed) > 0 {
				fmt.Fprintf(w, "      changed: %s\n", strings.Join(st.Changed, "; "))
			}
			if st.Parity != nil {
				fmt.Fprintf(w, "      loss: %s\n", parityCell(st.Parity))
			}
		}
	}
}

// WriteHistoryMarkdown writes history.md: the History section alone, with
// the anchors' lines for the same results.
func (r *Report) WriteHistoryMarkdown(w io.Writer) error {
	m := md{bufio.NewWriter(w)}
	m.p("# Rival history report\n\n")
	if r.History == nil {
		m.p("No workload was measured on more than one software stack, host or date: nothing to compare over time.\n")
	}
	r.writeHistory(m)
	r.writeAnchors(m)
	return m.w.Flush()
}

// anchorsHTML writes the measured ÷ published lines of report.html, when a
// group ran an anchor's workload.
func (h *htmlWriter) anchors() {
	lines := h.rep.AnchorLines()
	if len(lines) == 0 {
		return
	}
	h.p("<h2 id=\"anchors\">Published anchors</h2>\n<ul>\n")
	for _, l := range lines {
		h.p("<li>%s<br><small>%s</small></li>\n", e(l.Text()), e(l.Anchor.Record()))
	}
	h.p("</ul>\n")
}
