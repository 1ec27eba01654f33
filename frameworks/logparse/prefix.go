package logparse

import (
	"regexp"
	"strings"
)

// Launcher rank labels at the start of a line, torchrun's "[rank3]:" and
// "[default3]:" (--tee / --log-line-prefix) and srun --label's "3: ", are found by
// rankLabelMatch (match.go): `^\s*(?:\[(?:rank|default)(\d+)\]:\s?|(\d+):\s)`.

// primusPrefix is Primus's loguru prefix "[20251202 09:12:08][rank-7/8][INFO ]".
var primusPrefix = regexp.MustCompile(`^\s*\[\d{8} \d{2}:\d{2}:\d{2}\](?:\[[^\]]*\])*?\[rank-(\d+)/(\d+)\]`)

// splitRank removes launcher rank labels (possibly nested) and returns the rank.
func splitRank(s string) (rank int, has bool, rest string) {
	rest = s
	var mbuf [6]int
	for i := 0; i < 3; i++ {
		if len(rest) == 0 || !(rest[0] == '[' || rest[0] == ' ' || rest[0] == '\t' || (rest[0] >= '0' && rest[0] <= '9')) {
			break
		}
		if !maybeRankLabel(rest) {
			break
		}
		m := rankLabelMatch(rest, &mbuf)
		if m == nil {
			break
		}
		digits := ""
		if m[2] >= 0 {
			digits = rest[m[2]:m[3]]
		} else {
			digits = rest[m[4]:m[5]]
		}
		if r, ok := integer(digits); ok {
			rank, has = r, true
		}
		rest = rest[m[1]:]
	}
	return rank, has, strings.TrimLeft(rest, " ")
}

// maybeRankLabel is a cheap test that lets most lines skip rankLabel.
func maybeRankLabel(s string) bool {
	t := trimBlank(s)
	switch {
	case t == "":
		return false
	case t[0] == '[':
		return strings.HasPrefix(t, "[rank") || strings.HasPrefix(t, "[default")
	case t[0] >= '0' && t[0] <= '9':
		i := 0
		for i < len(t) && t[i] >= '0' && t[i] <= '9' {
			i++
		}
		return i < len(t) && t[i] == ':'
	}
	return false
}

// trimBlank is strings.TrimLeft(s, " \t").
func trimBlank(s string) string {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return s[i:]
}
