package jsonl

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTextField(t *testing.T) {
	for _, tc := range []struct {
		line, want, err string
	}{
		{`{"text": "hello"}`, "hello", ""},
		{"{\"text\": \"hello\"}\r\n", "hello", ""},
		{`{"id": 3, "meta": {"a": [1, "}", {"text": 5}]}, "text": "x\ny"}`, "x\ny", ""},
		{`{"text": "a\u00e9\ud83d\ude00\"\\"}`, "a\u00e9\U0001F600\"\\", ""},
		{`{"text": "first", "text": "last"}`, "last", ""},
		{`{"t\u0065xt": "escaped key"}`, "escaped key", ""},
		{`{"text": ""}`, "", ""},
		{`  {"text":"é"}  `, "é", ""},
		{`{"Text": "case matters"}`, "", `no "text" field`},
		{`{"texts": "x"}`, "", `no "text" field`},
		{`{}`, "", `no "text" field`},
		{`{"text": 5}`, "", `"text" is a JSON number, not a string`},
		{`{"text": null}`, "", `"text" is a JSON null, not a string`},
		{`{"text": ["a", "b"]}`, "", `"text" is a JSON array, not a string`},
		{`{"text": {"a": 1}}`, "", `"text" is a JSON object, not a string`},
		{`{"text": true}`, "", `"text" is a JSON boolean, not a string`},
		{`["text"]`, "", "the line is a JSON array, not an object"},
		{`"text"`, "", "the line is a JSON string, not an object"},
		{``, "", "empty line"},
		{"  \r", "", "empty line"},
		{`{"text": "unterminated}`, "", "malformed JSON: unexpected end of line (unterminated string)"},
		{`{"text": "a"} {"text": "b"}`, "", "malformed JSON at byte 14: expected the end of the line after the JSON value, found '{'"},
		{`{"text": "a",}`, "", "malformed JSON"},
		{`{"text": NaN}`, "", "malformed JSON at byte 9: expected a JSON value, found 'N'"},
		{`{"a": 01, "text": "x"}`, "", "malformed JSON"},
		{`{"a": 1.e5, "text": "x"}`, "", "malformed JSON"},
		{`{"a": -1.5E+3, "b": [true, false, null, {}, []], "text": "x"}`, "x", ""},
		{"{\"text\": \"tab\tinside\"}", "", "control character in a string"},
		{`{"text": "\x"}`, "", "invalid escape"},
		{`{"text": "\u12"}`, "", `expected four hex digits after \u`},
		{`{"text": "lone \ud800 surrogate"}`, "lone \uFFFD surrogate", ""},
		{`{"text": "pair \uD83D\uDE00"}`, "pair \U0001F600", ""},
		{`{"text": "a"`, "", "malformed JSON"},
		{`{"text" "a"}`, "", "expected ':'"},
		{`{text: "a"}`, "", "expected a string key"},
		{"{\"text\": \"bad \xff byte\"}", "", "invalid UTF-8 at byte 14"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, err := Text([]byte(tc.line))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// reference decodes with encoding/json's map decoding, whose key matching
// is exact, as Python's is.
func reference(line []byte) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || m == nil {
		return "", false
	}
	raw, ok := m["text"]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || raw[0] != '"' {
		return "", false
	}
	return s, true
}

func FuzzText(f *testing.F) {
	for _, s := range []string{`{"text": "a"}`, `{"a": [1, {"b": "}"}], "text": "x\"y"}`, `{"t\u0065xt": "k"}`, `[1]`, `{"text": 1}`, `{"text": "a", "text": "\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := Text(line)
		if !utf8.Valid(line) || !json.Valid(line) {
			require.Error(t, err, "line %q", line)
			return
		}
		want, ok := reference(line)
		require.Equal(t, ok, err == nil, "line %q: reference ok=%v, textField err=%v", line, ok, err)
		if ok {
			require.Equal(t, want, got, "line %q", line)
		}
	})
}

func naivePlainRun(b []byte) int {
	for i, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(b)
}

func TestPlainRun(t *testing.T) {
	for _, s := range []string{"", "abc", "abcdefgh", "abcdefghij\"", "é日本語😀 plain text here\x1f", "\x00", "0123456789abcde\\", "\xff\xfe\x80\x9f\xa2\xdc x"} {
		assert.Equal(t, naivePlainRun([]byte(s)), plainRun([]byte(s)), "%q", s)
	}
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 17; pos++ {
			b := []byte("aaaaaaaaaaaaaaaaa")
			b[pos] = byte(c)
			require.Equal(t, naivePlainRun(b), plainRun(b), "byte %#x at %d", c, pos)
		}
	}
}

func FuzzPlainRun(f *testing.F) {
	f.Add([]byte("abcdefgh\"ijk"))
	f.Fuzz(func(t *testing.T, b []byte) {
		require.Equal(t, naivePlainRun(b), plainRun(b))
	})
}
