package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var streamLines = []string{
	`{"text": "hello"}`,
	"{\"text\": \"hello\"}\r",
	`{"id": 3, "meta": {"a": [1, "}", {"text": 5}]}, "text": "x\ny"}`,
	`{"text": "a\u00e9\ud83d\ude00\"\\"}`,
	`{"t\u0065xt": "escaped key"}`,
	`{"text": ""}`,
	`  {"text":"é"}  `,
	`{"Text": "case matters"}`,
	`{"texts": "x"}`,
	`{"textt": "x", "tex": "y"}`,
	`{}`,
	`{"text": 5}`,
	`{"text": null}`,
	`{"text": ["a", "b"]}`,
	`{"text": {"a": 1}}`,
	`{"text": true}`,
	`{"text": 5, "text": "later string"}`,
	`{"text": "first", "text": 5}`,
	`["text"]`,
	`"text"`,
	`12`,
	``,
	"  \r",
	`{"text": "unterminated}`,
	`{"text": "a"} {"text": "b"}`,
	`{"text": "a",}`,
	`{"text": NaN}`,
	`{"a": 01, "text": "x"}`,
	`{"a": 1.e5, "text": "x"}`,
	`{"a": -1.5E+3, "b": [true, false, null, {}, []], "text": "x"}`,
	`{"a": tru, "text": "x"}`,
	"{\"text\": \"tab\tinside\"}",
	`{"text": "\x"}`,
	`{"text": "\u12"}`,
	`{"text": "\u12`,
	`{"text": "\`,
	`{"text": "lone \ud800 surrogate"}`,
	`{"text": "lone \udc00\ud800\u0041"}`,
	`{"text": "pair \uD83D\uDE00"}`,
	`{"text": "pair at end \uD83D\uDE0`,
	`{"text": "a"`,
	`{"text" "a"}`,
	`{text: "a"}`,
	`{"a": [[[[[[[[1]]]]]]]], "text": "deep"}`,
	`{"a": "é😀", "text": "` + strings.Repeat("long é 😀 text \\u00e9\\ud83d\\ude00 ", 200) + `"}`,
}

// streamOne runs StreamText over line followed by a second line, through a
// reader of the given buffer size, and checks it consumed exactly line.
func streamOne(t *testing.T, line string, size int) (string, error) {
	t.Helper()
	r := bufio.NewReaderSize(strings.NewReader(line+"\n{\"next\": 1}\n"), size)
	var got bytes.Buffer
	n, err := StreamText(r, func(p []byte) error { got.Write(p); return nil }, nil)
	if err == nil {
		require.Equal(t, int64(len(line)+1), n, "consumed")
		rest, _ := r.ReadString('\n')
		require.Equal(t, "{\"next\": 1}\n", rest)
	}
	return got.String(), err
}

// TestStreamTextMatchesText: on every line, StreamText hands on what Text
// returns, or fails with Text's message, whatever the reader's buffer size
// (16 bytes cuts escapes and UTF-8 sequences at every position).
func TestStreamTextMatchesText(t *testing.T) {
	for _, line := range streamLines {
		want, werr := Text([]byte(line))
		for _, size := range []int{16, 17, 19, 4096} {
			got, err := streamOne(t, line, size)
			if werr != nil {
				if err != nil && strings.Contains(err.Error(), `a second "text" key`) {
					continue // documented: Text reports the later value's fault
				}
				require.EqualError(t, err, werr.Error(), "line %q size %d", line, size)
				continue
			}
			require.NoError(t, err, "line %q size %d", line, size)
			require.Equal(t, want, got, "line %q size %d", line, size)
		}
	}
}

// TestStreamTextDifferences: the two documented departures from Text.
func TestStreamTextDifferences(t *testing.T) {
	// A second "text" after a string value was handed on: an error, not "last wins".
	_, err := streamOne(t, `{"text": "first", "text": "last"}`, 4096)
	require.ErrorContains(t, err, `a second "text" key at byte 18`)
	// Invalid UTF-8 after a syntax error: the syntax error, met first, is reported.
	_, err = streamOne(t, "{\"text\": \"a\" x \"\xff\"}", 4096)
	require.ErrorContains(t, err, "malformed JSON at byte 13")
	// Invalid UTF-8 inside the text, at every buffer size.
	for _, size := range []int{16, 18, 4096} {
		_, err = streamOne(t, "{\"text\": \"bad \xe2\x82 byte\"}", size)
		require.EqualError(t, err, "invalid UTF-8 at byte 14")
	}
}

// TestStreamTextPieces: pieces are bounded and a callback error stops the read.
func TestStreamTextPieces(t *testing.T) {
	line := `{"text": "` + strings.Repeat("abcdefgh", 100_000) + `"}`
	r := bufio.NewReaderSize(strings.NewReader(line), 1<<20)
	var total, biggest int
	var progress int64
	_, err := StreamText(r, func(p []byte) error {
		total += len(p)
		biggest = max(biggest, len(p))
		return nil
	}, func(n int64) { progress = n })
	require.NoError(t, err)
	require.Equal(t, 800_000, total)
	require.LessOrEqual(t, biggest, 1<<20)
	require.Greater(t, progress, int64(800_000))
	require.LessOrEqual(t, progress, int64(len(line)))

	stop := errors.New("stop")
	_, err = StreamText(bufio.NewReader(strings.NewReader(line)), func([]byte) error { return stop }, nil)
	require.ErrorIs(t, err, stop)
}

// FuzzStreamText: on any line, StreamText agrees with Text (value or error
// message) except where its documentation says it differs.
func FuzzStreamText(f *testing.F) {
	for _, l := range streamLines {
		f.Add(l, uint8(0))
	}
	f.Fuzz(func(t *testing.T, line string, size uint8) {
		if strings.Contains(line, "\n") {
			return
		}
		want, werr := Text([]byte(line))
		got, err := streamOne(t, line, 16+int(size))
		if werr != nil {
			require.Error(t, err)
			if !strings.Contains(werr.Error(), "UTF-8") && !strings.Contains(err.Error(), `a second "text" key`) {
				require.EqualError(t, err, werr.Error())
			}
			return
		}
		if err != nil && strings.Contains(err.Error(), `a second "text" key`) {
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}
