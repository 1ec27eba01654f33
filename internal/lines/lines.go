// Package lines shortens command output and long names for one-line messages: the last line of a
// tool's complaint, the last lines of a failed command, a name cut to fit a progress line.
package lines

import "strings"

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
