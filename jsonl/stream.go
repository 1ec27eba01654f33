package jsonl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// streamPiece is how much decoded text StreamText gathers before handing it on.
const streamPiece = 64 << 10

// StreamText reads one JSONL line from r, up to and including its "\n" (or
// to the end of r), and hands the decoded "text" value to fn in pieces, in
// order, as it is read, so memory stays bounded by r's buffer whatever the
// line's length. It returns the number of bytes it consumed. The line means
// what Text says it means, with one exception: a line whose "text" value has
// already been handed on and which then holds another "text" key (Text keeps
// the last) is an error, since the first value cannot be taken back. On any
// error some pieces may already have been handed on; the caller discards
// them. A piece is valid only during the call. progress, when set, is told
// the bytes of the line consumed after each piece. Errors name the byte of the
// line as Text's do; a line with several faults may report a different one
// first than Text (Text checks UTF-8 before the syntax).
func StreamText(r *bufio.Reader, fn func(piece []byte) error, progress func(consumed int64)) (int64, error) {
	p := &streamParser{r: r, fn: fn, progress: progress}
	err := p.line()
	return p.pos, err
}

type streamParser struct {
	r        *bufio.Reader
	pos      int64 // bytes of the line consumed
	fn       func([]byte) error
	progress func(int64)
	out      []byte
	key      [5]byte // the decoded key, up to len("text")+1 bytes
	keyLen   int
	streamed bool // a "text" value has been handed on
	esc      [utf8.UTFMax]byte
}

// peek is the next byte of the line, or 0 at its end ("\n" or EOF).
func (p *streamParser) peek() byte {
	b, err := p.r.Peek(1)
	if err != nil || b[0] == '\n' {
		return 0
	}
	return b[0]
}

// atEnd reports whether the line has ended ("\n" or EOF); peek's 0 may
// also be a NUL byte.
func (p *streamParser) atEnd() bool {
	b, err := p.r.Peek(1)
	return err != nil || b[0] == '\n'
}

func (p *streamParser) skip(n int) {
	d, _ := p.r.Discard(n)
	p.pos += int64(d)
}

func (p *streamParser) space() {
	for {
		switch p.peek() {
		case ' ', '\t', '\r':
			p.skip(1)
		default:
			return
		}
	}
}

func (p *streamParser) syntax(what string) error {
	c := p.peek()
	if p.atEnd() {
		return fmt.Errorf("malformed JSON: unexpected end of line (%s)", what)
	}
	return fmt.Errorf("malformed JSON at byte %d: %s, found %q", p.pos, what, c)
}

// avail is the buffered input, filled so that it holds at least one whole
// UTF-8 sequence unless the input ends.
func (p *streamParser) avail() []byte {
	if p.r.Buffered() < utf8.UTFMax {
		p.r.Peek(utf8.UTFMax) //nolint:errcheck // a short read shows as fewer bytes
	}
	b, _ := p.r.Peek(p.r.Buffered())
	return b
}

func (p *streamParser) line() error {
	p.space()
	if p.atEnd() {
		return errors.New(`empty line; every line must be a JSON object with a "text" string`)
	}
	switch c := p.peek(); c {
	case '{':
	default:
		if err := p.value(0, false); err != nil {
			return err
		}
		if err := p.end(); err != nil {
			return err
		}
		return fmt.Errorf(`the line is a JSON %s, not an object with a "text" string`, kind(c))
	}
	p.skip(1)
	p.space()
	found, kindOfText := false, byte(0)
	if p.peek() == '}' {
		p.skip(1)
	} else {
		for {
			if p.peek() != '"' {
				return p.syntax("expected a string key")
			}
			p.keyLen = 0
			keyAt := p.pos
			if err := p.str(modeKey); err != nil {
				return err
			}
			isText := p.keyLen == 4 && string(p.key[:4]) == "text"
			p.space()
			if p.peek() != ':' {
				return p.syntax("expected ':' after an object key")
			}
			p.skip(1)
			p.space()
			if isText {
				if p.streamed {
					return fmt.Errorf(`a second "text" key at byte %d, after the first "text" value was already encoded: a line this long cannot be held to keep only the last; remove the duplicate key`, keyAt)
				}
				found, kindOfText = true, p.peek()
				if err := p.value(1, kindOfText == '"'); err != nil {
					return err
				}
			} else if err := p.value(1, false); err != nil {
				return err
			}
			done, err := p.next('}', "expected ',' or '}' in an object")
			if err != nil {
				return err
			}
			if done {
				break
			}
		}
	}
	if err := p.end(); err != nil {
		return err
	}
	if !found {
		return errors.New(`no "text" field`)
	}
	if kindOfText != '"' {
		return fmt.Errorf(`"text" is a JSON %s, not a string`, kind(kindOfText))
	}
	return nil
}

// end requires nothing but whitespace before the line's end, and consumes
// the "\n".
func (p *streamParser) end() error {
	p.space()
	if !p.atEnd() {
		return p.syntax("expected the end of the line after the JSON value")
	}
	if b, err := p.r.Peek(1); err == nil && b[0] == '\n' {
		p.skip(1)
	}
	return nil
}

const (
	modeSkip = iota
	modeKey
	modeText
)

// open moves past the opening byte of an object or an array and the space
// after it; when close follows at once it moves past that too and reports
// the object or array empty.
func (p *streamParser) open(close byte) (empty bool) {
	p.skip(1)
	p.space()
	if p.peek() != close {
		return false
	}
	p.skip(1)
	return true
}

// next moves past what follows a member of an object or an element of an
// array: a ',' and the space after it, or close, when done is true.
func (p *streamParser) next(close byte, what string) (done bool, err error) {
	p.space()
	switch p.peek() {
	case ',':
		p.skip(1)
		p.space()
		return false, nil
	case close:
		p.skip(1)
		return true, nil
	}
	return false, p.syntax(what)
}

// value validates one JSON value; with text, a string value is handed on.
func (p *streamParser) value(depth int, text bool) error {
	if depth > maxDepth {
		return errors.New("malformed JSON: nested too deeply")
	}
	switch c := p.peek(); {
	case c == '"':
		if text {
			p.streamed = true
			return p.str(modeText)
		}
		return p.str(modeSkip)
	case c == '{':
		if p.open('}') {
			return nil
		}
		for {
			if p.peek() != '"' {
				return p.syntax("expected a string key")
			}
			if err := p.str(modeSkip); err != nil {
				return err
			}
			p.space()
			if p.peek() != ':' {
				return p.syntax("expected ':' after an object key")
			}
			p.skip(1)
			p.space()
			if err := p.value(depth+1, false); err != nil {
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
			if err := p.value(depth+1, false); err != nil {
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

func (p *streamParser) literal(word string) error {
	b, _ := p.r.Peek(len(word))
	if string(b) != word {
		return p.syntax("expected " + word)
	}
	p.skip(len(word))
	return nil
}

func (p *streamParser) digits() int {
	n := 0
	for c := p.peek(); c >= '0' && c <= '9'; c = p.peek() {
		p.skip(1)
		n++
	}
	return n
}

func (p *streamParser) number() error {
	if p.peek() == '-' {
		p.skip(1)
	}
	if p.peek() == '0' {
		p.skip(1)
	} else if p.digits() == 0 {
		return p.syntax("expected a digit")
	}
	if p.peek() == '.' {
		p.skip(1)
		if p.digits() == 0 {
			return p.syntax("expected a digit after the decimal point")
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.skip(1)
		if c := p.peek(); c == '+' || c == '-' {
			p.skip(1)
		}
		if p.digits() == 0 {
			return p.syntax("expected a digit in the exponent")
		}
	}
	return nil
}

// emit adds decoded bytes to the string being read in mode.
func (p *streamParser) emit(mode int, b []byte) error {
	switch mode {
	case modeKey:
		for _, c := range b {
			if p.keyLen < len(p.key) {
				p.key[p.keyLen] = c
				p.keyLen++
			}
		}
	case modeText:
		if len(p.out)+len(b) > streamPiece && len(p.out) > 0 {
			if err := p.flush(); err != nil {
				return err
			}
		}
		if len(b) >= streamPiece {
			return p.hand(b)
		}
		p.out = append(p.out, b...)
	}
	return nil
}

func (p *streamParser) flush() error {
	if len(p.out) == 0 {
		return nil
	}
	err := p.hand(p.out)
	p.out = p.out[:0]
	return err
}

func (p *streamParser) hand(b []byte) error {
	if err := p.fn(b); err != nil {
		return err
	}
	if p.progress != nil {
		p.progress(p.pos)
	}
	return nil
}

// str reads the string at the current position (its opening quote), checks
// it and decodes it as parser.str does, without holding it.
func (p *streamParser) str(mode int) error {
	p.skip(1)
	for {
		b := p.avail()
		if len(b) == 0 {
			return p.syntax("unterminated string")
		}
		switch c := b[0]; {
		case c == '"':
			p.skip(1)
			if mode == modeText {
				return p.flush()
			}
			return nil
		case c == '\n':
			return p.syntax("unterminated string")
		case c < 0x20:
			return p.syntax("control character in a string")
		case c == '\\':
			if err := p.escape(mode); err != nil {
				return err
			}
			continue
		}
		n := plainRun(b)
		if n == len(b) && len(b) >= utf8.UTFMax {
			n -= partialRune(b) // the next read completes it
		}
		run := b[:n]
		if !utf8.Valid(run) {
			return fmt.Errorf("invalid UTF-8 at byte %d", p.pos+int64(invalidUTF8At(run)))
		}
		p.skip(n) // run stays valid: Discard does not overwrite the buffer
		if err := p.emit(mode, run); err != nil {
			return err
		}
	}
}

// partialRune is the length of a UTF-8 sequence at the end of b that the
// next bytes may complete.
func partialRune(b []byte) int {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(c) {
			if utf8.FullRune(b[len(b)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}

// escape decodes the escape at the current position. It peeks at up to 12
// bytes, so a surrogate pair split across reads is still seen whole.
func (p *streamParser) escape(mode int) error {
	e, _ := p.r.Peek(12)
	if len(e) < 2 || e[1] == '\n' {
		p.skip(1)
		return p.syntax("unterminated escape")
	}
	r, n := unescape(e)
	if n <= 0 {
		at, what := escapeFault(n)
		p.skip(at)
		return p.syntax(what)
	}
	p.skip(n)
	return p.emit(mode, utf8.AppendRune(p.esc[:0], r))
}

// SkipLine consumes the rest of the current line of r, its "\n" included,
// and returns the number of bytes consumed.
func SkipLine(r *bufio.Reader) (int64, error) {
	var n int64
	for {
		b, err := r.ReadSlice('\n')
		n += int64(len(b))
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		return n, err
	}
}
