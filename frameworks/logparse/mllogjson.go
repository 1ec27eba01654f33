package logparse

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// mllogFields is what Rival reads of one MLLOG event. The JSON is walked once, by hand: through
// encoding/json's reflection an MLLOG line cost six times an iteration line of the other
// families. Strings are views of the line (the parser clones what it keeps).
type mllogFields struct {
	timeMS    float64
	hasTime   bool
	eventType string
	key       string
	// value is the raw JSON of the event's value ("null" when absent).
	value string
	// samples, step and epoch are metadata.samples_count, metadata.step and metadata.epoch_num.
	samples, step, epoch          float64
	hasSamples, hasStep, hasEpoch bool
	// status is metadata.status (run_stop: "success" or "aborted").
	status string
}

// errMLLOGType is a known field of the wrong JSON type (time_ms a string, say).
var errMLLOGType = errors.New("wrong JSON type")

// scanMLLOG reads one MLLOG event's JSON: one object and nothing after it but white space.
// It accepts exactly the JSON encoding/json accepts (nesting to maxDepth, as there) and reads the
// fields Rival uses by their exact names, the last of a repeated key winning whole.
func scanMLLOG(s string) (mllogFields, error) {
	var f mllogFields
	f.value = "null"
	sc := jsonScan{s: s}
	sc.space()
	if sc.i >= len(s) || s[sc.i] != '{' {
		if err := sc.value(); err != nil {
			return f, err
		}
		return f, fmt.Errorf("the event is not a JSON object")
	}
	err := sc.object(func(key string) error {
		switch key {
		case "time_ms":
			return sc.number64(&f.timeMS, &f.hasTime, key)
		case "event_type":
			return sc.string(&f.eventType, key)
		case "key":
			return sc.string(&f.key, key)
		case "value":
			raw, err := sc.raw()
			f.value = raw
			return err
		case "metadata":
			// A repeated metadata object replaces the earlier one whole.
			f.samples, f.step, f.epoch, f.status = 0, 0, 0, ""
			f.hasSamples, f.hasStep, f.hasEpoch = false, false, false
			if sc.at('{') {
				return sc.object(func(mk string) error {
					switch mk {
					case "samples_count":
						return sc.number64(&f.samples, &f.hasSamples, "metadata.samples_count")
					case "step":
						return sc.number64(&f.step, &f.hasStep, "metadata.step")
					case "epoch_num":
						return sc.number64(&f.epoch, &f.hasEpoch, "metadata.epoch_num")
					case "status":
						return sc.string(&f.status, "metadata.status")
					}
					return sc.value()
				})
			}
			raw, err := sc.raw()
			if err == nil && raw != "null" {
				err = fmt.Errorf("metadata: %w", errMLLOGType)
			}
			return err
		}
		return sc.value()
	})
	if err != nil {
		return f, err
	}
	sc.space()
	if sc.i != len(s) {
		return f, fmt.Errorf("invalid character %q after the event's JSON object", s[sc.i])
	}
	return f, nil
}

// at reports whether the next byte is c.
func (sc *jsonScan) at(c byte) bool { return sc.i < len(sc.s) && sc.s[sc.i] == c }

// raw reads any value and returns its text.
func (sc *jsonScan) raw() (string, error) {
	from := sc.i
	err := sc.value()
	return sc.s[from:sc.i], err
}

// number64 reads a JSON number (null leaves it unset) into *x.
func (sc *jsonScan) number64(x *float64, has *bool, name string) error {
	raw, err := sc.raw()
	if err != nil {
		return err
	}
	return numberField(raw, x, has, name)
}

// string reads a JSON string (null leaves it empty) into *x.
func (sc *jsonScan) string(x *string, name string) error {
	raw, err := sc.raw()
	if err != nil {
		return err
	}
	switch {
	case raw == "null":
		*x = ""
	case raw[0] != '"':
		return fmt.Errorf("%s: %w", name, errMLLOGType)
	default:
		*x = jsonString(raw)
	}
	return nil
}

// numberField reads the text of a JSON value that must be a number or null into *x.
func numberField(raw string, x *float64, has *bool, name string) error {
	if raw == "null" {
		*x, *has = 0, false
		return nil
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return fmt.Errorf("%s: %w", name, errMLLOGType)
	}
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil || math.IsInf(v, 0) {
		return fmt.Errorf("%s: number %s out of range", name, raw)
	}
	*x, *has = v, true
	return nil
}

// jsonString is the text of a valid JSON string literal; escapes, rare in MLLOG, go the slow way.
func jsonString(raw string) string {
	body := raw[1 : len(raw)-1]
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' || body[i] >= 0x80 {
			var out string
			if json.Unmarshal([]byte(raw), &out) == nil {
				return out
			}
			return body
		}
	}
	return body
}

// maxDepth is how deeply encoding/json lets values nest: deeper input is refused, as there, so a
// hostile line cannot take the stack.
const maxDepth = 10000

// jsonScan walks JSON text, checking it as it goes.
type jsonScan struct {
	s     string
	i     int
	depth int
}

func (sc *jsonScan) space() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

func (sc *jsonScan) fail(what string) error {
	if sc.i >= len(sc.s) {
		return fmt.Errorf("unexpected end of JSON input (%s)", what)
	}
	return fmt.Errorf("invalid character %q at byte %d (%s)", sc.s[sc.i], sc.i, what)
}

// object reads an object at sc.i, calling member with each key (its text) when sc.i is at the
// member's value; member reads the value.
func (sc *jsonScan) object(member func(key string) error) error {
	if sc.depth++; sc.depth > maxDepth {
		return fmt.Errorf("exceeded max depth at byte %d", sc.i)
	}
	defer func() { sc.depth-- }()
	sc.i++ // '{'
	sc.space()
	if sc.i < len(sc.s) && sc.s[sc.i] == '}' {
		sc.i++
		return nil
	}
	for {
		sc.space()
		if sc.i >= len(sc.s) || sc.s[sc.i] != '"' {
			return sc.fail("looking for an object key")
		}
		k0 := sc.i
		if err := sc.str(); err != nil {
			return err
		}
		key := jsonString(sc.s[k0:sc.i])
		sc.space()
		if sc.i >= len(sc.s) || sc.s[sc.i] != ':' {
			return sc.fail("after an object key")
		}
		sc.i++
		sc.space()
		if err := member(key); err != nil {
			return err
		}
		sc.space()
		if sc.i >= len(sc.s) {
			return sc.fail("after an object value")
		}
		switch sc.s[sc.i] {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return nil
		default:
			return sc.fail("after an object value")
		}
	}
}

// value reads any JSON value at sc.i.
func (sc *jsonScan) value() error {
	if sc.i >= len(sc.s) {
		return sc.fail("looking for a value")
	}
	switch c := sc.s[sc.i]; {
	case c == '{':
		return sc.object(func(string) error { return sc.value() })
	case c == '[':
		if sc.depth++; sc.depth > maxDepth {
			return fmt.Errorf("exceeded max depth at byte %d", sc.i)
		}
		defer func() { sc.depth-- }()
		sc.i++
		sc.space()
		if sc.i < len(sc.s) && sc.s[sc.i] == ']' {
			sc.i++
			return nil
		}
		for {
			sc.space()
			if err := sc.value(); err != nil {
				return err
			}
			sc.space()
			if sc.i >= len(sc.s) {
				return sc.fail("after an array element")
			}
			switch sc.s[sc.i] {
			case ',':
				sc.i++
			case ']':
				sc.i++
				return nil
			default:
				return sc.fail("after an array element")
			}
		}
	case c == '"':
		return sc.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.number()
	case c == 't':
		return sc.literal("true")
	case c == 'f':
		return sc.literal("false")
	case c == 'n':
		return sc.literal("null")
	}
	return sc.fail("looking for a value")
}

func (sc *jsonScan) literal(word string) error {
	if len(sc.s)-sc.i >= len(word) && sc.s[sc.i:sc.i+len(word)] == word {
		sc.i += len(word)
		return nil
	}
	for j := 0; j < len(word); j++ {
		if sc.i >= len(sc.s) || sc.s[sc.i] != word[j] {
			return sc.fail("in literal " + word)
		}
		sc.i++
	}
	return nil
}

// str reads a string literal: no control characters, only JSON's escapes.
func (sc *jsonScan) str() error {
	sc.i++ // '"'
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case c == '"':
			sc.i++
			return nil
		case c == '\\':
			sc.i++
			if sc.i >= len(sc.s) {
				return sc.fail("in string escape")
			}
			switch sc.s[sc.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				sc.i++
			case 'u':
				sc.i++
				for j := 0; j < 4; j++ {
					if sc.i >= len(sc.s) || !isHex(sc.s[sc.i]) {
						return sc.fail("in \\u escape")
					}
					sc.i++
				}
			default:
				return sc.fail("in string escape")
			}
		case c < 0x20:
			return sc.fail("in string literal")
		default:
			sc.i++
		}
	}
	return sc.fail("in string literal")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number reads a number in JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (sc *jsonScan) number() error {
	s := sc.s
	if s[sc.i] == '-' {
		sc.i++
	}
	digits := func() int {
		n := 0
		for sc.i < len(s) && s[sc.i] >= '0' && s[sc.i] <= '9' {
			sc.i++
			n++
		}
		return n
	}
	switch {
	case sc.i < len(s) && s[sc.i] == '0':
		sc.i++
	case digits() == 0:
		return sc.fail("in numeric literal")
	}
	if sc.i < len(s) && s[sc.i] == '.' {
		sc.i++
		if digits() == 0 {
			return sc.fail("after decimal point in numeric literal")
		}
	}
	if sc.i < len(s) && (s[sc.i] == 'e' || s[sc.i] == 'E') {
		sc.i++
		if sc.i < len(s) && (s[sc.i] == '+' || s[sc.i] == '-') {
			sc.i++
		}
		if digits() == 0 {
			return sc.fail("in exponent of numeric literal")
		}
	}
	return nil
}
