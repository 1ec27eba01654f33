package facts

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Values are Python values as Go values: nil (None), bool, int64, float64, string, []any, map[string]any.

// TypeCLI types one `--key value` override text the way Primus's default ("core") runtime does:
// true/false (any case) to bool, a text containing "." to float when it parses, then int, else the
// text unchanged. No eval: "None", "[0,3]" and "3e-05" stay strings.
func TypeCLI(text string) any {
	switch strings.ToLower(text) {
	case "true":
		return true
	case "false":
		return false
	}
	if strings.Contains(text, ".") {
		if f, ok := pyFloat(text); ok {
			return f
		}
	}
	if n, ok := pyInt(text); ok {
		return n
	}
	return text
}

// pyFloat parses what Python's float() accepts for the texts launches write.
func pyFloat(s string) (float64, bool) {
	t := strings.TrimSpace(strings.ReplaceAll(s, "_", ""))
	switch strings.ToLower(strings.TrimLeft(t, "+-")) {
	case "inf", "infinity", "nan":
		f, err := strconv.ParseFloat(t, 64)
		return f, err == nil
	}
	if !regexp.MustCompile(`^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$`).MatchString(t) {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	return f, err == nil
}

func pyInt(s string) (int64, bool) {
	t := strings.TrimSpace(s)
	if !regexp.MustCompile(`^[-+]?\d+$`).MatchString(t) {
		return 0, false
	}
	n, err := strconv.ParseInt(t, 10, 64)
	return n, err == nil
}

// YAML 1.1 implicit resolvers of PyYAML's SafeLoader, the loader Primus reads yaml files with.
var (
	yBool  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	yNull  = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
	yInt   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	yFloat = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
)

// TypeYAMLScalar types a plain (unquoted) yaml scalar the way PyYAML's SafeLoader does. Unlike YAML
// 1.2, a float needs a dot: "3e-05" is the string "3e-05".
func TypeYAMLScalar(text string) any {
	switch {
	case yNull.MatchString(text):
		return nil
	case yBool.MatchString(text):
		l := strings.ToLower(text)
		return l == "yes" || l == "true" || l == "on"
	case yInt.MatchString(text) && !strings.ContainsAny(text, "xob:"):
		n, err := strconv.ParseInt(strings.ReplaceAll(text, "_", ""), 10, 64)
		if err == nil {
			return n
		}
	case yFloat.MatchString(text) && !strings.Contains(text, ":"):
		f, err := strconv.ParseFloat(strings.ReplaceAll(text, "_", ""), 64)
		if err == nil {
			return f
		}
		switch strings.ToLower(strings.TrimLeft(text, "+-.")) {
		case "inf":
			if strings.HasPrefix(text, "-") {
				return math.Inf(-1)
			}
			return math.Inf(1)
		case "nan":
			return math.NaN()
		}
	}
	return text
}

// TypeYAML decodes a yaml node into Python values as SafeLoader would.
func TypeYAML(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return TypeYAML(n.Content[0])
	case yaml.AliasNode:
		return TypeYAML(n.Alias)
	case yaml.ScalarNode:
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 || n.Tag == "!!str" && n.Style != 0 {
			return n.Value, nil
		}
		return TypeYAMLScalar(n.Value), nil
	case yaml.SequenceNode:
		out := []any{}
		for _, c := range n.Content {
			v, err := TypeYAML(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := TypeYAML(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[n.Content[i].Value] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: unsupported yaml node", n.Line)
}

// PyType names a value's Python type.
func PyType(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64, int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// CheckOverrides checks the pre_trainer overrides a Primus launch ends up with (stock experiment,
// Rival's yaml and command line merged, as Python values) against what Megatron will do with them:
// every key is known to Primus's module or model config or is a Megatron option, every value has the
// type the option converts to (a store_true option gets a bool, an int option an int, a float option a
// number, a list option a list, a choices option None or one of its choices), and validate_args's
// min_lr <= lr holds.
func (p *Primus) CheckOverrides(model string, m *Megatron, ov map[string]any) error {
	keys := make([]string, 0, len(ov))
	for k := range ov {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		v := ResolveEnv(ov[k])
		ov[k] = v
		if !p.KnownKey(k, model, m) {
			errs = append(errs, fmt.Sprintf("%s: not a key of Primus %s's pre_trainer module, model %s, or a Megatron option", k, p.Tag, model))
			continue
		}
		o, ok := m.Dest(k)
		if !ok {
			// A Primus-only key: the type of its default, when it has one.
			if d, ok := p.Module[k]; ok && d != nil && v != nil && !sameKind(PyType(d), PyType(v)) {
				errs = append(errs, fmt.Sprintf("%s: %s %v where Primus's default is %s %v", k, PyType(v), v, PyType(d), d))
			}
			continue
		}
		if _, ok := v.(string); ok && primusSplits[k] {
			continue // Primus splits it on spaces into Megatron's list
		}
		if msg := checkValue(o, v); msg != "" {
			errs = append(errs, k+": "+msg)
		}
	}
	num := func(k string) (float64, bool) {
		switch v := ov[k].(type) {
		case float64:
			return v, true
		case int64:
			return float64(v), true
		}
		return 0, false
	}
	lr, okLR := num("lr")
	min, okMin := num("min_lr")
	if okLR && okMin && min > lr {
		errs = append(errs, fmt.Sprintf("min_lr %g is above lr %g (Megatron's validate_args requires min_lr <= lr)", min, lr))
	}
	if len(errs) > 0 {
		return fmt.Errorf("primus %s overrides: %s", p.Tag, strings.Join(errs, "; "))
	}
	return nil
}

// primusSplits are the list options Primus takes as one string and splits on spaces before Megatron
// sees them (primus/backends/megatron/patches/args/data_path_split_patches.py in v26.2).
var primusSplits = map[string]bool{"data_path": true, "train_data_path": true, "valid_data_path": true, "test_data_path": true}

func sameKind(a, b string) bool {
	num := map[string]bool{"int": true, "float": true, "bool": true} // Python's bool is an int
	return a == b || (num[a] && num[b])
}

var envRef = regexp.MustCompile(`\$\{([^:{}]+)(?::([^}]*))?\}`)

// ResolveEnv resolves ${VAR:default} in a string value as Primus's yaml loader does when VAR is not
// set (the launch's environment sets none of them): the default replaces the reference, and a result
// that reads as a number becomes one.
func ResolveEnv(v any) any {
	s, ok := v.(string)
	if !ok || !envRef.MatchString(s) {
		return v
	}
	r := envRef.ReplaceAllString(s, "$2")
	if n, ok := pyInt(r); ok {
		return n
	}
	if f, ok := pyFloat(r); ok {
		return f
	}
	return r
}

// checkValue says what is wrong with v as the value of option o ("" when nothing is).
func checkValue(o *Option, v any) string {
	if !o.TakesValue {
		if _, ok := v.(bool); !ok && v != nil {
			return fmt.Sprintf("a switch (%s) needs true or false, got %s %v", o.Flags[0], PyType(v), v)
		}
		return ""
	}
	if v == nil {
		return ""
	}
	if o.Nargs != nil {
		if s, ok := v.(string); ok && o.Type != nil && *o.Type == "str" {
			_ = s
			return ""
		}
		l, ok := v.([]any)
		if !ok {
			if o.Type != nil && *o.Type == "tuple_type" {
				return ""
			}
			return fmt.Sprintf("%s takes a list (nargs %v), got %s %v", o.Flags[0], o.Nargs, PyType(v), v)
		}
		for _, e := range l {
			if msg := checkScalar(o, e); msg != "" {
				return msg
			}
		}
		return ""
	}
	if o.Type != nil && *o.Type == "tuple_type" {
		if _, ok := v.([]any); ok {
			return ""
		}
	}
	return checkScalar(o, v)
}

func checkScalar(o *Option, v any) string {
	t := "str"
	if o.Type != nil {
		t = *o.Type
	}
	got := PyType(v)
	switch t {
	case "int":
		if got != "int" {
			return fmt.Sprintf("%s converts to int, got %s %v", o.Flags[0], got, v)
		}
	case "float":
		if got != "float" && got != "int" {
			return fmt.Sprintf("%s converts to float, got %s %v", o.Flags[0], got, v)
		}
	case "str":
		if got != "str" {
			return fmt.Sprintf("%s takes a string, got %s %v", o.Flags[0], got, v)
		}
	}
	if len(o.Choices) > 0 {
		for _, c := range o.Choices {
			if ChoiceName(c) == fmt.Sprint(v) {
				return ""
			}
		}
		return fmt.Sprintf("%s: %s %v is not one of %v", o.Flags[0], got, v, o.Choices)
	}
	return ""
}
