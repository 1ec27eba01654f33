package facts

// TorchTitan's JobConfig as data: torchtitan_<version>.json holds every section and option of
// torchtitan/config/job_config.py at one pinned commit (written by torchtitan_extract.py, which
// imports that file with torch stood in), torchtitan_<version>_primus.json the options Primus's
// torchtitan module config adds on top. CheckTorchTitan checks one generated option against them.

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

//go:embed torchtitan_*.json
var torchtitanFS embed.FS

// TitanOption is one JobConfig option: its Python type as kind (bool, int, float, str, list, dict,
// any, or section for a nested dataclass), whether None is allowed, the Literal values when the type
// is a Literal, and its default.
type TitanOption struct {
	Kind     string                 `json:"kind"`
	Nullable bool                   `json:"nullable,omitempty"`
	Values   []any                  `json:"values,omitempty"`
	Elem     string                 `json:"elem,omitempty"`
	Options  map[string]TitanOption `json:"options,omitempty"`
	Default  any                    `json:"default,omitempty"`
}

// TitanConfig is one pinned TorchTitan's JobConfig.
type TitanConfig struct {
	Version     string                            `json:"version"`
	Commit      string                            `json:"commit"`
	Source      string                            `json:"source"`
	ExtractedBy string                            `json:"extracted_by"`
	Sections    map[string]map[string]TitanOption `json:"sections"`
	// Extras are options a wrapper adds (Primus's torchtitan module config); nil when none.
	Extras *TitanConfig `json:"-"`
}

// TorchTitan returns the JobConfig facts of a pinned version (a release tag such as "v0.2.0" or a
// commit prefix such as "5fb7cc2e"); with primus, the options Primus adds are merged in as Extras.
func TorchTitan(version string, primus bool) (*TitanConfig, error) {
	c, err := readTitan("torchtitan_" + version + ".json")
	if err != nil {
		return nil, err
	}
	if primus {
		if c.Extras, err = readTitan("torchtitan_" + version + "_primus.json"); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func readTitan(name string) (*TitanConfig, error) {
	data, err := torchtitanFS.ReadFile(name)
	if err != nil {
		known, _ := TorchTitanVersions()
		return nil, fmt.Errorf("facts: no %s: TorchTitan facts exist for %s; extract another version with frameworks/facts/torchtitan_extract.py",
			name, strings.Join(known, ", "))
	}
	var c TitanConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("facts: %s: %w", name, err)
	}
	if len(c.Sections) == 0 {
		return nil, fmt.Errorf("facts: %s holds no sections", name)
	}
	return &c, nil
}

// TorchTitanVersions lists the versions with JobConfig facts.
func TorchTitanVersions() ([]string, error) {
	ents, err := torchtitanFS.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		n := strings.TrimSuffix(strings.TrimPrefix(e.Name(), "torchtitan_"), ".json")
		if !strings.HasSuffix(n, "_primus") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Lookup finds section.key, nested sections separated by dots ("quantize.linear.float8").
func (c *TitanConfig) Lookup(section, key string) (TitanOption, bool) {
	parts := strings.Split(section, ".")
	opts, ok := c.Sections[parts[0]]
	for _, p := range parts[1:] {
		if !ok {
			break
		}
		var o TitanOption
		if o, ok = opts[p]; ok && o.Kind == "section" {
			opts = o.Options
		} else {
			ok = false
		}
	}
	if ok {
		if o, found := opts[key]; found {
			return o, true
		}
	}
	if c.Extras != nil {
		return c.Extras.Lookup(section, key)
	}
	return TitanOption{}, false
}

// Check checks one option given as a TOML literal (a basic string, an integer, a float, true or
// false) against the facts: the option must exist and the value must have its type (an integer is a
// float too, as Python takes it) and be one of its Literal values.
func (c *TitanConfig) Check(section, key, literal string) error {
	where := fmt.Sprintf("TorchTitan %s (%s@%s)", c.Version, c.Source, short(c.Commit))
	o, ok := c.Lookup(section, key)
	if !ok {
		if _, known := c.Sections[section]; !known {
			return fmt.Errorf("facts: [%s] is not a section of %s's JobConfig", section, where)
		}
		return fmt.Errorf("facts: %s.%s is not an option of %s's JobConfig: see frameworks/facts/torchtitan_%s.json for the options it has",
			section, key, where, c.Version)
	}
	kind, v, err := parseLiteral(literal)
	if err != nil {
		return fmt.Errorf("facts: %s.%s = %s: %w", section, key, literal, err)
	}
	okKind := false
	switch o.Kind {
	case "any":
		okKind = true
	case "float":
		okKind = kind == "float" || kind == "int"
	default:
		okKind = kind == o.Kind
	}
	if !okKind {
		return fmt.Errorf("facts: %s.%s = %s is a TOML %s, but %s types it %s", section, key, literal, kind, where, o.Kind)
	}
	if len(o.Values) > 0 {
		for _, allowed := range o.Values {
			if equalValue(allowed, v) {
				return nil
			}
		}
		return fmt.Errorf("facts: %s.%s = %s is not one of %s's values %v", section, key, literal, where, o.Values)
	}
	return nil
}

func short(commit string) string {
	if len(commit) > 8 {
		return commit[:8]
	}
	return commit
}

// parseLiteral reads the TOML literals Rival writes: basic strings, integers, floats, booleans and
// the empty list.
func parseLiteral(s string) (kind string, v any, err error) {
	switch {
	case s == "[]":
		return "list", nil, nil
	case s == "true" || s == "false":
		return "bool", s == "true", nil
	case strings.HasPrefix(s, `"`):
		var str string
		if err := json.Unmarshal([]byte(s), &str); err != nil {
			return "", nil, fmt.Errorf("not a basic string: %v", err)
		}
		return "str", str, nil
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return "int", float64(i), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return "float", f, nil
	}
	return "", nil, fmt.Errorf("not a string, number or boolean literal")
}

// equalValue compares a JSON-decoded Literal value with a parsed literal.
func equalValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	default:
		return a == b
	}
}
