package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Character classes the split patterns distinguish. \r and \n are whitespace
// that the patterns also name on their own, so they get their own class.
const (
	clsOther   uint8 = iota // anything else: punctuation, symbols, marks, controls
	clsLetter               // \p{L}, Unicode 16.0
	clsNumber               // \p{N}, Unicode 16.0
	clsSpace                // \s (Unicode White_Space) other than \r and \n
	clsNewline              // \r or \n
)

// bmpClass holds the class of every Basic Multilingual Plane code point, so the
// scanners never search a table on the hot path; astral code points (rare) do.
var bmpClass = buildBMPClass()

func buildBMPClass() *[0x10000]uint8 {
	t := new([0x10000]uint8)
	fill := func(ranges []runeRange, c uint8) {
		for _, rg := range ranges {
			if rg.lo > 0xFFFF {
				break
			}
			hi := min(rg.hi, 0xFFFF)
			for r := rg.lo; r <= hi; r++ {
				t[r] = c
			}
		}
	}
	fill(letter16, clsLetter)
	fill(number16, clsNumber)
	for r := rune(0); r <= 0xFFFF; r++ {
		if unicode.IsSpace(r) {
			t[r] = clsSpace
		}
	}
	t['\r'], t['\n'] = clsNewline, clsNewline
	return t
}

// runeClass classifies r the way the reference's regex engine does: letters and
// numbers by Unicode 16.0, whitespace by the White_Space property.
func runeClass(r rune) uint8 {
	if r <= 0xFFFF {
		return bmpClass[r]
	}
	switch {
	case inRanges(letter16, r):
		return clsLetter
	case inRanges(number16, r):
		return clsNumber
	}
	return clsOther // no astral code point is White_Space
}

// classAt returns the class and byte width of the character at s[i]. An invalid
// byte counts as one "other" character, like U+FFFD would.
func classAt(s string, i int) (uint8, int) {
	b := s[i]
	if b < utf8.RuneSelf {
		return bmpClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && n <= 1 {
		return clsOther, 1
	}
	return runeClass(r), n
}

// assignedIn9 reports whether r had been assigned by Unicode 9.0, the version of
// the reference's normalization tables.
func assignedIn9(r rune) bool { return inRanges(assigned9, r) }
