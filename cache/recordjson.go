package cache

import (
	"encoding/json"
	"unicode/utf8"
)

// decodeRecord is json.Unmarshal(data, r) for a freshly zeroed r, faster on
// the records PutRecord writes: cache:verify decodes one per entry, and
// encoding/json spends more on that (reflection, a string per digest, some
// forty allocations) than reading the file costs.
//
// json.Valid first holds the input to exactly the grammar json.Unmarshal
// checks before it decodes anything; the fields are then read by
// recordReader, which knows the record's fields and their types and hands
// anything else (an unknown or differently cased key, a repeated one, an
// escaped string, a null where a value is expected, a number out of range)
// to json.Unmarshal. TestDecodeRecordMatchesEncodingJSON and
// FuzzDecodeRecord hold the two to the same result.
func decodeRecord(data []byte, r *Record) error {
	if json.Valid(data) {
		rr := recordReader{data: data}
		if rr.record(r) {
			return nil
		}
		*r = Record{}
	}
	return json.Unmarshal(data, r)
}

// recordReader reads a record from valid JSON; each method reports false
// when the input is not in the form it reads, and the caller falls back to
// encoding/json.
type recordReader struct {
	data []byte
	off  int
}

func (p *recordReader) ws() {
	for p.off < len(p.data) {
		switch p.data[p.off] {
		case ' ', '\t', '\n', '\r':
			p.off++
		default:
			return
		}
	}
}

// next skips white space and consumes c if it comes next.
func (p *recordReader) next(c byte) bool {
	p.ws()
	if p.off < len(p.data) && p.data[p.off] == c {
		p.off++
		return true
	}
	return false
}

// str reads a string without escapes whose bytes are valid UTF-8 (so
// encoding/json would keep them as they are) and returns its bytes.
func (p *recordReader) str() ([]byte, bool) {
	if !p.next('"') {
		return nil, false
	}
	start := p.off
	for p.off < len(p.data) {
		switch c := p.data[p.off]; {
		case c == '"':
			s := p.data[start:p.off]
			p.off++
			return s, utf8.Valid(s)
		case c == '\\':
			return nil, false
		}
		p.off++
	}
	return nil, false
}

// text reads a string as str does, with no allocation for "" and for
// KeySchema (every record's schema).
func (p *recordReader) text(dst *string) bool {
	s, ok := p.str()
	switch {
	case !ok:
		return false
	case len(s) == 0:
		*dst = ""
	case string(s) == KeySchema:
		*dst = KeySchema
	default:
		*dst = string(s)
	}
	return true
}

// int reads an integer in [lo, hi] written without a fraction or exponent.
func (p *recordReader) int(lo, hi int64) (int64, bool) {
	p.ws()
	neg := p.off < len(p.data) && p.data[p.off] == '-'
	if neg {
		p.off++
	}
	start := p.off
	var v uint64
	for p.off < len(p.data) && '0' <= p.data[p.off] && p.data[p.off] <= '9' {
		if v > (1<<63)/10 {
			return 0, false
		}
		v = v*10 + uint64(p.data[p.off]-'0')
		p.off++
	}
	if p.off == start || p.off-start > 19 || v > 1<<63 {
		return 0, false
	}
	if p.off < len(p.data) {
		if c := p.data[p.off]; c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	var n int64
	switch {
	case !neg && v > 1<<63-1:
		return 0, false
	case neg && v == 1<<63:
		n = -1 << 63
	case neg:
		n = -int64(v)
	default:
		n = int64(v)
	}
	if neg && lo >= 0 || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// literal consumes word (true, false, null) if it comes next.
func (p *recordReader) literal(word string) bool {
	p.ws()
	if len(p.data)-p.off >= len(word) && string(p.data[p.off:p.off+len(word)]) == word {
		p.off += len(word)
		return true
	}
	return false
}

func (p *recordReader) bool(dst *bool) bool {
	switch {
	case p.literal("true"):
		*dst = true
	case p.literal("false"):
		*dst = false
	default:
		return false
	}
	return true
}

func (p *recordReader) digest(dst *Digest) bool {
	s, ok := p.str()
	if !ok {
		return false
	}
	d, err := parseDigestBytes(s)
	*dst = d
	return err == nil
}

// object reads an object whose keys are among keys, each once, calling
// value with the key's index to read its value. Another key, or one seen
// twice, is not read here (encoding/json matches keys regardless of case,
// skips unknown ones and keeps the last of two).
func (p *recordReader) object(keys []string, value func(i int) bool) bool {
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return true
	}
	var seen uint64
	for {
		k, ok := p.str()
		if !ok || !p.next(':') {
			return false
		}
		i := 0
		for i < len(keys) && keys[i] != string(k) {
			i++
		}
		if i == len(keys) || seen&(1<<i) != 0 || !value(i) {
			return false
		}
		seen |= 1 << i
		if p.next('}') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// readArray reads an array into *dst one element at a time by elem: null
// leaves it nil and [] makes it empty, as encoding/json does.
func readArray[T any](p *recordReader, dst *[]T, elem func(*T) bool) bool {
	if p.literal("null") {
		*dst = nil
		return true
	}
	if !p.next('[') {
		return false
	}
	*dst = []T{}
	if p.next(']') {
		return true
	}
	for {
		var v T
		if !elem(&v) {
			return false
		}
		*dst = append(*dst, v)
		if p.next(']') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// skip passes over one value, which json.Valid has already checked, and
// returns its bytes.
func (p *recordReader) skip() ([]byte, bool) {
	p.ws()
	start := p.off
	depth := 0
	for p.off < len(p.data) {
		c := p.data[p.off]
		p.off++
		switch c {
		case '"':
			for p.off < len(p.data) && p.data[p.off] != '"' {
				if p.data[p.off] == '\\' {
					p.off++
				}
				p.off++
			}
			p.off++ // the closing quote
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		default:
			// A number or literal standing alone runs to a delimiter; one
			// inside an object or array is passed a byte at a time.
			for depth == 0 && p.off < len(p.data) && !isDelim(p.data[p.off]) {
				p.off++
			}
		}
		if depth == 0 {
			if p.off > len(p.data) {
				return nil, false
			}
			return p.data[start:p.off], true
		}
	}
	return nil, false
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}

var (
	recordKeys  = []string{"schema", "key", "task", "created", "duration_ms", "inputs", "outputs", "meta"}
	keyPartKeys = []string{"Kind", "Name", "Value"}
	outputKeys  = []string{"path", "abs_path", "digest", "size", "mode", "compressed"}
)

func (p *recordReader) record(r *Record) bool {
	return p.object(recordKeys, func(i int) bool {
		switch i {
		case 0:
			return p.text(&r.Schema)
		case 1:
			return p.digest(&r.Key)
		case 2:
			return p.text(&r.Task)
		case 3:
			// encoding/json hands time.Time the value's bytes as they are.
			p.ws()
			start := p.off
			if _, ok := p.str(); !ok {
				return false
			}
			return r.Created.UnmarshalJSON(p.data[start:p.off]) == nil
		case 4:
			n, ok := p.int(-1<<63, 1<<63-1)
			r.DurationMS = n
			return ok
		case 5:
			return readArray(p, &r.Inputs, p.keyPart)
		case 6:
			return readArray(p, &r.Outputs, p.output)
		default:
			v, ok := p.skip()
			r.Meta = append(json.RawMessage(nil), v...)
			return ok
		}
	}) && p.end()
}

func (p *recordReader) keyPart(k *KeyPart) bool {
	return p.object(keyPartKeys, func(i int) bool {
		switch i {
		case 0:
			return p.text(&k.Kind)
		case 1:
			return p.text(&k.Name)
		default:
			return p.text(&k.Value)
		}
	})
}

func (p *recordReader) output(o *Output) bool {
	return p.object(outputKeys, func(i int) bool {
		switch i {
		case 0:
			return p.text(&o.Path)
		case 1:
			return p.text(&o.AbsPath)
		case 2:
			return p.digest(&o.Digest)
		case 3:
			n, ok := p.int(-1<<63, 1<<63-1)
			o.Size = n
			return ok
		case 4:
			n, ok := p.int(0, 1<<32-1)
			o.Mode = uint32(n)
			return ok
		default:
			return p.bool(&o.Compressed)
		}
	})
}

// end reports whether only white space is left.
func (p *recordReader) end() bool {
	p.ws()
	return p.off == len(p.data)
}
