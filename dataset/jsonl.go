package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// textField extracts the "text" member of one JSONL line with the meaning
// Python's json.loads gives it in tools/preprocess_data.py: the key must be
// exactly "text" (escapes in keys decoded, no case folding), the last of
// duplicate keys wins, the value must be a string, and the line must be
// valid UTF-8 (Python reads the file as strict UTF-8 text).
func textField(line []byte) (string, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return "", errors.New(`empty line; every line must be a JSON object with a "text" string`)
	}
	if !utf8.Valid(line) {
		return "", fmt.Errorf("invalid UTF-8 at byte %d", invalidUTF8At(line))
	}
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return "", fmt.Errorf("malformed JSON: %w", err)
	}
	// The line is valid JSON from here on, so the scanner below only has to
	// find boundaries, not diagnose errors.
	i := skipSpace(line, 0)
	if line[i] != '{' {
		return "", fmt.Errorf(`the line is a JSON %s, not an object with a "text" string`, kind(line[i]))
	}
	var text []byte
	found := false
	i = skipSpace(line, i+1)
	for line[i] != '}' {
		keyEnd := skipString(line, i)
		key := line[i:keyEnd]
		i = skipSpace(line, keyEnd)
		i = skipSpace(line, i+1) // past ':'
		valEnd := skipValue(line, i)
		if isText(key) {
			text, found = line[i:valEnd], true
		}
		i = skipSpace(line, valEnd)
		if line[i] == ',' {
			i = skipSpace(line, i+1)
		}
	}
	if !found {
		return "", errors.New(`no "text" field`)
	}
	if text[0] != '"' {
		return "", fmt.Errorf(`"text" is a JSON %s, not a string`, kind(text[0]))
	}
	inner := text[1 : len(text)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner), nil
	}
	var s string
	if err := json.Unmarshal(text, &s); err != nil {
		return "", fmt.Errorf(`decode "text": %w`, err)
	}
	return s, nil
}

// isText compares a raw JSON key (quotes included) with "text" after
// decoding escapes.
func isText(raw []byte) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == `"text"`
	}
	var k string
	return json.Unmarshal(raw, &k) == nil && k == "text"
}

func kind(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}
