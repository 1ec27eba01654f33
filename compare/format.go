package compare

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/compare/figure"
)

func num(x float64, prec int) string { return figure.Num(x, prec) }

// sig formats a figure with one decimal, or with three significant digits
// when it is below 10 (a proxy's 0.06 TFLOP/s must not read as 0.1, nor a
// CPU run's 0.02 as 0.0).
func sig(p *float64) string {
	if p == nil {
		return "—"
	}
	if a := math.Abs(*p); a > 0 && a < 10 {
		return strconv.FormatFloat(*p, 'g', 3, 64)
	}
	return num(*p, 1)
}

// frameworkTFCell is the framework's own TFLOP/s as it printed it; a small
// figure printed to one decimal (FSDP's 0.1 for 0.06) is marked, so it is
// not read as twice Rival's.
func frameworkTFCell(p *float64) string {
	if p == nil {
		return "—"
	}
	if a := math.Abs(*p); a > 0 && a < 10 && math.Abs(a*10-math.Round(a*10)) < 1e-9 {
		return num(*p, 1) + " (printed to one decimal)"
	}
	return sig(p)
}

func ptr(p *float64, prec int) string {
	if p == nil {
		return "—"
	}
	return num(*p, prec)
}

func summaryCell(s Summary, prec int) string {
	switch {
	case s.N == 0:
		return "—"
	case s.AllEqual:
		return fmt.Sprintf("%s (%d identical values: spread unknown, no interval)", num(s.Mean, prec), s.N)
	case !s.HasCI:
		return num(s.Mean, prec) + " (single run)"
	}
	return fmt.Sprintf("%s ± %s (SD %s)", num(s.Mean, prec), num(s.Half, prec), num(s.SD, prec))
}

func olympicCell(s Summary, prec int) string {
	if s.MLPerf == nil {
		return fmt.Sprintf("— (needs %d runs)", OlympicMinRuns)
	}
	return num(*s.MLPerf, prec)
}

func mib2gib(p *float64) string {
	if p == nil {
		return "—"
	}
	return num(*p/1024, 1)
}

// truncate cuts s to n runes, the last an ellipsis: for digests,
// fingerprints and host names, which have no words to keep whole.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// clipWords shortens a label to at most n runes by dropping whole words
// from its end and marking the cut with an ellipsis, so that a label never
// ends in part of a word ("CPU (EPYC 7B13) FSDP…", not "… FSDP (ran o…").
// A first word longer than the width is kept whole: a wider column reads
// better than a word cut in two.
func clipWords(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	for k := min(n-1, len(r)-1); k > 0; k-- {
		if !isSpace(r[k]) {
			continue
		}
		// Punctuation left dangling before the cut goes with the dropped words.
		if kept := strings.TrimRight(string(r[:k]), " \u00a0,;:·(–-"); kept != "" {
			return kept + "…"
		}
	}
	if i := strings.IndexFunc(s, isSpace); i > 0 {
		return s[:i] + "…"
	}
	return s
}

// isSpace is a word boundary of a label: a space, or the no-break space
// plot labels use (plotText).
func isSpace(r rune) bool { return r == ' ' || r == '\u00a0' }

// differingCells shortens a fairness row's values to n runes each so that
// the part where they differ stays in view: values that share a long prefix
// (the fsdp trainer's version, then "; ran single …" or "; ran ddp …") start
// with "…" at the field boundary ("; ") before the first difference. With
// whole, a value without such a prefix is kept whole (report.md keeps digests).
func differingCells(vals []string, n int, whole bool) []string {
	out := make([]string, len(vals))
	rs := make([][]rune, len(vals))
	common := -1
	for i, v := range vals {
		rs[i] = []rune(v)
		if i == 0 {
			common = len(rs[0])
			continue
		}
		k := 0
		for k < common && k < len(rs[i]) && rs[i][k] == rs[0][k] {
			k++
		}
		common = k
	}
	for i, r := range rs {
		start := 0
		if common > n/2 && len(r) > n {
			start = max(0, common-8)
			if j := strings.LastIndex(string(r[:common]), "; "); j >= 0 {
				if b := len([]rune(string(r[:common])[:j])); common-b <= n/2 {
					start = b
				}
			}
		}
		switch {
		case start > 0:
			out[i] = truncate("…"+string(r[start:]), n)
		case whole:
			out[i] = string(r)
		default:
			out[i] = truncate(string(r), n)
		}
	}
	return out
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func strOr(p *string, d string) string {
	if p == nil || *p == "" {
		return d
	}
	return *p
}

func intStr(p *int) string {
	if p == nil {
		return unknown
	}
	return fmt.Sprint(*p)
}

const unknown = "unknown"

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// shellQuote quotes s for a POSIX shell when it holds anything but letters,
// digits and -_.,:/+@%=.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.,:/+@%=", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func orDash(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// shortDigest is "sha256:1a2b3c4d5e6f" from a full digest.
func shortDigest(d string) string {
	algo, hex, ok := strings.Cut(d, ":")
	if !ok {
		return truncate(d, 12)
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return algo + ":" + hex
}

func strp(p *string) string {
	if p == nil || *p == "" {
		return "—"
	}
	return *p
}

// String is "1.42× ± 0.03", or "1.42× (...: no interval)".
func (r Ratio) String() string { return r.valueText() + r.noCI() }

func (r Ratio) noCI() string {
	if r.HasCI {
		return ""
	}
	return " (no interval: a side has a single run or identical values)"
}

// valueText is "1.42× ± 0.03", or "1.42×" without an interval.
func (r Ratio) valueText() string {
	if !r.HasCI {
		return fmt.Sprintf("%.2f×", r.Value)
	}
	d := 2
	if r.Half > 0 {
		d = max(2, -int(math.Floor(math.Log10(r.Half))))
	}
	return fmt.Sprintf("%.*f× ± %.*f", d, r.Value, d, r.Half)
}

// CIText is the interval's bounds, "0.989–5.76", with three significant
// digits or as many more as it takes to tell them apart (never "1.2–1.2").
func (r Ratio) CIText() string {
	return boundsText(r.Lo, r.Hi)
}

func boundsText(lo, hi float64) string {
	a, b := strconv.FormatFloat(lo, 'g', 3, 64), strconv.FormatFloat(hi, 'g', 3, 64)
	for p := 4; a == b && p <= 12; p++ {
		a, b = strconv.FormatFloat(lo, 'g', p, 64), strconv.FormatFloat(hi, 'g', p, 64)
	}
	return a + "–" + b
}

// ratioText is the verdict of a ratio on metric, the one wording every
// output uses: "1.42× ± 0.03 tokens/s/GPU", or for an interval that
// includes 1 "no difference shown at 95% in tokens/s/GPU: 3.38× ± 2.39
// (95% CI 0.989–5.76); about 9 runs per side would decide at the observed
// spread".
func ratioText(r Ratio, metric string, runsNeeded int) string {
	if !r.Inconclusive() {
		return r.valueText() + " " + metric + r.noCI()
	}
	return fmt.Sprintf("no difference shown at 95%% in %s: %s (95%% CI %s); %s", metric, r.valueText(), r.CIText(), runsNeededText(runsNeeded))
}

// runsNeededText says how many runs would decide an inconclusive ratio.
func runsNeededText(n int) string {
	switch {
	case n == 0:
		return "no number of runs decides at the observed spread (equal means)"
	case n > MaxRunsNeeded:
		return fmt.Sprintf("more than %s runs per side would be needed to decide at the observed spread", num(MaxRunsNeeded, 0))
	}
	return fmt.Sprintf("about %d runs per side would decide at the observed spread", n)
}

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

// lossText prints a loss as given (3.3, not 3.3000).
func lossText(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
