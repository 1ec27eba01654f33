package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON reader for the two large parts of a tokenizer.json, the vocabulary
// and the merges (hundreds of thousands of entries), which encoding/json reads
// several times slower through reflection. Everything else goes through
// encoding/json. Every read is bounds-checked: bad input is an error with the
// byte offset, never a panic.
type jsonReader struct {
	data []byte
	pos  int
	buf  []byte
}

func (r *jsonReader) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", r.pos, fmt.Sprintf(format, args...))
}

func (r *jsonReader) skipSpace() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (r *jsonReader) peek() byte {
	r.skipSpace()
	if r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

func (r *jsonReader) expect(c byte) error {
	if r.peek() != c {
		if r.pos >= len(r.data) {
			return r.errorf("unexpected end of input, want %q", c)
		}
		return r.errorf("want %q, found %q", c, r.data[r.pos])
	}
	r.pos++
	return nil
}

// str reads a JSON string. The result aliases an internal buffer when the
// string has escapes; callers copy what they keep.
func (r *jsonReader) str() ([]byte, error) {
	if err := r.expect('"'); err != nil {
		return nil, err
	}
	start := r.pos
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		if c == '"' {
			r.pos++
			return r.data[start : r.pos-1], nil
		}
		if c == '\\' {
			return r.escapedStr(start)
		}
		if c < 0x20 {
			return nil, r.errorf("control character in string")
		}
		r.pos++
	}
	return nil, r.errorf("unterminated string")
}

func (r *jsonReader) escapedStr(start int) ([]byte, error) {
	b := append(r.buf[:0], r.data[start:r.pos]...)
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		switch {
		case c == '"':
			r.pos++
			r.buf = b
			return b, nil
		case c < 0x20:
			return nil, r.errorf("control character in string")
		case c != '\\':
			b = append(b, c)
			r.pos++
			continue
		}
		if r.pos+1 >= len(r.data) {
			return nil, r.errorf("unterminated escape")
		}
		e := r.data[r.pos+1]
		r.pos += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			u, err := r.hex4()
			if err != nil {
				return nil, err
			}
			ru := rune(u)
			if utf16.IsSurrogate(ru) {
				ru = utf8.RuneError // a lone surrogate, as encoding/json reads it
				if r.pos+6 <= len(r.data) && r.data[r.pos] == '\\' && r.data[r.pos+1] == 'u' {
					save := r.pos
					r.pos += 2
					lo, err := r.hex4()
					if err == nil {
						if d := utf16.DecodeRune(rune(u), rune(lo)); d != utf8.RuneError {
							ru = d
						} else {
							r.pos = save
						}
					} else {
						r.pos = save
					}
				}
			}
			b = utf8.AppendRune(b, ru)
		default:
			return nil, r.errorf("invalid escape \\%c", e)
		}
	}
	return nil, r.errorf("unterminated string")
}

func (r *jsonReader) hex4() (uint16, error) {
	if r.pos+4 > len(r.data) {
		return 0, r.errorf("truncated \\u escape")
	}
	v, err := strconv.ParseUint(string(r.data[r.pos:r.pos+4]), 16, 16)
	if err != nil {
		return 0, r.errorf("invalid \\u escape")
	}
	r.pos += 4
	return uint16(v), nil
}

// integer reads a non-negative integer that fits an id.
func (r *jsonReader) integer() (int, error) {
	r.skipSpace()
	start, v := r.pos, 0
	for r.pos < len(r.data) && r.data[r.pos] >= '0' && r.data[r.pos] <= '9' {
		v = v*10 + int(r.data[r.pos]-'0')
		r.pos++
		if v > maxID {
			return 0, r.errorf("id out of range (at most %d)", maxID)
		}
	}
	if r.pos == start {
		return 0, r.errorf("want a non-negative integer id")
	}
	if r.pos < len(r.data) && (r.data[r.pos] == '.' || r.data[r.pos] == 'e' || r.data[r.pos] == 'E') {
		return 0, r.errorf("want an integer id")
	}
	return v, nil
}

// skipValue skips any JSON value and returns its bytes.
func (r *jsonReader) skipValue() (json.RawMessage, error) {
	r.skipSpace()
	start := r.pos
	depth := 0
	for {
		if r.pos >= len(r.data) {
			return nil, r.errorf("unexpected end of input")
		}
		switch c := r.data[r.pos]; c {
		case '"':
			if _, err := r.str(); err != nil {
				return nil, err
			}
		case '{', '[':
			depth++
			r.pos++
		case '}', ']':
			depth--
			r.pos++
			if depth < 0 {
				return nil, r.errorf("unbalanced %q", c)
			}
		default:
			r.pos++
		}
		if depth == 0 {
			// Scalars end at a delimiter.
			if r.data[start] != '"' && r.data[start] != '{' && r.data[start] != '[' {
				for r.pos < len(r.data) {
					c := r.data[r.pos]
					if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\t' || c == '\r' {
						break
					}
					r.pos++
				}
			}
			return r.data[start:r.pos], nil
		}
	}
}

// object calls field for each key of an object; field reads the value.
func (r *jsonReader) object(field func(key string) error) error {
	if err := r.expect('{'); err != nil {
		return err
	}
	if r.peek() == '}' {
		r.pos++
		return nil
	}
	for {
		k, err := r.str()
		if err != nil {
			return err
		}
		if err := r.expect(':'); err != nil {
			return err
		}
		if err := field(string(k)); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.pos++
		case '}':
			r.pos++
			return nil
		default:
			return r.errorf("want ',' or '}' in object")
		}
	}
}

// array calls elem for each element of an array; elem reads the value.
func (r *jsonReader) array(elem func(i int) error) error {
	if err := r.expect('['); err != nil {
		return err
	}
	if r.peek() == ']' {
		r.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := elem(i); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.pos++
		case ']':
			r.pos++
			return nil
		default:
			return r.errorf("want ',' or ']' in array")
		}
	}
}

type typed struct {
	Type string `json:"type"`
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// component reads a component's "type" and then the whole object into v.
func component(raw json.RawMessage, where string, v any) (string, error) {
	var ty typed
	if err := json.Unmarshal(raw, &ty); err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	if ty.Type == "" {
		return "", fmt.Errorf("%s: missing \"type\"", where)
	}
	if v != nil {
		if err := json.Unmarshal(raw, v); err != nil {
			return "", fmt.Errorf("%s (%s): %w", where, ty.Type, err)
		}
	}
	return ty.Type, nil
}
