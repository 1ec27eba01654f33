package lines

import (
	"testing"

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
