// Package facts holds what the pinned frameworks accept, extracted as data from their upstream trees
// by the scripts next to it (extract_megatron.py, extract_primus.py; run by a developer on fetched
// trees, never in CI): Megatron-LM's argparse options per commit and Primus's experiment files, config
// keys and override typing. Launch builders read the Primus stock experiments from here, and tests
// check every launch against the options and keys.
package facts

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

//go:embed megatron_*.json primus_*.json
var data embed.FS

// Option is one Megatron-LM command-line option as argparse defines it.
type Option struct {
	Flags      []string `json:"flags"`
	Dest       string   `json:"dest"`
	Action     string   `json:"action"`
	Type       *string  `json:"type"` // int, float, str, or the name of a converter function; nil: a string
	Nargs      any      `json:"nargs"`
	Choices    []any    `json:"choices"`
	Default    any      `json:"default"`
	TakesValue bool     `json:"takes_value"`
}

// Megatron is Megatron-LM's option table at one commit.
type Megatron struct {
	Source       string   `json:"source"`
	Commit       string   `json:"commit"`
	MegatronCore string   `json:"megatron_core"`
	Options      []Option `json:"options"`
	byFlag       map[string]*Option
	byDest       map[string]*Option
}

var (
	mu    sync.Mutex
	megas = map[string]*Megatron{}
)

// MegatronAt returns the options of the Megatron-LM commit (full or its first 8 hex digits).
func MegatronAt(commit string) (*Megatron, error) {
	if len(commit) < 8 {
		return nil, fmt.Errorf("facts: Megatron-LM commit %q: give at least 8 hex digits", commit)
	}
	short := commit[:8]
	mu.Lock()
	defer mu.Unlock()
	if m, ok := megas[short]; ok {
		return m, nil
	}
	b, err := data.ReadFile("megatron_" + short + ".json")
	if err != nil {
		return nil, fmt.Errorf("facts: no extracted options for Megatron-LM %s: run frameworks/facts/extract_megatron.py on that tree (%w)", short, err)
	}
	var m Megatron
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("facts: megatron_%s.json: %w", short, err)
	}
	m.byFlag, m.byDest = map[string]*Option{}, map[string]*Option{}
	for i := range m.Options {
		o := &m.Options[i]
		for _, f := range o.Flags {
			m.byFlag[f] = o
		}
		m.byDest[o.Dest] = o
	}
	megas[short] = &m
	return &m, nil
}

// Flag returns the option with this flag (e.g. --min-lr).
func (m *Megatron) Flag(flag string) (*Option, bool) { o, ok := m.byFlag[flag]; return o, ok }

// Dest returns the option that stores into this attribute (e.g. min_lr).
func (m *Megatron) Dest(dest string) (*Option, bool) { o, ok := m.byDest[dest]; return o, ok }

// Parse reads argv (the arguments after pretrain_gpt.py) the way argparse with allow_abbrev=False does
// for this option table and returns the parsed values by destination: every option must exist, take
// the number of values its nargs allows, convert with its type and lie in its choices. It then applies
// the cross-argument checks of validate_args that launches can violate (CheckValues).
func (m *Megatron) Parse(argv []string) (map[string]any, error) {
	vals := map[string]any{}
	for i := 0; i < len(argv); {
		a := argv[i]
		if !strings.HasPrefix(a, "--") {
			return nil, fmt.Errorf("megatron %s: unrecognized argument %q (position %d)", m.Commit[:8], a, i)
		}
		flag, inline, hasInline := strings.Cut(a, "=")
		o, ok := m.byFlag[flag]
		if !ok {
			return nil, fmt.Errorf("megatron %s: unrecognized arguments: %s", m.Commit[:8], flag)
		}
		i++
		if !o.TakesValue {
			if hasInline {
				return nil, fmt.Errorf("megatron %s: argument %s: ignored explicit argument %q", m.Commit[:8], flag, inline)
			}
			vals[o.Dest] = o.constValue()
			continue
		}
		var words []string
		if hasInline {
			words = []string{inline}
		} else {
			for i < len(argv) && !(strings.HasPrefix(argv[i], "--") && len(argv[i]) > 2 && !isNumber(argv[i])) {
				words = append(words, argv[i])
				i++
				if o.Nargs == nil {
					break
				}
			}
		}
		min, max := o.arity()
		if len(words) < min || (max >= 0 && len(words) > max) {
			return nil, fmt.Errorf("megatron %s: argument %s: expected %s, got %d", m.Commit[:8], flag, o.arityText(), len(words))
		}
		var conv []any
		for _, w := range words {
			v, err := o.convert(w)
			if err != nil {
				return nil, fmt.Errorf("megatron %s: argument %s: %w", m.Commit[:8], flag, err)
			}
			conv = append(conv, v)
		}
		if o.Nargs == nil {
			vals[o.Dest] = conv[0]
		} else {
			vals[o.Dest] = conv
		}
	}
	return vals, m.CheckValues(vals)
}

// Value returns a parsed value, or the option's default when argv did not set it.
func (m *Megatron) Value(vals map[string]any, dest string) any {
	if v, ok := vals[dest]; ok {
		return v
	}
	if o, ok := m.byDest[dest]; ok {
		return o.Default
	}
	return nil
}

// CheckValues applies the checks of Megatron's validate_args that depend only on the values a launch
// sets: min_lr <= lr, lr_warmup_iters <= train_iters, one of bf16/fp16, fp8 needs a format.
func (m *Megatron) CheckValues(vals map[string]any) error {
	num := func(d string) (float64, bool) {
		switch v := m.Value(vals, d).(type) {
		case float64:
			return v, true
		case int64:
			return float64(v), true
		}
		return 0, false
	}
	if lr, ok := num("lr"); ok {
		if min, ok := num("min_lr"); ok && min > lr {
			return fmt.Errorf("megatron %s: min_lr %g is above lr %g (validate_args requires min_lr <= lr)", m.Commit[:8], min, lr)
		}
	}
	if b, _ := m.Value(vals, "bf16").(bool); b {
		if f, _ := m.Value(vals, "fp16").(bool); f {
			return fmt.Errorf("megatron %s: --bf16 and --fp16 both set", m.Commit[:8])
		}
	}
	return nil
}

func isNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }

func (o *Option) constValue() any {
	switch o.Action {
	case "StoreTrueAction":
		return true
	case "StoreFalseAction":
		return false
	}
	return "const"
}

func (o *Option) arity() (min, max int) {
	switch n := o.Nargs.(type) {
	case nil:
		return 1, 1
	case float64:
		return int(n), int(n)
	case string:
		switch n {
		case "?":
			return 0, 1
		case "*":
			return 0, -1
		case "+":
			return 1, -1
		}
	}
	return 1, 1
}

func (o *Option) arityText() string {
	switch n := o.Nargs.(type) {
	case nil:
		return "one argument"
	case float64:
		return fmt.Sprintf("%d arguments", int(n))
	case string:
		return map[string]string{"?": "at most one argument", "*": "any number of arguments", "+": "at least one argument"}[n]
	}
	return "arguments"
}

// convert applies the option's type the way its converter does for the types launches use.
func (o *Option) convert(w string) (any, error) {
	t := "str"
	if o.Type != nil {
		t = *o.Type
	}
	var v any
	switch t {
	case "int":
		n, err := strconv.ParseInt(strings.TrimSpace(w), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid int value: %q", w)
		}
		v = n
	case "float":
		f, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || math.IsNaN(f) {
			return nil, fmt.Errorf("invalid float value: %q", w)
		}
		v = f
	case "str":
		v = w
	case "tuple_type":
		// Megatron's tuple_type: "a,b" of ints (e.g. --window-size 4096,0).
		parts := strings.Split(strings.Trim(w, "()[] "), ",")
		var out []any
		for _, p := range parts {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("invalid tuple_type value: %q", w)
			}
			out = append(out, n)
		}
		v = out
	default:
		// A converter function the launches do not use: keep the text.
		v = w
	}
	if len(o.Choices) > 0 {
		for _, c := range o.Choices {
			if ChoiceName(c) == fmt.Sprint(v) {
				return v, nil
			}
		}
		cs := make([]string, len(o.Choices))
		for i, c := range o.Choices {
			cs[i] = ChoiceName(c)
		}
		sort.Strings(cs)
		return nil, fmt.Errorf("invalid choice: %q (choose from %s)", w, strings.Join(cs, ", "))
	}
	return v, nil
}

var enumRepr = regexp.MustCompile(`^<\w+\.(\w+): .*>$`)

// ChoiceName is how a choice is written on the command line: an enum member's repr
// ("<AttnBackend.auto: 5>", from an enum_type_handler option) by its name.
func ChoiceName(c any) string {
	s := fmt.Sprint(c)
	if m := enumRepr.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

//go:embed preflight.py pystubs.py effective.py
var preflightFS embed.FS

// PreflightFiles are the preflight script and its stand-in modules, by file name.
func PreflightFiles() map[string][]byte {
	out := map[string][]byte{}
	for _, n := range []string{"preflight.py", "pystubs.py", "effective.py"} {
		b, err := preflightFS.ReadFile(n)
		if err != nil {
			panic("facts: embedded " + n + " missing: " + err.Error()) // a build defect, not input
		}
		out[n] = b
	}
	return out
}
