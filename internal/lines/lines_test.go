package lines

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestLast(t *testing.T) {
	for in, want := range map[string]string{"": "", "one": "one", "a\nb\n\n": "b", "  x \n y  ": "y"} {
		assert.Equal(t, want, Last(in), "%q", in)
	}
}

func TestTruncate(t *testing.T) {
	assert.Equal(t, "short", Truncate("short", 5))
	assert.Equal(t, "abcd…", Truncate("abcdefgh", 5))
	assert.Equal(t, "ééé…", Truncate("éééééé", 4), "counts characters, not bytes")
}

func TestTail(t *testing.T) {
	assert.Equal(t, "c\nd", Tail("a\nb\nc\nd\n", 2))
	assert.Equal(t, "a\nb", Tail("a\nb", 5))
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"llama":                      "llama",
		"NVIDIA H100 80GB · 700 W":   "NVIDIA H100 80GB · 700 W",
		"a\x1b[2Jb":                  `a\x1b[2Jb`,
		"ok\r\nFORGED LINE":          `ok\r\nFORGED LINE`,
		"col\tshift":                 `col\tshift`,
		"\x7f\u0085":                 `\x7f\u0085`,
		"abc\u202eevil":              `abc\u202eevil`,
		"bad \xff byte":              `bad \xff byte`,
		"replacement \uFFFD is kept": "replacement \uFFFD is kept",
	} {
		assert.Equal(t, want, Printable(in), "%q", in)
	}
}

// Whatever comes in, what comes out holds nothing a terminal acts on and is valid UTF-8.
func FuzzPrintable(f *testing.F) {
	f.Add("a\x1b[2Jb\r\n\xff\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := Printable(s)
		if !utf8.ValidString(out) {
			t.Fatalf("%q gave invalid UTF-8 %q", s, out)
		}
		for _, r := range out {
			if needsEscape(r) {
				t.Fatalf("%q kept %U in %q", s, r, out)
			}
		}
	})
}
