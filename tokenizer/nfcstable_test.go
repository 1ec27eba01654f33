package tokenizer

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// appendNFCWhole is appendNFC without segments: the whole text checked and composed at once.
func appendNFCWhole(dst []byte, s string) []byte {
	if isNFC9Full(s) {
		return append(dst, s...)
	}
	return composeNFC(dst, s)
}

// The stable table and the segments are shortcuts: on every BMP character alone, beside letters
// and marks that compose, and on random strings mixing characters in and out of the table with
// marks, jamo and characters assigned after 9.0, isNFC9 answers as the full check does and
// appendNFC writes what composing the whole text writes.
func TestStableTableAgreesWithTheFullCheck(t *testing.T) {
	var chars []rune
	for r := rune(0); r < 1<<16; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		chars = append(chars, r)
	}
	stable := 0
	for _, r := range chars {
		for _, s := range []string{string(r), "e" + string(r), string(r) + "e", "\u1100" + string(r), string(r) + "\u0301", "a" + string(r) + "\u0323\u0301b"} {
			require.Equal(t, isNFC9Full(s), isNFC9(s), "%U in %+q", r, s)
			require.Equal(t, string(appendNFCWhole(nil, s)), string(appendNFC(nil, s)), "%U in %+q", r, s)
		}
		if t := stableTable(); r >= 0x80 && t[r>>6]&(1<<(r&63)) != 0 {
			stable++
		}
	}
	require.Greater(t, stable, 40000, "most of the BMP is stable (CJK alone is 20,000+)")
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 0, 64)
	for range 200000 {
		buf = buf[:0]
		for range 1 + rng.IntN(12) {
			switch rng.IntN(3) {
			case 0: // any character
				buf = utf8.AppendRune(buf, chars[rng.IntN(len(chars))])
			case 1: // a combining mark, a Hangul jamo or a character after 9.0
				buf = utf8.AppendRune(buf, []rune{0x301, 0x323, 0x1161, 0x11A8, 0x0F71, 0x1FAE1, 0x3099}[rng.IntN(7)])
			default: // a letter that composes
				buf = utf8.AppendRune(buf, []rune("aeoA\u1100\u304b")[rng.IntN(6)])
			}
		}
		s := string(buf)
		require.Equal(t, isNFC9Full(s), isNFC9(s), "%+q", s)
		require.Equal(t, string(appendNFCWhole(nil, s)), string(appendNFC(nil, s)), "%+q", s)
	}
	// Invalid UTF-8 takes the full check.
	for _, s := range []string{"\xff", "a\xc3", "\xe4\xb8", "日\x80本", "e\u0301\xff"} {
		require.Equal(t, isNFC9Full(s), isNFC9(s), "%+q", s)
		require.Equal(t, string(appendNFCWhole(nil, s)), string(appendNFC(nil, s)), "%+q", s)
	}
}
