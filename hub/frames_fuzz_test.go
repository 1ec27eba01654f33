package hub

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzReadFrames feeds arbitrary bytes to the reader of rival-parquet's output: an error or the
// texts, never a panic, never a text longer than the limit, and the texts framed again read back
// the same (the input itself may spell a length with more bytes than needed).
func FuzzReadFrames(f *testing.F) {
	frame := func(texts ...string) []byte {
		var b []byte
		for _, s := range texts {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		return b
	}
	f.Add(frame("a", "", "\xff\x00"))
	f.Add([]byte{0x80})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(frame("truncated")[:5])
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(data []byte) ([]string, error) {
			var got []string
			n, err := readFrames(bufio.NewReader(bytes.NewReader(data)), 64, func(i int, s string) error {
				if i != len(got) || len(s) > 64 {
					t.Fatalf("text %d of %d bytes after %d texts", i, len(s), len(got))
				}
				got = append(got, s)
				return nil
			})
			if n != len(got) {
				t.Fatalf("n=%d, fn saw %d", n, len(got))
			}
			return got, err
		}
		got, err := read(data)
		if err != nil {
			return
		}
		again, err := read(frame(got...))
		if err != nil || !reflect.DeepEqual(got, again) {
			t.Fatalf("read %q from %q, then %q, %v", got, data, again, err)
		}
	})
}
