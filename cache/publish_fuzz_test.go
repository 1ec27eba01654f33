package cache

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseTemp: ParseTemp accepts exactly the names TempPattern makes for
// base (any pid, any digits), and reports the pid they carry.
func FuzzParseTemp(f *testing.F) {
	f.Add("big.bin", ".big.bin"+TempMarker+"123~456")
	f.Add("big.bin", "big.bin.tmpl_notes.txt")
	f.Add("big.docs", ".big.docs.tmp-77")
	f.Add("x", ".x"+TempMarker+"~1")
	f.Add("x", ".x"+TempMarker+"0~1")
	f.Fuzz(func(t *testing.T, base, name string) {
		pid, ok := ParseTemp(base, name)
		if !ok {
			return
		}
		if pid <= 0 {
			t.Fatalf("%q: pid %d", name, pid)
		}
		rest, found := strings.CutPrefix(name, "."+base+TempMarker)
		if !found {
			t.Fatalf("%q accepted without the marker", name)
		}
		p, random, _ := strings.Cut(rest, "~")
		if n, err := strconv.Atoi(p); err != nil || n != pid || !allDigits(random) {
			t.Fatalf("%q: parsed pid %d from %q, random %q", name, pid, p, random)
		}
	})
}

// A name TempPattern makes parses back to this process.
func TestTempPatternParses(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{"big.bin", "a b.idx", "x~y.json"} {
		f, err := os.CreateTemp(dir, TempPattern(base))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		name := f.Name()[len(dir)+1:]
		pid, ok := ParseTemp(base, name)
		if !ok || pid != os.Getpid() {
			t.Fatalf("%q: got %d %v, want this process %d", name, pid, ok, os.Getpid())
		}
		if _, ok := ParseTemp("other"+base, name); ok {
			t.Fatalf("%q parsed for another base", name)
		}
	}
}
