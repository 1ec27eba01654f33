package compare

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/rivalbench/rival/english"
)

// Console writes a compact summary for the terminal.
func (r *Report) Console(w io.Writer) {
	fmt.Fprintf(w, "compare: %s, %s, platforms %s\n", english.Plural(len(r.Inputs), "result"), english.Plural(len(r.Groups), "group"), strings.Join(r.Platforms, ", "))
	width := consoleWidth(r.Models)
	for _, m := range r.Models {
		if m.NoComparison != "" {
			fmt.Fprintf(w, "  %s: %s\n", m.Label, m.NoComparison)
		}
		for _, h := range m.Headlines {
			fmt.Fprintf(w, "  %s\n", h.Headline(m.Label))
		}
		for _, g := range m.Groups {
			mfu := "—"
			if g.MFU != nil {
				mfu = num(*g.MFU, 1) + "%"
			}
			fmt.Fprintf(w, "    %-*s n=%-3d %12s tok/s/GPU  MFU %-6s step %s s  [%s]\n", width, consoleName(g, width), g.TPS.N, num(g.TPS.Mean, 0), mfu, num(g.StepMedian, 3), g.Setup)
		}
		for _, lp := range m.FrameworkParity {
			line := "the loss curves share no step"
			if lp.Compared() {
				v, bad := frameworkVerdict(lp)
				if bad {
					v = strings.ToUpper(v[:1]) + v[1:]
					if lp.StepWise.Parted {
						v = fmt.Sprintf("PARTED at step %d", lp.StepWise.PartedAt)
					}
				}
				line = v + ": " + frameworkFigures(lp)
			}
			fmt.Fprintf(w, "  loss step by step, %s vs %s (%s, same batches): %s\n", m.DisplayName(lp.A), m.DisplayName(lp.B), frameworkKind(lp.A, lp.B), line)
		}
		for _, sk := range m.FrameworkSkipped {
			fmt.Fprintf(w, "  loss step by step, %s vs %s (%s): not compared: %s\n", m.DisplayName(sk.A), m.DisplayName(sk.B), frameworkKind(sk.A, sk.B), sk.Why)
		}
		r.consoleHeldOut(w, m)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  ERROR %s: %s: %s\n", e.Source, e.Name, e.Detail)
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "  WARNING %s\n", x)
	}
	for _, s := range r.Skipped {
		if s.Kind == "invalid" {
			fmt.Fprintf(w, "  skipped %s\n", s)
		}
	}
}

// The console's group column is 28 runes, widened up to 48 for longer
// names (a CPU's model in the label) so that two groups alike in their
// first words stay apart; a name longer still is cut at a word boundary.
const (
	consoleMinWidth = 28
	consoleMaxWidth = 48
)

// consoleWidth is the group column's width for the groups of models.
func consoleWidth(models []*ModelSection) int {
	w := consoleMinWidth
	for _, m := range models {
		for _, g := range m.Groups {
			w = max(w, min(utf8.RuneCountInString(g.name()), consoleMaxWidth))
		}
	}
	return w
}

// consoleName is a group's name cut to width at a word boundary, keeping
// the † that marks a group no other matches.
func consoleName(g *Group, width int) string {
	if g.Marked {
		return clipWords(g.Label, width-2) + " †"
	}
	return clipWords(g.Label, width)
}

// ConsoleConfigs writes one line per configuration comparison, after
// Console's summary.
func (r *Report) ConsoleConfigs(w io.Writer) {
	for _, m := range r.Models {
		for _, c := range m.ConfigComparisons() {
			fmt.Fprintf(w, "  %s\n", c.Line(m))
			if lp := c.Parity; lp != nil && lp.Available {
				verdict := "in parity"
				if lp.Diverged {
					verdict = "DIVERGED"
				}
				fmt.Fprintf(w, "    loss: tail-mean gap %.2f%% over the last %d steps (largest step gap %.2f%% at step %d): %s\n", 100*lp.TailGap, lp.TailSteps, 100*lp.MaxGap, lp.AtStep, verdict)
				if lp.StepWise != nil {
					fmt.Fprintf(w, "    loss step by step (same batches): %s\n", stepCell(lp.StepWise))
				}
			}
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
