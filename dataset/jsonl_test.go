package dataset

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
		{`{"text": "unterminated}`, "", "malformed JSON: unexpected end of JSON input"},
		{`{"text": "a"} {"text": "b"}`, "", "malformed JSON: invalid character '{' after top-level value"},
		{`{"text": "a",}`, "", "malformed JSON"},
		{`{"text": NaN}`, "", "malformed JSON"},
		{"{\"text\": \"bad \xff byte\"}", "", "invalid UTF-8 at byte 14"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			got, err := textField([]byte(tc.line))
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

func FuzzTextField(f *testing.F) {
	for _, s := range []string{`{"text": "a"}`, `{"a": [1, {"b": "}"}], "text": "x\"y"}`, `{"t\u0065xt": "k"}`, `[1]`, `{"text": 1}`, `{"text": "a", "text": "\u00e9"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := textField(line)
		if !utf8.Valid(line) {
			require.Error(t, err)
			return
		}
		want, ok := reference(line)
		require.Equal(t, ok, err == nil, "line %q: reference ok=%v, textField err=%v", line, ok, err)
		if ok {
			require.Equal(t, want, got, "line %q", line)
		}
	})
}
