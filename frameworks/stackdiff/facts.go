package stackdiff

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Frameworks whose trees stack:diff compares, and the facts each tree's extractor writes.
const (
	Megatron   = "mega"  // Megatron-LM: megatron/training/arguments.py's options
	Primus     = "prim"  // Primus: its Megatron module config, model configs and stock experiments
	Bridge     = "nemo"  // Megatron-Bridge: its config sections and model providers
	TorchTitan = "titan" // TorchTitan: its job config sections
)

// Frameworks lists the frameworks stack:diff takes.
var Frameworks = []string{Megatron, Primus, Bridge, TorchTitan}

// release names a tree by what its facts say it is.
func release(framework string, doc map[string]any) string {
	str := func(v any) string { s, _ := v.(string); return s }
	short := func(c string) string {
		if len(c) > 8 {
			return c[:8]
		}
		return c
	}
	switch framework {
	case Megatron:
		return "Megatron Core " + str(doc["megatron_core"]) + " (" + short(str(doc["commit"])) + ")"
	case Primus:
		return "Primus " + str(doc["tag"]) + " (" + short(str(doc["commit"])) + ")"
	case TorchTitan:
		return "TorchTitan " + str(doc["version"]) + " (" + short(str(doc["commit"])) + ")"
	case Bridge:
		src, _ := doc["source"].(map[string]any)
		b, _ := src["megatron_bridge"].(map[string]any)
		m, _ := src["megatron_core"].(map[string]any)
		return "Megatron-Bridge " + str(b["version"]) + " on Megatron Core " + str(m["version"])
	}
	return framework
}

// items reads one facts document of framework into its named entries.
func items(framework string, b []byte) ([]item, string, error) {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, "", fmt.Errorf("stack diff: %s facts: %w", framework, err)
	}
	var out []item
	switch framework {
	case Megatron:
		var d struct {
			Options []map[string]any `json:"options"`
		}
		if err := json.Unmarshal(b, &d); err != nil || len(d.Options) == 0 {
			return nil, "", fmt.Errorf("stack diff: Megatron facts without options (%v)", err)
		}
		for _, o := range d.Options {
			flags, _ := o["flags"].([]any)
			if len(flags) == 0 {
				continue
			}
			name, _ := flags[0].(string)
			attrs := map[string]string{}
			for _, a := range []string{"default", "type", "choices", "action", "nargs", "dest"} {
				attrs[a] = text(o[a])
			}
			if len(flags) > 1 {
				attrs["aliases"] = text(flags[1:])
			}
			out = append(out, item{area: "arguments", name: name, attrs: attrs,
				locate: locator{globs: []string{"megatron/training/arguments.py", "megatron/training/*.py", "megatron/training/*/*.py", "megatron/*/*.py"}, pattern: `['"]%s['"]`}})
		}
	case Primus:
		var d struct {
			ExpDir string                    `json:"exp_dir"`
			Module map[string]any            `json:"module"`
			Models map[string]map[string]any `json:"models"`
			Exps   map[string]struct {
				PreTrainer map[string]any `json:"pre_trainer"`
				Overrides  [][]any        `json:"overrides"`
			} `json:"exps"`
		}
		if err := json.Unmarshal(b, &d); err != nil || len(d.Module) == 0 {
			return nil, "", fmt.Errorf("stack diff: Primus facts without the module config (%v)", err)
		}
		yamlKey := `^\s*%s\s*:`
		for _, k := range slices.Sorted(maps.Keys(d.Module)) {
			out = append(out, item{area: "module", name: k, attrs: map[string]string{"default": text(d.Module[k])},
				locate: locator{globs: []string{"primus/configs/modules/megatron/*.yaml", "primus/configs/modules/*.yaml"}, pattern: yamlKey}})
		}
		for _, f := range slices.Sorted(maps.Keys(d.Models)) {
			for _, k := range slices.Sorted(maps.Keys(d.Models[f])) {
				out = append(out, item{area: "model " + f, name: k, attrs: map[string]string{"default": text(d.Models[f][k])},
					locate: locator{globs: []string{"primus/configs/models/megatron/" + f}, pattern: yamlKey}})
			}
		}
		for _, f := range slices.Sorted(maps.Keys(d.Exps)) {
			e := d.Exps[f]
			loc := locator{globs: []string{d.ExpDir + "/" + f}, pattern: yamlKey}
			for _, k := range slices.Sorted(maps.Keys(e.PreTrainer)) {
				out = append(out, item{area: "stock " + f, name: k, attrs: map[string]string{"default": text(e.PreTrainer[k])}, locate: loc})
			}
			for _, kv := range e.Overrides {
				if len(kv) == 2 {
					k, _ := kv[0].(string)
					out = append(out, item{area: "stock " + f, name: k, attrs: map[string]string{"default": text(kv[1])}, locate: loc})
				}
			}
		}
	case TorchTitan:
		var d struct {
			Sections map[string]map[string]map[string]any `json:"sections"`
		}
		if err := json.Unmarshal(b, &d); err != nil || len(d.Sections) == 0 {
			return nil, "", fmt.Errorf("stack diff: TorchTitan facts without sections (%v)", err)
		}
		for _, s := range slices.Sorted(maps.Keys(d.Sections)) {
			for _, f := range slices.Sorted(maps.Keys(d.Sections[s])) {
				e := d.Sections[s][f]
				attrs := map[string]string{"default": text(e["default"]), "type": text(e["kind"])}
				if v, ok := e["values"]; ok {
					attrs["values"] = text(v)
				}
				out = append(out, item{area: "[" + s + "]", name: f, attrs: attrs,
					locate: locator{globs: []string{"torchtitan/config/job_config.py"}, pattern: `^\s+%s\s*:`}})
			}
		}
	case Bridge:
		var d struct {
			Sections map[string]bridgeClass `json:"sections"`
			Classes  map[string]bridgeClass `json:"classes"`
		}
		if err := json.Unmarshal(b, &d); err != nil || len(d.Sections) == 0 {
			return nil, "", fmt.Errorf("stack diff: Megatron-Bridge facts without sections (%v)", err)
		}
		field := locator{globs: []string{"src/megatron/bridge/training/*.py", "src/megatron/bridge/training/*/*.py", "src/megatron/bridge/models/*.py",
			"src/megatron/bridge/models/*/*.py", "megatron/core/*.py", "megatron/core/*/*.py", "megatron/core/*/*/*.py"}, pattern: `^\s+%s\s*:`}
		for _, s := range slices.Sorted(maps.Keys(d.Sections)) {
			out = append(out, d.Sections[s].items("section "+s, field)...)
		}
		for _, c := range slices.Sorted(maps.Keys(d.Classes)) {
			cl := d.Classes[c]
			if cl.Absent != "" {
				// A provider class the tree lacks (Bridge 0.5 folds the Llama and Qwen providers
				// into GPTModelProvider) is one removal, not one per field.
				continue
			}
			out = append(out, cl.items("class "+c, field)...)
			out = append(out, item{area: "classes", name: c, attrs: map[string]string{"type": cl.Class},
				locate: locator{globs: field.globs, pattern: `^class %s\b`}})
		}
	default:
		return nil, "", fmt.Errorf("stack diff: no framework %q: one of %s", framework, strings.Join(Frameworks, ", "))
	}
	return out, release(framework, doc), nil
}

type bridgeClass struct {
	Absent string                    `json:"absent"`
	Class  string                    `json:"class"`
	Fields map[string]map[string]any `json:"fields"`
}

func (c bridgeClass) items(area string, loc locator) []item {
	var out []item
	for _, f := range slices.Sorted(maps.Keys(c.Fields)) {
		e := c.Fields[f]
		attrs := map[string]string{"type": text(e["text"])}
		if d, ok := e["default"]; ok {
			attrs["default"] = text(d)
		} else {
			attrs["default"] = "required"
		}
		out = append(out, item{area: area, name: f, attrs: attrs, locate: loc})
	}
	return out
}
