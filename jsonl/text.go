package jsonl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth bounds nesting, as encoding/json does, so a hostile line cannot
// exhaust the stack.
const maxDepth = 10000

// Text extracts the "text" member of one JSONL line with the meaning
// Python's json.loads gives it in tools/preprocess_data.py: the key must be
// exactly "text" (escapes in keys decoded, no case folding), the last of
// duplicate keys wins, the value must be a string, and the line must be
// valid UTF-8 (Python reads the file as strict UTF-8 text). The whole line
// is validated as JSON in the same single pass that decodes the text, since
// JSON decoding is the encode pipeline's largest cost after tokenizing. A
// line ending "\r" is accepted (JSON whitespace).
func Text(line []byte) (string, error) {
	var d Decoder
	text, err := d.Text(line)
	return strings.Clone(text), err
}

// Decoder is Text with buffers kept across lines; the zero value is ready.
// A Decoder is not safe for concurrent use: give each goroutine its own.
type Decoder struct {
	parser
}

// Text is the package's Text without a copy: the string shares memory with
// line or with d's buffers, so it is valid only until the next call or until
// line changes.
func (d *Decoder) Text(line []byte) (string, error) { return d.textField(line) }

func (p *parser) textField(line []byte) (string, error) {
	if !utf8.Valid(line) {
		return "", fmt.Errorf("invalid UTF-8 at byte %d", invalidUTF8At(line))
	}
	p.b, p.i = line, 0
	p.space()
	if p.i == len(p.b) {
		return "", errors.New(`empty line; every line must be a JSON object with a "text" string`)
	}
	if p.b[p.i] != '{' {
		if err := p.value(0); err != nil {
			return "", err
		}
		if err := p.end(); err != nil {
			return "", err
		}
		return "", fmt.Errorf(`the line is a JSON %s, not an object with a "text" string`, kind(line[skipSpace(line, 0)]))
	}
	var text []byte
	found, kindOfText := false, byte(0)
	p.i++
	p.space()
	if p.peek() == '}' {
		p.i++
	} else {
		for {
			if p.peek() != '"' {
				return "", p.syntax("expected a string key")
			}
			key, err := p.str(&p.scratch)
			if err != nil {
				return "", err
			}
			p.space()
			if p.peek() != ':' {
				return "", p.syntax("expected ':' after an object key")
			}
			p.i++
			p.space()
			if string(key) == "text" {
				found, kindOfText = true, p.peek()
				if kindOfText == '"' {
					if text, err = p.str(&p.text); err != nil {
						return "", err
					}
				} else if err := p.value(1); err != nil {
					return "", err
				}
			} else if err := p.value(1); err != nil {
				return "", err
			}
			done, err := p.next('}', "expected ',' or '}' in an object")
			if err != nil {
				return "", err
			}
			if done {
				break
			}
		}
	}
	if err := p.end(); err != nil {
		return "", err
	}
	if !found {
		return "", errors.New(`no "text" field`)
	}
	if kindOfText != '"' {
		return "", fmt.Errorf(`"text" is a JSON %s, not a string`, kind(kindOfText))
	}
	return unsafe.String(unsafe.SliceData(text), len(text)), nil
}

type parser struct {
	b       []byte
	i       int
	scratch []byte // decoded keys
	text    []byte // the decoded "text" value
}

// peek is the current byte, or 0 at the end of input.
func (p *parser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *parser) space() { p.i = skipSpace(p.b, p.i) }

func (p *parser) syntax(what string) error {
	if p.i >= len(p.b) {
		return fmt.Errorf("malformed JSON: unexpected end of line (%s)", what)
	}
	return fmt.Errorf("malformed JSON at byte %d: %s, found %q", p.i, what, p.b[p.i])
}

// end requires nothing but whitespace after the top-level value.
func (p *parser) end() error {
	p.space()
	if p.i != len(p.b) {
		return p.syntax("expected the end of the line after the JSON value")
	}
	return nil
}

// open moves past the opening byte of an object or an array and the space
// after it; when close follows at once it moves past that too and reports
// the object or array empty.
func (p *parser) open(close byte) (empty bool) {
	p.i++
	p.space()
	if p.peek() != close {
		return false
	}
	p.i++
	return true
}

// next moves past what follows a member of an object or an element of an
// array: a ',' and the space after it, or close, when done is true.
func (p *parser) next(close byte, what string) (done bool, err error) {
	p.space()
	switch p.peek() {
	case ',':
		p.i++
		p.space()
		return false, nil
	case close:
		p.i++
		return true, nil
	}
	return false, p.syntax(what)
}

// value validates one JSON value of any kind and moves past it.
func (p *parser) value(depth int) error {
	if depth > maxDepth {
		return errors.New("malformed JSON: nested too deeply")
	}
	switch c := p.peek(); {
	case c == '"':
		_, err := p.str(nil)
		return err
	case c == '{':
		if p.open('}') {
			return nil
		}
		for {
			if p.peek() != '"' {
				return p.syntax("expected a string key")
			}
			if _, err := p.str(nil); err != nil {
				return err
			}
			p.space()
			if p.peek() != ':' {
				return p.syntax("expected ':' after an object key")
			}
			p.i++
			p.space()
			if err := p.value(depth + 1); err != nil {
				return err
			}
			if done, err := p.next('}', "expected ',' or '}' in an object"); done || err != nil {
				return err
			}
		}
	case c == '[':
		if p.open(']') {
			return nil
		}
		for {
			if err := p.value(depth + 1); err != nil {
				return err
			}
			if done, err := p.next(']', "expected ',' or ']' in an array"); done || err != nil {
				return err
			}
		}
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return p.syntax("expected a JSON value")
}

func (p *parser) literal(word string) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.syntax("expected " + word)
	}
	p.i += len(word)
	return nil
}

func (p *parser) digits() int {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// number follows the JSON grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() error {
	if p.peek() == '-' {
		p.i++
	}
	if p.peek() == '0' {
		p.i++
	} else if p.digits() == 0 {
		return p.syntax("expected a digit")
	}
	if p.peek() == '.' {
		p.i++
		if p.digits() == 0 {
			return p.syntax("expected a digit after the decimal point")
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if p.digits() == 0 {
			return p.syntax("expected a digit in the exponent")
		}
	}
	return nil
}

// str validates the string at p.i and moves past it. With a buffer, it
// returns the decoded bytes: a view of the input when there are no escapes,
// otherwise *buf, reused. Escapes decode as encoding/json decodes them (a
// lone surrogate becomes U+FFFD).
func (p *parser) str(buf *[]byte) ([]byte, error) {
	decode := buf != nil
	p.i++ // opening quote
	start := p.i
	p.i += plainRun(p.b[p.i:])
	if p.i < len(p.b) && p.b[p.i] == '"' {
		p.i++
		return p.b[start : p.i-1], nil // no escapes: a view of the input
	}
	var out []byte
	if decode {
		out = append((*buf)[:0], p.b[start:p.i]...)
	}
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if decode {
				*buf = out
			}
			return out, nil
		case c < 0x20:
			return nil, p.syntax("control character in a string")
		case c != '\\':
			n := plainRun(p.b[p.i:])
			if decode {
				out = append(out, p.b[p.i:p.i+n]...)
			}
			p.i += n
			continue
		}
		if p.i+1 >= len(p.b) {
			p.i++
			return nil, p.syntax("unterminated escape")
		}
		r, n := unescape(p.b[p.i:])
		if n <= 0 {
			at, what := escapeFault(n)
			p.i += at
			return nil, p.syntax(what)
		}
		p.i += n
		if decode {
			out = utf8.AppendRune(out, r)
		}
	}
	return nil, p.syntax("unterminated string")
}

// unescape decodes the escape at the start of e, its backslash followed by
// at least one byte, as encoding/json decodes it: a surrogate pair written as
// two \u escapes is one rune, a lone surrogate becomes U+FFFD. It returns the
// rune and how many bytes of e the escape spans, or, for a malformed escape,
// n <= 0, which escapeFault explains. Text and StreamText both decode escapes
// here.
func unescape(e []byte) (r rune, n int) {
	c := e[1]
	if r := simpleEscapes[c]; r != 0 {
		return rune(r), 2
	}
	if c == 'u' {
		return unescapeU(e)
	}
	return 0, escInvalid
}

// The n that unescape returns for a malformed escape.
const (
	escInvalid = 0  // no escape has this letter
	escBadHex  = -1 // \u is not followed by four hex digits
)

// escapeFault is, for unescape's n <= 0, the offset from the backslash of
// the byte at fault and what is wrong.
func escapeFault(n int) (at int, what string) {
	if n == escBadHex {
		return 2, `expected four hex digits after \u`
	}
	return 1, "invalid escape"
}

// simpleEscapes maps the letter after a backslash to what it stands for; 0
// where the letter makes no escape (\u aside).
var simpleEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unescapeU decodes a \u escape for unescape, with the \u escape that
// follows when the two make a surrogate pair.
func unescapeU(e []byte) (rune, int) {
	u, ok := hex4(e[2:])
	if !ok {
		return 0, escBadHex
	}
	r := rune(u)
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if len(e) >= 12 && e[6] == '\\' && e[7] == 'u' {
		if u2, ok := hex4(e[8:]); ok {
			if d := utf16.DecodeRune(r, rune(u2)); d != utf8.RuneError {
				return d, 12
			}
		}
	}
	return utf8.RuneError, 6
}

// plainRun is the length of the prefix of b that a JSON string can hold
// verbatim: no quote, backslash or control character. It tests eight bytes
// at a time, since string bodies are most of every line.
func plainRun(b []byte) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (ones * '"')
		s := x ^ (ones * '\\')
		// A byte is flagged when it is below 0x20 or equals '"' or '\\'; the
		// high bits of x are masked out so bytes >= 0x80 never flag.
		special := ((x - ones*0x20) | (q - ones) | (s - ones)) &^ x & highs
		if special != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			break
		}
	}
	return i
}

func hex4(b []byte) (uint16, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var v uint16
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(c)
	}
	return v, true
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
