package logparse

import "strings"

// Hand-written matchers for the expressions on the hot path of every line. Each
// one returns exactly what the regular expression beside it in match_test.go
// returns (FuzzMatchers checks it); Go's regexp runs `\b` and unanchored
// expressions with captures on its backtracker, which cost most of a TorchTitan
// or NeMo parse.

// isSpace is RE2's \s: [\t\n\f\r ].
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

// isWord is RE2's \w: [0-9A-Za-z_].
func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// titanKeys are the alternatives of titanField's first group, in its order.
var titanKeys = [...]string{"step", "loss", "grad_norm", "memory", "tps", "wps", "tflops", "mfu"}

// kv is one key and value of a metrics line.
type kv struct{ key, val string }

// titanFields appends to dst the (key, value) pairs that
// `\b(step|loss|grad_norm|memory|tps|wps|tflops|mfu):\s*(\S+)` finds in s, in order,
// as FindAllStringSubmatch does.
func titanFields(dst []kv, s string) []kv {
	for i := 0; i < len(s); {
		if !isWord(s[i]) {
			i++
			continue
		}
		// s[i] starts a word (\b): every key is tried here, and none inside the word
		key := ""
		switch s[i] {
		case 's', 'l', 'g', 'm', 't', 'w':
			for _, k := range titanKeys {
				if len(s)-i > len(k) && s[i+len(k)] == ':' && s[i:i+len(k)] == k {
					key = k
					break
				}
			}
		}
		if key == "" {
			for i < len(s) && isWord(s[i]) {
				i++
			}
			continue
		}
		j := i + len(key) + 1
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		e := j
		for e < len(s) && !isSpace(s[e]) {
			e++
		}
		if e == j {
			i++
			continue
		}
		dst = append(dst, kv{key, s[j:e]})
		i = e
	}
	return dst
}

// megatronArgMatch is `(?:^|[\s:])([A-Za-z_][A-Za-z0-9_]*) \.{3,} (.*?)\s*$`: an
// argument name after the start, a space or a colon, " ... " and the value with
// trailing white space trimmed.
func megatronArgMatch(s string) (name, value string, ok bool) {
	for from := 0; ; {
		k := strings.Index(s[from:], " ...")
		if k < 0 {
			return "", "", false
		}
		sp := from + k // the space before the dots
		d := sp + 1
		e := d
		for e < len(s) && s[e] == '.' {
			e++
		}
		from = e
		if e-d < 3 || e >= len(s) || s[e] != ' ' {
			continue
		}
		a := sp
		for a > 0 && isWord(s[a-1]) {
			a--
		}
		if a == sp || isDigit(s[a]) || (a > 0 && !isSpace(s[a-1]) && s[a-1] != ':') {
			continue
		}
		rest := s[e+1:]
		end := len(rest)
		for end > 0 && isSpace(rest[end-1]) {
			end--
		}
		if strings.IndexByte(rest[:end], '\n') >= 0 {
			continue // `.` does not match a newline, and `$` is the end of the text
		}
		return s[a:sp], rest[:end], true
	}
}

// digitsAt returns the length of the run of ASCII digits at the start of s.
func digitsAt(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

// headDigits finds the first place at or after from where s holds head, a
// run of ASCII digits, then next. It returns where head starts, where the
// digits start and how many there are; start is -1 when there is none.
func headDigits(s string, from int, head, next string) (start, i, n int) {
	for {
		k := strings.Index(s[from:], head)
		if k < 0 {
			return -1, 0, 0
		}
		start = from + k
		i = start + len(head)
		n = digitsAt(s[i:])
		if n > 0 && strings.HasPrefix(s[i+n:], next) {
			return start, i, n
		}
		from = start + 1
	}
}

// nemoProgressMatch is nemoProgress.FindStringSubmatchIndex:
// `Training epoch (\d+), iteration (\d+)/(\d+)`; it returns nil when s does not match.
func nemoProgressMatch(s string, m *[8]int) []int {
	const head, mid = "Training epoch ", ", iteration "
	for from := 0; ; {
		start, i, n1 := headDigits(s, from, head, mid)
		if start < 0 {
			return nil
		}
		from = start + 1
		j := i + n1 + len(mid)
		n2 := digitsAt(s[j:])
		if n2 == 0 || j+n2 >= len(s) || s[j+n2] != '/' {
			continue
		}
		l := j + n2 + 1
		n3 := digitsAt(s[l:])
		if n3 == 0 {
			continue
		}
		*m = [8]int{start, l + n3, i, i + n1, j, j + n2, l, l + n3}
		return m[:]
	}
}

// rankLabelMatch is rankLabel.FindStringSubmatchIndex:
// `^\s*(?:\[(?:rank|default)(\d+)\]:\s?|(\d+):\s)`; it returns nil when s does not match.
func rankLabelMatch(s string, m *[6]int) []int {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	t := s[i:]
	switch {
	case strings.HasPrefix(t, "[rank") || strings.HasPrefix(t, "[default"):
		d := i + len("[rank")
		if t[1] == 'd' {
			d = i + len("[default")
		}
		n := digitsAt(s[d:])
		if n == 0 || !strings.HasPrefix(s[d+n:], "]:") {
			return nil
		}
		end := d + n + 2
		if end < len(s) && isSpace(s[end]) {
			end++
		}
		*m = [6]int{0, end, d, d + n, -1, -1}
		return m[:]
	case len(t) > 0 && isDigit(t[0]):
		n := digitsAt(t)
		if i+n+1 >= len(s) || s[i+n] != ':' || !isSpace(s[i+n+1]) {
			return nil
		}
		*m = [6]int{0, i + n + 2, -1, -1, i, i + n}
		return m[:]
	}
	return nil
}

// titanMemMatch is titanMem.FindStringSubmatch's groups:
// `^([0-9.]+)GiB\(([0-9.]+)%\)$` ("48.87GiB(51.44%)").
func titanMemMatch(s string) (gib, percent string, ok bool) {
	a := digitsDotsAt(s)
	if a == 0 || !strings.HasPrefix(s[a:], "GiB(") {
		return "", "", false
	}
	t := s[a+len("GiB("):]
	b := digitsDotsAt(t)
	if b == 0 || t[b:] != "%)" {
		return "", "", false
	}
	return s[:a], t[:b], true
}

// digitsDotsAt returns the length of the run of [0-9.] at the start of s.
func digitsDotsAt(s string) int {
	n := 0
	for n < len(s) && (isDigit(s[n]) || s[n] == '.') {
		n++
	}
	return n
}

// memoryHeaderMatch is memoryHeader.FindStringSubmatchIndex:
// `\[Rank (\d+)\] \(after (\d+) iterations\) memory \(([A-Za-z]+)\)`; it returns nil
// when s does not match.
func memoryHeaderMatch(s string, m *[8]int) []int {
	const head, after, unit = "[Rank ", "] (after ", " iterations) memory ("
	for from := 0; ; {
		start, i, n1 := headDigits(s, from, head, after)
		if start < 0 {
			return nil
		}
		from = start + 1
		j := i + n1 + len(after)
		n2 := digitsAt(s[j:])
		if n2 == 0 || !strings.HasPrefix(s[j+n2:], unit) {
			continue
		}
		l := j + n2 + len(unit)
		n3 := 0
		for l+n3 < len(s) && (s[l+n3] >= 'a' && s[l+n3] <= 'z' || s[l+n3] >= 'A' && s[l+n3] <= 'Z') {
			n3++
		}
		if n3 == 0 || l+n3 >= len(s) || s[l+n3] != ')' {
			continue
		}
		*m = [8]int{start, l + n3 + 1, i, i + n1, j, j + n2, l, l + n3}
		return m[:]
	}
}

// sizeFields appends to dst the (name, number) pairs that `([a-z-]+) size: (\d+)`
// finds in s, in order, as FindAllStringSubmatch does: the name is the whole run
// of [a-z-] before " size: ", the number every digit after it.
func sizeFields(dst []kv, s string) []kv {
	const mid = " size: "
	for from := 0; ; {
		k := strings.Index(s[from:], mid)
		if k < 0 {
			return dst
		}
		at := from + k
		from = at + 1
		a := at
		for a > 0 && (s[a-1] >= 'a' && s[a-1] <= 'z' || s[a-1] == '-') {
			a--
		}
		d := at + len(mid)
		n := digitsAt(s[d:])
		if a == at || n == 0 {
			continue
		}
		dst = append(dst, kv{s[a:at], s[d : d+n]})
		from = d + n
	}
}
