// The Bridge facts and the check of a built configuration against them: the tests read
// frameworks/facts/bridge_<version>.json through these to prove that Build writes only what
// Megatron-Bridge accepts. They are test code; the launch itself is checked by Bridge (rival_nemo.py --check).

package nemo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Facts are Megatron-Bridge's configuration classes as data: for each ConfigContainer section the
// fields of its dataclass, their types and defaults, extracted from a Bridge tree by
// bridgecheck/extract.py (frameworks/facts/bridge_<version>.json).
type Facts struct {
	Source struct {
		MegatronBridge struct{ Version, Commit string } `json:"megatron_bridge"`
		MegatronCore   struct{ Version, Commit string } `json:"megatron_core"`
	} `json:"source"`
	Sections map[string]ClassFacts `json:"sections"`
	// Classes are other classes recorded for reference, among them the Llama 3.1 provider
	// rival_nemo.py builds the model section with when the section names its RoPE-scaling fields
	// (recorded as absent where the release has none).
	Classes map[string]ClassFacts `json:"classes"`
}

// llama31Fields are Llama31ModelProvider's own fields (rival_nemo.py's LLAMA31_FIELDS).
var llama31Fields = []string{"scale_factor", "low_freq_factor", "high_freq_factor", "old_context_len"}

// sectionClass is the class rival_nemo.py builds a section with.
func (f *Facts) sectionClass(section string, fields map[string]any) (ClassFacts, error) {
	if section == "model" {
		for _, n := range llama31Fields {
			if _, ok := fields[n]; ok {
				cf, ok := f.Classes["Llama31ModelProvider"]
				if !ok || cf.Absent != "" || len(cf.Fields) == 0 {
					return cf, fmt.Errorf("model.%s: a Llama31ModelProvider field, and Megatron-Bridge %s has no Llama31ModelProvider", n, f.Source.MegatronBridge.Version)
				}
				return cf, nil
			}
		}
	}
	cf, ok := f.Sections[section]
	if !ok {
		return cf, fmt.Errorf("%s: not a ConfigContainer section Rival builds (known: %s)", section, strings.Join(sortedKeys(f.Sections), ", "))
	}
	return cf, nil
}

// ClassFacts describes one dataclass.
type ClassFacts struct {
	Class       string                `json:"class"`
	Fields      map[string]FieldFacts `json:"fields"`
	InitAliases map[string]string     `json:"init_aliases"` // constructor argument → the field it sets
	Absent      string                `json:"absent"`       // module.class looked for where the tree has no such class
}

// FieldFacts describes one dataclass field.
type FieldFacts struct {
	Type     Type   `json:"type"`
	Text     string `json:"text"` // the Python annotation, for messages
	Init     bool   `json:"init"` // false: computed, not a constructor argument
	Required bool   `json:"required"`
	Default  any    `json:"default"` // the dataclass default as JSON (null without one or when not writable)
}

// Type is a field's type as a tree (see bridgecheck/extract.py for the kinds).
type Type struct {
	Kind     string   `json:"kind"`
	Of       []Type   `json:"of"`
	Variadic bool     `json:"variadic"`
	Values   []any    `json:"values"`
	Name     string   `json:"name"`
	Members  []string `json:"members"`
}

// LoadFacts reads a facts file's contents.
func LoadFacts(b []byte) (*Facts, error) {
	var f Facts
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("nemo: Bridge facts: %w (regenerate them with frameworks/nemo/bridgecheck/extract.py)", err)
	}
	if len(f.Sections) == 0 {
		return nil, errors.New("nemo: Bridge facts hold no sections (regenerate them with frameworks/nemo/bridgecheck/extract.py)")
	}
	return &f, nil
}

// Names the entry script accepts for fields JSON cannot carry directly (rival_nemo.py's _value).
var (
	dtypeNames    = []string{"bfloat16", "float16", "float32"}
	callableNames = []string{"silu", "gelu"}
	enumNames     = []string{"megatron.core.transformer.enums.AttnBackend"} // rival_nemo.py's ENUMS
)

// CheckConfig checks a launch's Bridge configuration (the JSON file a launch ships) against the facts:
// every section is a known ConfigContainer section, every field exists in its dataclass and is a
// constructor argument, every value has the field's type, every field without a default is given.
// Then it checks the relations Bridge and Megatron Core assert when they build the run from it, for
// world processes. It returns every problem found, each naming section.field.
func CheckConfig(f *Facts, configJSON []byte, world int) error {
	dec := json.NewDecoder(bytes.NewReader(configJSON))
	dec.UseNumber()
	var cfg map[string]map[string]any
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("nemo: the Bridge configuration is not a JSON object of sections: %w", err)
	}
	var errs []error
	for _, section := range sortedKeys(cfg) {
		cf, err := f.sectionClass(section, cfg[section])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		given := map[string]bool{}
		for _, name := range sortedKeys(cfg[section]) {
			field := name
			if alias, ok := cf.InitAliases[name]; ok {
				field = alias
			}
			given[field] = true
			ff, ok := cf.Fields[field]
			if !ok {
				errs = append(errs, fmt.Errorf("%s.%s: %s has no such field", section, name, cf.Class))
				continue
			}
			if !ff.Init {
				errs = append(errs, fmt.Errorf("%s.%s: %s computes this field; it is not a constructor argument", section, name, cf.Class))
				continue
			}
			if err := matches(ff.Type, cfg[section][name]); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: want %s: %w", section, name, ff.Text, err))
			}
		}
		for _, name := range sortedKeys(cf.Fields) {
			if cf.Fields[name].Required && !given[name] {
				errs = append(errs, fmt.Errorf("%s.%s: %s has no default for it and the configuration does not set it", section, name, cf.Class))
			}
		}
	}
	errs = append(errs, deprecated(f, cfg)...)
	errs = append(errs, relations(cfg, world)...)
	return errors.Join(errs...)
}

// deprecated refuses a train field that the release moved to ValidationConfig: where the facts hold
// a validation section, ConfigContainer.validate copies every non-null train field of the same name
// onto it with a deprecation warning (Bridge 0.5.0's config.py), so the configuration writes it there.
func deprecated(f *Facts, cfg map[string]map[string]any) []error {
	v, ok := f.Sections["validation"]
	if !ok {
		return nil
	}
	var errs []error
	for _, name := range sortedKeys(cfg["train"]) {
		if _, moved := v.Fields[name]; moved && cfg["train"][name] != nil {
			errs = append(errs, fmt.Errorf("train.%s: deprecated in Megatron-Bridge %s, which reads validation.%s (%s)", name, f.Source.MegatronBridge.Version, name, v.Class))
		}
	}
	return errs
}

// relations are the cross-field rules the pinned Bridge and Megatron Core assert when they build a
// run, each with the upstream place that asserts it.
func relations(cfg map[string]map[string]any, world int) []error {
	var errs []error
	num := func(section, field string) (float64, bool) {
		n, ok := cfg[section][field].(json.Number)
		if !ok {
			return 0, false
		}
		v, err := n.Float64()
		return v, err == nil
	}
	for _, s := range []string{"model", "train", "optimizer", "scheduler", "dataset", "logger", "tokenizer", "checkpoint", "rng"} {
		if _, ok := cfg[s]; !ok {
			errs = append(errs, fmt.Errorf("%s: ConfigContainer has no default for this section and the configuration lacks it", s))
		}
	}
	if lr, ok := num("optimizer", "lr"); ok {
		if minLR, ok := num("optimizer", "min_lr"); ok && (minLR < 0 || minLR > lr) {
			errs = append(errs, fmt.Errorf("optimizer.min_lr %g: Megatron Core's OptimizerParamScheduler asserts 0 <= min_lr <= lr (%g)", minLR, lr))
		}
	}
	iters, hasIters := num("train", "train_iters")
	if !hasIters {
		errs = append(errs, errors.New("train.train_iters: TrainingConfig.finalize asserts train_iters or train_samples; Rival trains by iterations"))
	}
	if w, ok := num("scheduler", "lr_warmup_iters"); ok && hasIters {
		decay := iters
		if d, ok := num("scheduler", "lr_decay_iters"); ok {
			decay = d
		}
		if w >= decay {
			errs = append(errs, fmt.Errorf("scheduler.lr_warmup_iters %g: Megatron Core's OptimizerParamScheduler asserts warm-up < decay steps (%g)", w, decay))
		}
	}
	if s, ok := num("rng", "seed"); !ok || s <= 0 {
		errs = append(errs, errors.New("rng.seed: Bridge's _set_random_seed asserts a positive seed"))
	}
	if a, ok := num("model", "seq_length"); ok {
		if b, ok := num("dataset", "seq_length"); !ok || a != b {
			errs = append(errs, fmt.Errorf("dataset.seq_length: ConfigContainer.validate asserts it equals model.seq_length %g", a))
		}
	}
	if start, ok := num("profiling", "profile_step_start"); ok {
		if end, ok := num("profiling", "profile_step_end"); ok && end < start {
			errs = append(errs, fmt.Errorf("profiling.profile_step_end %g: ProfilingConfig.finalize asserts end >= start (%g)", end, start))
		}
	}
	if cfg["optimizer"]["use_distributed_optimizer"] == true {
		if f, _ := cfg["checkpoint"]["ckpt_format"].(string); f != "torch_dist" {
			errs = append(errs, errors.New("checkpoint.ckpt_format: ConfigContainer.validate asserts torch_dist with the distributed optimizer"))
		}
	}
	tp, ok1 := num("model", "tensor_model_parallel_size")
	pp, ok2 := num("model", "pipeline_model_parallel_size")
	mbs, ok3 := num("train", "micro_batch_size")
	gbs, ok4 := num("train", "global_batch_size")
	if ok1 && ok2 && world > 0 {
		cp := 1.0
		if c, ok := num("model", "context_parallel_size"); ok {
			cp = c
		}
		model := int(tp * pp * cp)
		if model <= 0 || world%model != 0 {
			errs = append(errs, fmt.Errorf("model: ConfigContainer.get_data_parallel_size asserts TP×PP×CP = %d divides the world size %d", model, world))
		} else if ok3 && ok4 {
			dp := world / model
			if int(gbs)%(int(mbs)*dp) != 0 {
				errs = append(errs, fmt.Errorf("train.global_batch_size %g: Megatron Core's micro-batch calculator asserts it is a multiple of micro_batch_size × DP = %g×%d", gbs, mbs, dp))
			}
		}
		if sp, _ := cfg["model"]["sequence_parallel"].(bool); sp && tp == 1 {
			errs = append(errs, errors.New("model.sequence_parallel: Megatron Core's ModelParallelConfig raises \"Cannot use sequence parallelism without tensor parallelism\" at TP 1"))
		}
	}
	return errs
}

// matches reports whether a JSON value (numbers as json.Number) fits a field type.
func matches(t Type, v any) error {
	switch t.Kind {
	case "any":
		return nil
	case "none":
		if v == nil {
			return nil
		}
	case "bool":
		if _, ok := v.(bool); ok {
			return nil
		}
	case "int":
		if n, ok := v.(json.Number); ok && !strings.ContainsAny(n.String(), ".eE") {
			return nil
		}
	case "float":
		if _, ok := v.(json.Number); ok {
			return nil // Python accepts an int where a float is declared
		}
	case "str":
		if _, ok := v.(string); ok {
			return nil
		}
	case "dtype":
		if s, ok := v.(string); ok && contains(dtypeNames, s) {
			return nil
		}
		return fmt.Errorf("%s: the entry script knows the dtypes %s", show(v), strings.Join(dtypeNames, ", "))
	case "callable":
		if s, ok := v.(string); ok && contains(callableNames, s) {
			return nil
		}
		return fmt.Errorf("%s: the entry script knows the functions %s", show(v), strings.Join(callableNames, ", "))
	case "literal":
		for _, want := range t.Values {
			if literalEqual(want, v) {
				return nil
			}
		}
		return fmt.Errorf("%s is not one of %v", show(v), t.Values)
	case "list", "set":
		a, ok := v.([]any)
		if !ok {
			break
		}
		if len(t.Of) == 0 {
			return nil // element type not recorded
		}
		for i, e := range a {
			if err := matches(t.Of[0], e); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	case "tuple":
		a, ok := v.([]any)
		if !ok {
			break
		}
		if len(t.Of) == 0 || !t.Variadic && len(a) != len(t.Of) {
			return fmt.Errorf("%s has %d elements, the tuple %d", show(v), len(a), len(t.Of))
		}
		for i, e := range a {
			et := t.Of[0]
			if !t.Variadic {
				et = t.Of[i]
			}
			if err := matches(et, e); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		return nil
	case "dict":
		o, ok := v.(map[string]any)
		if !ok {
			break
		}
		for k, e := range o {
			if len(t.Of) == 2 {
				if err := matches(t.Of[1], e); err != nil {
					return fmt.Errorf("key %q: %w", k, err)
				}
			}
		}
		return nil
	case "union":
		var reasons []string
		for _, alt := range t.Of {
			err := matches(alt, v)
			if err == nil {
				return nil
			}
			reasons = append(reasons, err.Error())
		}
		return fmt.Errorf("%s fits none of the alternatives (%s)", show(v), strings.Join(reasons, "; "))
	case "enum":
		if !contains(enumNames, t.Name) {
			return fmt.Errorf("%s: the entry script does not convert to the enum %s; leave the field at its default", show(v), t.Name)
		}
		if s, ok := v.(string); ok && contains(t.Members, s) {
			return nil
		}
		return fmt.Errorf("%s is not a member of %s (%s)", show(v), t.Name, strings.Join(t.Members, ", "))
	case "class":
		return fmt.Errorf("%s: a %s cannot be written in JSON; leave the field at its default", show(v), t.Name)
	default:
		return fmt.Errorf("unknown type kind %q in the facts (regenerate them)", t.Kind)
	}
	return fmt.Errorf("%s is not a %s", show(v), t.Kind)
}

func literalEqual(want, v any) bool {
	switch w := want.(type) {
	case string:
		s, ok := v.(string)
		return ok && s == w
	case bool:
		b, ok := v.(bool)
		return ok && b == w
	case float64:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f == w
	case nil:
		return v == nil
	}
	return false
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
