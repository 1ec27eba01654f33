package tokenizer

import "unicode/utf8"

// The two split patterns this package implements by hand. Go's regexp cannot run
// them: they use a lookahead, and their \s and \p{L}/\p{N} are Unicode 16.0 while
// Go's are ASCII and 15.0. The test suite checks these scanners against a slow
// formulation built from Go regexps (see split_oracle_test.go).
const (
	// patternLlama3 is Llama 3's pattern: numbers split into groups of up to three.
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternQwen2 is Qwen 2's pattern: every number character on its own.
	patternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// splitter cuts text into the pieces the pattern would match, in order. The
// patterns match every character (their last alternative is \s+, and every other
// character is a letter, a number or matched by the punctuation branch), so the
// pieces tile the text.
type splitter struct {
	maxDigits int // 3 for Llama 3, 1 for Qwen 2
}

// next returns the end of the piece that starts at s[i]; i < len(s).
func (sp splitter) next(s string, i int) int {
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if s[i] == '\'' {
		if n := contraction(s[i+1:]); n > 0 {
			return i + 1 + n
		}
	}
	c, n := classAt(s, i)
	switch c {
	case clsLetter: // \p{L}+ (the optional prefix matched nothing)
		return scanClass(s, i+n, clsLetter)
	case clsNumber: // \p{N}{1,max}
		j := i + n
		for k := 1; k < sp.maxDigits && j < len(s); k++ {
			c2, n2 := classAt(s, j)
			if c2 != clsNumber {
				break
			}
			j += n2
		}
		return j
	}
	// [^\r\n\p{L}\p{N}]\p{L}+
	if c != clsNewline && i+n < len(s) {
		if c2, n2 := classAt(s, i+n); c2 == clsLetter {
			return scanClass(s, i+n+n2, clsLetter)
		}
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	j := -1
	if c == clsOther {
		j = i
	} else if s[i] == ' ' && i+1 < len(s) {
		if c2, _ := classAt(s, i+1); c2 == clsOther {
			j = i + 1
		}
	}
	if j >= 0 {
		j = scanClass(s, j, clsOther)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// c is whitespace. Find the whole run and its last \r or \n.
	end, lastNL := i, -1
	for end < len(s) {
		c2, n2 := classAt(s, end)
		if c2 == clsNewline {
			lastNL = end
		} else if c2 != clsSpace {
			break
		}
		end += n2
	}
	// \s*[\r\n]+ : greedy \s* backs off to the last line break in the run.
	if lastNL >= 0 {
		return lastNL + 1
	}
	// \s+(?!\S) : the whole run at the end of the text, else all but its last
	// character; a single character before a non-space falls to \s+.
	if end == len(s) {
		return end
	}
	_, last := utf8.DecodeLastRuneInString(s[i:end])
	if end-last > i {
		return end - last
	}
	return end
}

// scanClass advances from j over characters of class c.
func scanClass(s string, j int, c uint8) int {
	for j < len(s) {
		b := s[j]
		if b < utf8.RuneSelf {
			if bmpClass[b] != c {
				return j
			}
			j++
			continue
		}
		c2, n2 := classAt(s, j)
		if c2 != c {
			return j
		}
		j += n2
	}
	return j
}

// contraction returns the length of the contraction suffix ('s, 't, 're, 've,
// 'm, 'll, 'd, ASCII letters in any case) at the start of s, or 0.
func contraction(s string) int {
	if len(s) == 0 {
		return 0
	}
	lower := func(b byte) byte { return b | 0x20 }
	switch lower(s[0]) {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if len(s) > 1 && lower(s[1]) == 'e' {
			return 2
		}
	case 'l':
		if len(s) > 1 && lower(s[1]) == 'l' {
			return 2
		}
	}
	return 0
}
