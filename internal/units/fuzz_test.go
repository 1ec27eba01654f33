package units

import (
	"testing"
)

// FuzzParseSize: a size that parses is a byte count that is not negative,
// whatever the text (NaN, exponents past int64, units).
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"500MB", "20GiB", "1.5T", "0", "NaN", "1e30TB", "+Inf", "-1", " 7 k ", "9223372036854775807", "9.3e18"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
	})
}

// FuzzParseAge: an age that parses is a duration that is not negative.
func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"30d", "12h", "90m", "0", "NaNd", "1e300d", "-1d", "+Infd", "106751d", "2562047h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseAge(s)
		if err == nil && d < 0 {
			t.Fatalf("ParseAge(%q) = %v", s, d)
		}
	})
}
