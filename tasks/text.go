package tasks

import (
	"strings"

	"github.com/rivalbench/rival/english"
)

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func truncateLine(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// plural is "1 result", "6 results".
func plural(n int, noun string) string {
	return english.Plural(n, noun)
}

// strOrEmpty is *p, or "" for nil.
func strOrEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
