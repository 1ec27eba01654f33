// Package lines shortens command output and long names for one-line messages: the last line of a
// tool's complaint, the last lines of a failed command, a name cut to fit a progress line; and
// makes text from elsewhere safe to print (Printable).
package lines

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Last is the last non-blank line of s, trimmed.
func Last(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}

// Truncate cuts s to n characters (runes), ending in "…" when it cut.
func Truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Tail is the last n lines of s.
func Tail(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

// Printable is s with every character a terminal would act on instead of show written as a Go
// escape: control characters (ESC, CR, LF, tab, DEL, the C1 set), the bidirectional overrides that
// reorder what follows, and invalid UTF-8. A value from a remote source (a store's annotation, a
// registry's message) goes through it before it reaches a terminal, so it can neither clear the
// screen nor forge a line.
func Printable(s string) string {
	if strings.IndexFunc(s, needsEscape) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case needsEscape(r):
			q := strconv.QuoteRune(r)
			if q == "'"+string(r)+"'" { // printable to strconv, not to a terminal
				q = fmt.Sprintf(`'\u%04x'`, r)
			}
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsEscape(r rune) bool {
	return unicode.IsControl(r) || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x2028 || r == 0x2029
}
