package prim

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Patch returns a copy of a Primus EXP yaml (name is its path, for messages) with root-level keys set
// from root and the given keys set under modules.pre_trainer.overrides, editing the parsed node tree
// so every other line, comment and key order is kept. Values are Python literals as Primus's
// command line takes them; they are written as the matching YAML scalars.
func Patch(name string, src []byte, root map[string]string, overrides []Override) ([]byte, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		return nil, fmt.Errorf("prim: EXP yaml %s is empty: read it from the Primus image (%s)", name, Dir)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("prim: parse EXP yaml %s: %w", name, err)
	}
	// A node tree keeps a key given twice, which no reader of the patched file can tell apart:
	// decoding into plain values refuses it, naming both lines.
	var plain any
	if err := yaml.Unmarshal(src, &plain); err != nil {
		return nil, fmt.Errorf("prim: parse EXP yaml %s: %w", name, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("prim: EXP yaml %s: the top level is not a mapping of keys (work_group, exp_name, modules, ...)", name)
	}
	top := doc.Content[0]
	rootKeys := make([]string, 0, len(root))
	for k := range root {
		rootKeys = append(rootKeys, k)
	}
	sort.Strings(rootKeys)
	for _, k := range rootKeys {
		v := lookup(top, k)
		if v == nil {
			return nil, fmt.Errorf("prim: EXP yaml %s has no key %s: is it a Primus experiment file?", name, k)
		}
		setScalar(v, root[k])
	}
	ov, err := walk(top, name, "modules", "pre_trainer", "overrides")
	if err != nil {
		return nil, err
	}
	first := true
	for _, o := range overrides {
		val, err := literalNode(o.Value)
		if err != nil {
			return nil, fmt.Errorf("prim: value of %s for %s: %w", o.Key, name, err)
		}
		if cur := lookup(ov, o.Key); cur != nil {
			if cur.Kind == yaml.ScalarNode && val.Kind == yaml.ScalarNode && cur.Value != val.Value && cur.LineComment == "" {
				val.LineComment = "# Rival; the stock value was " + cur.Value
			}
			*cur = *keepComments(cur, val)
			continue
		}
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: o.Key}
		if first {
			key.HeadComment = "set by Rival"
			first = false
		}
		ov.Content = append(ov.Content, key, val)
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("prim: write patched %s: %w", name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("prim: write patched %s: %w", name, err)
	}
	return out.Bytes(), nil
}

// walk walks nested mappings, naming the first key that is missing or not a mapping.
func walk(n *yaml.Node, name string, keys ...string) (*yaml.Node, error) {
	for i, k := range keys {
		v := lookup(n, k)
		at := strings.Join(keys[:i+1], ".")
		if v == nil {
			return nil, fmt.Errorf("prim: EXP yaml %s has no key %s (a Primus experiment puts its Megatron settings under modules.pre_trainer.overrides)", name, at)
		}
		if v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("prim: EXP yaml %s: key %s is not a mapping (line %d)", name, at, v.Line)
		}
		n = v
	}
	return n, nil
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func setScalar(n *yaml.Node, v string) {
	n.Kind, n.Tag, n.Value, n.Style, n.Content = yaml.ScalarNode, "!!str", v, 0, nil
}

func keepComments(old, n *yaml.Node) *yaml.Node {
	n.HeadComment, n.FootComment = old.HeadComment, old.FootComment
	if n.LineComment == "" {
		n.LineComment = old.LineComment
	}
	return n
}

var pyNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$`)

// literalNode turns the Python literal of an override into the YAML node Primus reads back as the
// same value.
func literalNode(v string) (*yaml.Node, error) {
	scalar := func(tag, val string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: val} }
	switch {
	case v == "True":
		return scalar("!!bool", "true"), nil
	case v == "False":
		return scalar("!!bool", "false"), nil
	case v == "None":
		return scalar("!!null", "null"), nil
	case pyNumber.MatchString(v):
		if strings.ContainsAny(v, ".eE") {
			// SafeLoader reads a float only with a dot: write 3e-05 as 0.00003.
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("float %q: %w", v, err)
			}
			return scalar("!!float", pyFloat(f)), nil
		}
		return scalar("!!int", v), nil
	case strings.HasPrefix(v, "["):
		if !strings.HasSuffix(v, "]") {
			return nil, errors.New("unterminated list " + v)
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, e := range strings.Split(strings.Trim(v, "[]"), ",") {
			e = strings.TrimSpace(e)
			if !pyNumber.MatchString(e) {
				return nil, fmt.Errorf("list element %q is not a number", e)
			}
			seq.Content = append(seq.Content, scalar("!!int", e))
		}
		return seq, nil
	default:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: yaml.DoubleQuotedStyle}, nil
	}
}
