package jsonl

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadLines(t *testing.T) {
	big := strings.Repeat("a", 3<<20)
	stop := errors.New("stop")
	for _, tc := range []struct {
		name  string
		in    string
		lens  []int
		limit int // fn returns stop at this line
		err   error
	}{
		{"crlf, a line over the buffer, no final newline", "x\r\n" + big + "\nlast", []int{1, 3 << 20, 4}, 0, nil},
		{"empty input", "", nil, 0, nil},
		{"blank lines are lines", "\n\n", []int{0, 0}, 0, nil},
		{"fn stops the reading", "a\nb\nc\n", []int{1, 1}, 2, stop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lens []int
			err := ReadLines(strings.NewReader(tc.in), func(n int, line []byte) error {
				assert.Equal(t, len(lens)+1, n)
				lens = append(lens, len(line))
				if n == tc.limit {
					return stop
				}
				return nil
			})
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.lens, lens)
		})
	}
}

// TestDecoderReusesBuffers: a Decoder's result is valid until its next call,
// and reusing it across lines with and without escapes gives the same texts
// as fresh decoding.
func TestDecoderReusesBuffers(t *testing.T) {
	lines := []string{`{"text": "plain"}`, `{"text": "esc\naped"}`, `{"k\u0065y": 1, "text": "é"}`, `{"text": "again \"q\""}`}
	var d Decoder
	for _, l := range lines {
		got, err := d.Text([]byte(l))
		require.NoError(t, err)
		want, err := Text([]byte(l))
		require.NoError(t, err)
		assert.Equal(t, want, strings.Clone(got))
	}
}
