package models

import (
	"fmt"
	"sort"
	"strings"
)

// families is the registry, in the order messages list the models: adding a model is its own file
// (llama.go is one) and one line here.
var families = []Family{llama31_8B, qwen25_7B, mistral7B}

var registry = map[string]Model{}

func register(m Model) {
	if _, dup := registry[m.Name]; dup {
		panic("models: duplicate registry key " + m.Name)
	}
	registry[m.Name] = m
}

// proxyOf derives a proxy from a full model: same tokenizer, vocabulary,
// special ids, rope base, bias, GQA ratio and window share, but tiny depth and width so a
// few training steps take seconds on two CPU cores at sequence length 128.
func proxyOf(base Model, layers, hidden, ffn, heads int) Model {
	ratio := base.Heads / base.KVHeads
	p := base
	p.Name = base.Name + "-proxy"
	p.Proxy = true
	p.Base = base.Name
	p.Layers, p.Hidden, p.FFN, p.Heads = layers, hidden, ffn, heads
	p.KVHeads = heads / ratio
	p.MaxPositions = 4096
	// The window keeps its share of the positions (Mistral: 4096 of 32768, so 512 of 4096), so a
	// proxy trained past it exercises the sliding-window path as the full model does past 4096.
	p.SlidingWindow = base.SlidingWindow * p.MaxPositions / base.MaxPositions
	p.DisplayName = fmt.Sprintf("%s proxy (%d layers, h%d)", base.DisplayName, layers, hidden)
	return p
}

func init() {
	for _, f := range families {
		register(f.Model)
	}
	for _, f := range families {
		p := f.Proxy
		register(proxyOf(f.Model, p.Layers, p.Hidden, p.FFN, p.Heads))
	}
}

// Bases lists the registry keys of the full models (not proxies), in the registry's order: what
// config.env's MODELS accepts.
func Bases() []string {
	out := make([]string, len(families))
	for i, f := range families {
		out[i] = f.Model.Name
	}
	return out
}

// Lookup returns the model registered under name (case-insensitive).
func Lookup(name string) (Model, error) {
	if m, ok := registry[strings.ToLower(strings.TrimSpace(name))]; ok {
		return m, nil
	}
	return Model{}, fmt.Errorf("unknown model %q: known models are %s", name, strings.Join(Names(), ", "))
}

// Names lists the registry keys in sorted order.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// All returns every registered model, sorted by key.
func All() []Model {
	out := make([]Model, 0, len(registry))
	for _, n := range Names() {
		out = append(out, registry[n])
	}
	return out
}

// FactsMarkdown renders every registered model's facts as the Markdown table docs/frameworks.md
// shows between its model-facts markers (TestDocsModelFacts keeps the two equal).
func FactsMarkdown() string {
	var b strings.Builder
	b.WriteString("| model | layers | hidden | FFN | heads | KV heads | vocab | positions | RoPE θ | RoPE scaling | RMSNorm ε | init std | QKV bias | window | tied embeddings |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	yes := map[bool]string{true: "yes", false: "no"}
	for _, m := range All() {
		window, scaling := "none", "none"
		if m.SlidingWindow > 0 {
			window = fmt.Sprint(m.SlidingWindow)
		}
		if m.RopeScaling != nil {
			scaling = m.RopeScaling.String()
		}
		fmt.Fprintf(&b, "| `%s` | %d | %d | %d | %d | %d | %d | %d | %g | %s | %g | %g | %s | %s | %s |\n",
			m.Name, m.Layers, m.Hidden, m.FFN, m.Heads, m.KVHeads, m.Vocab, m.MaxPositions, m.RopeTheta, scaling,
			m.NormEps, m.InitStd, yes[m.QKVBias], window, yes[m.TiedEmbeddings])
	}
	return b.String()
}
