package tokenizer

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The stable table is a shortcut: on every BMP character alone, on every character after and
// before a letter that composes with marks, and on random strings of characters in and out of the
// table, isNFC9 answers as the full check does.
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
		for _, s := range []string{string(r), "e" + string(r), string(r) + "e", "\u1100" + string(r), string(r) + "\u0301"} {
			require.Equal(t, isNFC9Full(s), isNFC9(s), "%U in %+q", r, s)
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
		for range 1 + rng.IntN(6) {
			buf = utf8.AppendRune(buf, chars[rng.IntN(len(chars))])
		}
		s := string(buf)
		require.Equal(t, isNFC9Full(s), isNFC9(s), "%+q", s)
	}
	// Invalid UTF-8 takes the full check.
	for _, s := range []string{"\xff", "a\xc3", "\xe4\xb8", "日\x80本"} {
		require.Equal(t, isNFC9Full(s), isNFC9(s), "%+q", s)
	}
}
