package tokenizer

import (
	"sort"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// NFC as the reference computes it: canonical composition with Unicode 9.0 data
// and no stream-safe limit on runs of combining marks.
//
// golang.org/x/text/unicode/norm knows Unicode 15.0 and, following UAX #15's
// stream-safe format, inserts U+034F after 30 combining marks in a row. Both
// differ from the reference. Normalization data of characters that existed in
// 9.0 never changes (Unicode's stability policy), so this file takes per-character
// data (decompositions, combining classes) from x/text, treats every character
// assigned after 9.0 as an inert starter (as a 9.0 normalizer sees an unassigned
// code point), and runs the composition algorithm itself. Text that x/text already
// calls normalized and that holds only 9.0 characters skips all of it.

// appendNFC appends the NFC form of s to dst. A character of the stable table
// starts an NFC segment (nothing before it composes with it or reorders past
// it), so s is normalized a segment at a time, and only the segments that
// hold a character outside the table are looked at.
func appendNFC(dst []byte, s string) []byte {
	// s may share memory with dst's spare capacity (the tokenizer's buffers),
	// so nothing is written to dst until all of s has been read.
	var out []byte
	done := 0 // s[:done] is in out
	for seg := range unstableSegments(s) {
		if seg.whole {
			if isNFC9Full(s) {
				return append(dst, s...)
			}
			return composeNFC(dst, s)
		}
		part := s[seg.start:seg.end]
		if isNFC9Full(part) {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(s)+len(s)/8)
		}
		out = append(out, s[done:seg.start]...)
		out = composeNFC(out, part)
		done = seg.end
	}
	if out == nil {
		return append(dst, s...)
	}
	out = append(out, s[done:]...)
	return append(dst, out...)
}

// isNFC9 reports whether s is already NFC for the reference: text made only of
// ASCII and of characters in the stable table (most scripts' letters, CJK,
// punctuation) is, whatever their order; a segment holding another character
// takes the full check.
func isNFC9(s string) bool {
	for seg := range unstableSegments(s) {
		if seg.whole {
			return isNFC9Full(s)
		}
		if !isNFC9Full(s[seg.start:seg.end]) {
			return false
		}
	}
	return true
}

// segment is s[start:end]: a stable character (or the start of s) and the run
// of characters outside the stable table after it; whole asks for all of s to
// be checked at once (s is not valid UTF-8).
type segment struct {
	start, end int
	whole      bool
}

// unstableSegments yields, in order, the NFC segments of s that hold a
// character outside the stable table.
func unstableSegments(s string) func(yield func(segment) bool) {
	return func(yield func(segment) bool) {
		t := stableTable()
		stable := func(i int) (bool, int, bool) { // stable?, width, valid?
			if s[i] < utf8.RuneSelf {
				return true, 1, true
			}
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError {
				return false, n, false
			}
			return r < 1<<16 && t[r>>6]&(1<<(r&63)) != 0, n, true
		}
		last := 0 // where the last stable character starts
		for i := 0; i < len(s); {
			ok, n, valid := stable(i)
			if !valid {
				yield(segment{whole: true})
				return
			}
			if ok {
				last = i
				i += n
				continue
			}
			j := i + n
			for j < len(s) {
				ok, m, valid := stable(j)
				if !valid {
					yield(segment{whole: true})
					return
				}
				if ok {
					break
				}
				j += m
			}
			if !yield(segment{start: last, end: j}) {
				return
			}
			i = j
		}
	}
}

// isNFC9Full is isNFC9 without the stable table: x/text's quick check, after
// refusing characters assigned after 9.0.
func isNFC9Full(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return true
	}
	for _, r := range s {
		if r >= 0x300 && !assignedIn9(r) {
			return false
		}
	}
	return norm.NFC.IsNormalString(s)
}

var (
	stableOnce sync.Once
	stableBits [1 << 16 / 64]uint64
)

// stableTable is the set of BMP characters (a bit each) that NFC leaves alone
// next to any neighbour: assigned in 9.0, combining class 0, not combining with
// what precedes (NFC_QC is not Maybe) and their own NFC (NFC_QC is not No). A
// string of such characters passes UAX #15's quick check with YES. Built once,
// on first use, from x/text's data (a few milliseconds).
func stableTable() *[1 << 16 / 64]uint64 {
	stableOnce.Do(func() {
		for r := rune(0x80); r < 1<<16; r++ {
			if (r >= 0xD800 && r <= 0xDFFF) || r == utf8.RuneError || (r >= 0x300 && !assignedIn9(r)) {
				continue
			}
			s := string(r)
			p := norm.NFC.PropertiesString(s)
			if p.CCC() != 0 || !p.BoundaryBefore() || !norm.NFC.IsNormalString(s) {
				continue
			}
			stableBits[r>>6] |= 1 << (r & 63)
		}
	})
	return &stableBits
}

// inert reports whether a 9.0 normalizer leaves r alone and treats it as a starter.
func inert(r rune) bool { return r < 0xC0 || !assignedIn9(r) }

type cmark struct {
	r   rune
	ccc uint8
}

// composeNFC decomposes s canonically, orders combining marks, then composes.
func composeNFC(dst []byte, s string) []byte {
	comp := compositions()
	var buf [utf8.UTFMax * 18]byte
	seq := make([]cmark, 0, len(s))
	for _, r := range s {
		if inert(r) {
			seq = append(seq, cmark{r: r})
			continue
		}
		d := norm.NFD.AppendString(buf[:0], string(r))
		for len(d) > 0 {
			dr, n := utf8.DecodeRune(d)
			seq = append(seq, cmark{r: dr, ccc: norm.NFD.PropertiesString(string(dr)).CCC()})
			d = d[n:]
		}
	}
	// Canonical ordering: stable sort of every run of non-starters by class.
	for i := 0; i < len(seq); {
		if seq[i].ccc == 0 {
			i++
			continue
		}
		j := i
		for j < len(seq) && seq[j].ccc != 0 {
			j++
		}
		run := seq[i:j]
		sort.SliceStable(run, func(a, b int) bool { return run[a].ccc < run[b].ccc })
		i = j
	}
	// Canonical composition.
	out := seq[:0]
	starter := -1
	var last uint8 // class of the last character kept after the starter
	for k := 0; k < len(seq); k++ {
		ch := seq[k]
		if starter >= 0 && (len(out)-1 == starter || last != 0 && last < ch.ccc) {
			if p, ok := comp[uint64(out[starter].r)<<21|uint64(ch.r)]; ok {
				out[starter].r = p
				continue
			}
		}
		if ch.ccc == 0 {
			starter = len(out)
		}
		last = ch.ccc
		out = append(out, ch)
	}
	for _, ch := range out {
		dst = utf8.AppendRune(dst, ch.r)
	}
	return dst
}

var (
	compOnce  sync.Once
	compTable map[uint64]rune
)

// compositions maps a (starter, next) pair to its primary composite, for every
// composite that existed in Unicode 9.0. Built once, on first use, from x/text:
// a character is a primary composite when it decomposes and NFC keeps it.
func compositions() map[uint64]rune {
	compOnce.Do(func() {
		compTable = make(map[uint64]rune, 14000)
		var buf [64]byte
		for r := rune(0xC0); r <= 0x2FFFF; r++ { // no composite lies beyond
			if (r >= 0xD800 && r <= 0xDFFF) || !assignedIn9(r) {
				continue
			}
			s := string(r)
			if norm.NFD.PropertiesString(s).Decomposition() == nil && !(r >= 0xAC00 && r <= 0xD7A3) {
				continue
			}
			if norm.NFC.String(s) != s {
				continue // excluded from composition
			}
			d := []rune(string(norm.NFD.AppendString(buf[:0], s)))
			if len(d) < 2 {
				continue
			}
			first := []rune(norm.NFC.String(string(d[:len(d)-1])))
			if len(first) != 1 {
				continue
			}
			compTable[uint64(first[0])<<21|uint64(d[len(d)-1])] = r
		}
	})
	return compTable
}
