package tokenizer

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The oracle: the split patterns written as Go regexps, slow and plain. Go's
// regexp has no lookahead and its \s and \p{L}/\p{N} differ from the reference's,
// so the classes are spelled out from the same Unicode 16.0 tables and the
// White_Space list, and the lookahead branch \s+(?!\S) is done by hand: RE2's
// leftmost-first matching is the same as the reference's backtracking for every
// other branch.

func classSet(ranges []runeRange) string {
	var b strings.Builder
	for _, r := range ranges {
		fmt.Fprintf(&b, `\x{%X}-\x{%X}`, r.lo, r.hi)
	}
	return b.String()
}

// whiteSpace is the Unicode White_Space property (Unicode 16.0, unchanged since 6.3).
const whiteSpace = `\t\n\x{B}\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

type oracle struct {
	head  *regexp.Regexp // every branch before \s+(?!\S)
	space *regexp.Regexp // ^\s+
}

func newOracle(numbers string) oracle {
	L, N := classSet(letter16), classSet(number16)
	head := `^(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]` +
		`|[^\r\n` + L + N + `]?[` + L + `]+` +
		`|[` + N + `]` + numbers +
		`| ?[^` + whiteSpace + L + N + `]+[\r\n]*` +
		`|[` + whiteSpace + `]*[\r\n]+)`
	return oracle{head: regexp.MustCompile(head), space: regexp.MustCompile(`^[` + whiteSpace + `]+`)}
}

var (
	llamaOracle = newOracle("{1,3}")
	qwenOracle  = newOracle("")
)

// pieces splits s the slow way.
func (o oracle) pieces(s string) []string {
	var out []string
	for len(s) > 0 {
		n := 0
		if m := o.head.FindStringIndex(s); m != nil {
			n = m[1]
		} else if m := o.space.FindStringIndex(s); m != nil {
			// \s+(?!\S): the longest run of spaces not followed by a non-space.
			n = m[1]
			if n < len(s) {
				_, last := utf8.DecodeLastRuneInString(s[:n])
				if n-last > 0 {
					n -= last
				}
			}
		} else {
			panic(fmt.Sprintf("oracle: nothing matches at %q", s))
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func scannerPieces(sp splitter, s string) []string {
	var out []string
	for i := 0; i < len(s); {
		j := sp.next(s, i)
		if j <= i {
			panic(fmt.Sprintf("scanner made no progress at %d in %q", i, s))
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

var splitSamples = []string{
	"", "a", "Hello world", "it's", "IT'S", "they'll've", "'s", "''", "' s", "12345", "1234567", "x1y22z333",
	"   ", "a   b", "a \n b", "\n\n\n", "a\r\nb", " \r\n ", "x  ", "x \t\u00a0y", "\u3000\u3000x", "!!! ?? .",
	" !x", "(hello)", "\thello", "\u00a0hello", "\nhello", "٣٤٥ ١", "𝟘𝟙𝟚𝟛", "中文，测试。", "😀😀 😀",
	"e\u0301\u0301x", "a\u2028b\u2029c\u0085d", "end with space ", "\v\fform", "𐌰𐌱 𐌲", "x'\u017f",
}

func TestScannersMatchOracle(t *testing.T) {
	for _, s := range splitSamples {
		require.Equal(t, llamaOracle.pieces(s), scannerPieces(splitter{maxDigits: 3}, s), "llama %q", s)
		require.Equal(t, qwenOracle.pieces(s), scannerPieces(splitter{maxDigits: 1}, s), "qwen %q", s)
	}
}

func FuzzScanners(f *testing.F) {
	for _, s := range splitSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = string(appendValidUTF8(nil, s))
		}
		require.Equal(t, llamaOracle.pieces(s), scannerPieces(splitter{maxDigits: 3}, s), "llama %q", s)
		require.Equal(t, qwenOracle.pieces(s), scannerPieces(splitter{maxDigits: 1}, s), "qwen %q", s)
	})
}
