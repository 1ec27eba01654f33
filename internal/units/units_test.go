package units

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSizeAndAge(t *testing.T) {
	sizes := map[string]int64{"500MB": 500e6, "20GiB": 20 << 30, "1.5T": 3 << 39, "1024": 1024, "2 kib": 2048}
	for in, want := range sizes {
		got, err := ParseSize(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseSize("lots")
	assert.ErrorContains(t, err, "not a size")
	ages := map[string]time.Duration{"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute}
	for in, want := range ages {
		got, err := ParseAge(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err = ParseAge("-1d")
	assert.ErrorContains(t, err, "not an age")
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 30: "5.0 GiB"} {
		assert.Equal(t, want, Bytes(n), n)
	}
}
