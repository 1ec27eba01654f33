package hub

import (
	"testing"
)

// FuzzParseContentRange: any header value gives ok=false or a range that
// makes sense (a start that is not negative and lies before a known total).
func FuzzParseContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-99/200", "bytes */200", "bytes 100-199/*", "bytes 5-1/3", "bytes -1-2/3", "bytes 9223372036854775807-9223372036854775807/9223372036854775807", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		start, total, ok := parseContentRange(v)
		if !ok {
			return
		}
		if start < 0 || total < -1 {
			t.Fatalf("%q: start %d total %d", v, start, total)
		}
	})
}
