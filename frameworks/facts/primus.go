package facts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Typed is a value with the Python type name a Primus loader gave it.
type Typed struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// EXP is one stock Primus experiment file: root keys, the pre_trainer module's settings, and its
// overrides in file order as [key, value] pairs (values as PyYAML's SafeLoader reads them).
type EXP struct {
	Root       map[string]any    `json:"root"`
	PreTrainer map[string]string `json:"pre_trainer"`
	Overrides  [][2]any          `json:"overrides"`
}

// Install is one thing a Primus run installs or builds at run time.
type Install struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Kind   string `json:"kind"`   // pip-requirements | make | pip-editable
	Target string `json:"target"` // relative to the Primus tree
}

// Primus is what one Primus release accepts.
type Primus struct {
	Source    string                    `json:"source"`
	Tag       string                    `json:"tag"`
	Commit    string                    `json:"commit"`
	EXPDir    string                    `json:"exp_dir"`
	EXPFiles  []string                  `json:"exp_files"`
	EXPs      map[string]EXP            `json:"exps"`
	Module    map[string]any            `json:"module"`
	Models    map[string]map[string]any `json:"models"`
	CLITyping map[string]Typed          `json:"cli_typing"`
	// RunTimeInstalls are what a default run installs or builds before training.
	RunTimeInstalls []Install        `json:"run_time_installs"`
	YAMLTyping      map[string]Typed `json:"yaml_typing"`
}

var primuses = map[string]*Primus{}

// PrimusAt returns the facts of a Primus release tag (v26.2).
func PrimusAt(tag string) (*Primus, error) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := primuses[tag]; ok {
		return p, nil
	}
	b, err := data.ReadFile("primus_" + tag + ".json")
	if err != nil {
		return nil, fmt.Errorf("facts: no extracted facts for Primus %s: run frameworks/facts/extract_primus.py on that tree (%w)", tag, err)
	}
	var p Primus
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep 50 (int) apart from 50.0 (float), as Python does
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("facts: primus_%s.json: %w", tag, err)
	}
	for _, e := range p.EXPs {
		for i := range e.Overrides {
			e.Overrides[i][1] = pyNumbers(e.Overrides[i][1])
		}
		for k, v := range e.Root {
			e.Root[k] = pyNumbers(v)
		}
	}
	for k, v := range p.Module {
		p.Module[k] = pyNumbers(v)
	}
	for _, m := range p.Models {
		for k, v := range m {
			m[k] = pyNumbers(v)
		}
	}
	for k, t := range p.CLITyping {
		t.Value = pyNumbers(t.Value)
		p.CLITyping[k] = t
	}
	for k, t := range p.YAMLTyping {
		t.Value = pyNumbers(t.Value)
		p.YAMLTyping[k] = t
	}
	primuses[tag] = &p
	return &p, nil
}

// HasEXP reports whether the release ships the experiment file (a name under EXPDir).
func (p *Primus) HasEXP(name string) bool {
	for _, f := range p.EXPFiles {
		if f == name {
			return true
		}
	}
	return false
}

// Stock returns a stock experiment Rival starts from.
func (p *Primus) Stock(name string) (EXP, error) {
	e, ok := p.EXPs[name]
	if !ok {
		known := make([]string, 0, len(p.EXPs))
		for k := range p.EXPs {
			known = append(known, k)
		}
		sort.Strings(known)
		return EXP{}, fmt.Errorf("facts: Primus %s: no extracted stock experiment %s under %s (extracted: %s)", p.Tag, name, p.EXPDir, strings.Join(known, ", "))
	}
	return e, nil
}

// KnownKey reports whether a pre_trainer override key is one the module config or the model config
// defines, or a Megatron option (Primus's core runtime hands keys it does not define to Megatron).
func (p *Primus) KnownKey(key, model string, m *Megatron) bool {
	if _, ok := p.Module[key]; ok {
		return true
	}
	if _, ok := p.Models[model][key]; ok {
		return true
	}
	if m != nil {
		if _, ok := m.Dest(key); ok {
			return true
		}
	}
	return false
}

// pyNumbers turns JSON numbers into the Python values they were written from: int64 for an integer
// text, float64 for a text with a dot or an exponent (Python's json writes floats that way).
func pyNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			if n, err := x.Int64(); err == nil {
				return n
			}
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = pyNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = pyNumbers(x[k])
		}
	}
	return v
}
