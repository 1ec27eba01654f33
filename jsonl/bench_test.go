package jsonl

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// benchLines are the two shapes of line the decoders see: prose with few
// escapes, and text dense in escapes (\n, \", \uXXXX and surrogate pairs).
var benchLines = []struct {
	name string
	line []byte
}{
	{"plain", []byte(`{"id":"doc-1","text":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 1500) + `","meta":{"n":[1,2.5,-3e2,true,null]}}`)},
	{"escaped", []byte(`{"id":"doc-2","text":"` + strings.Repeat(`line\n\"quoted\" caf\u00e9 \ud83d\ude00 tab\t`, 1500) + `","meta":{"n":[1,2.5,-3e2,true,null]}}`)},
}

func BenchmarkText(b *testing.B) {
	for _, tc := range benchLines {
		b.Run(tc.name, func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(len(tc.line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Text(tc.line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkStreamText(b *testing.B) {
	for _, tc := range benchLines {
		b.Run(tc.name, func(b *testing.B) {
			rd := bytes.NewReader(tc.line)
			br := bufio.NewReaderSize(rd, 64<<10)
			discard := func([]byte) error { return nil }
			b.SetBytes(int64(len(tc.line)))
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(tc.line)
				br.Reset(rd)
				if _, err := StreamText(br, discard, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
