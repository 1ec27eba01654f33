// Package models is Rival's registry of the benchmarked language models: their
// architecture constants (from each model's config.json), tokenizer and special
// token ids, and the small proxy models of the same families used for CPU and
// single-GPU runs. It also owns the one FLOP formula every result is scored with.
//
// [Lookup] and [All] give a [Model] by registry key (llama, qwen, mistral and their -proxy
// variants); [Model.TrainFLOPsPerToken] is the formula (flops.go). Each model's facts are one
// [Family] in its own file (llama.go, qwen.go, mistral.go); registry.go lists them and derives the
// proxies. It imports nothing else from Rival; the framework builders, result, compare and tasks
// read it.
package models

import (
	"fmt"
)

// Model describes one decoder-only transformer of the Llama family of layouts
// (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU MLP, untied
// output layer). It holds every fact of the model a training run builds: each
// framework's launch builder derives the model it trains from a Model and
// nothing else (docs/frameworks.md, "Model facts"), and config.env holds the
// recipe (batch, schedule, optimizer, precision, parallelism).
type Model struct {
	Name        string // registry key: "llama", "qwen", "mistral", "llama-proxy", ...
	DisplayName string // what people read; proxies say "proxy" and their size
	Proxy       bool
	Base        string // for proxies: the registry key of the full model they imitate
	HFRepo      string // Hugging Face repository of the base model (proxies: the base's)
	// HFRevision is the commit of HFRepo whose tokenizer files and config.json Rival fetches and
	// whose facts this entry holds (docs/fetch.md says where each pin comes from); Gated: the
	// repository needs HF_TOKEN with its licence accepted.
	HFRevision   string
	Gated        bool
	Layers       int
	Hidden       int
	FFN          int
	Heads        int
	KVHeads      int
	Vocab        int // rows of the embedding matrix (config.json vocab_size)
	MaxPositions int
	RopeTheta    float64
	// RopeScaling names a RoPE frequency scaling the model trains with; "" is plain RoPE. Every
	// registered model trains with plain RoPE: Llama 3.1's config.json rope_scaling (llama3,
	// factor 8) extends the released checkpoint's context and is not part of the architecture Rival
	// benchmarks, so no framework applies it. A builder refuses a value it cannot express.
	RopeScaling string
	// NormEps is the RMSNorm epsilon (config.json rms_norm_eps).
	NormEps float64
	// InitStd is the standard deviation of the normal weight initialisation (config.json
	// initializer_range); output projections of each residual branch are scaled by 1/√(2·Layers)
	// as in Megatron.
	InitStd float64
	QKVBias bool
	// SlidingWindow is the attention window in tokens; 0 means full attention.
	SlidingWindow int
	BOS           int // -1 when the tokenizer adds none
	EOD           int // end-of-document id appended by Megatron's preprocessing
	TokenizerKey  string
	// TiedEmbeddings is true when the output layer shares the input embedding
	// matrix (tie_word_embeddings). All three 7-8B models untie them.
	TiedEmbeddings bool
	// PrimusStock is the stock Megatron experiment of the pinned Primus release the model starts
	// from (examples/megatron/configs/MI300X/<PrimusStock>-BF16-pretrain.yaml and -FP8-).
	PrimusStock string
}

// Family is one registered model with the shape of its proxy: what a model's own file declares.
type Family struct {
	Model Model
	Proxy ProxyShape
}

// ProxyShape is a proxy's depth and width; everything else comes from its base model (proxyOf).
type ProxyShape struct{ Layers, Hidden, FFN, Heads int }

// HeadDim is the per-head width (kv_channels in Megatron terms).
func (m Model) HeadDim() int { return m.Hidden / m.Heads }

// Validate checks that the architecture is self-consistent; the registry's
// entries all pass, and callers building a Model by hand can use it too.
func (m Model) Validate() error {
	switch {
	case m.Name == "":
		return fmt.Errorf("model has no name")
	case m.Layers <= 0 || m.Hidden <= 0 || m.FFN <= 0 || m.Heads <= 0 || m.KVHeads <= 0 || m.Vocab <= 0:
		return fmt.Errorf("model %s: layers, hidden, ffn, heads, kv heads and vocab must all be positive", m.Name)
	case m.Hidden%m.Heads != 0:
		return fmt.Errorf("model %s: hidden %d is not a multiple of heads %d", m.Name, m.Hidden, m.Heads)
	case m.Heads%m.KVHeads != 0:
		return fmt.Errorf("model %s: heads %d is not a multiple of kv heads %d", m.Name, m.Heads, m.KVHeads)
	case m.EOD < 0 || m.EOD >= m.Vocab || m.BOS >= m.Vocab:
		return fmt.Errorf("model %s: special ids (bos %d, eod %d) must lie inside the vocabulary of %d", m.Name, m.BOS, m.EOD, m.Vocab)
	case !(m.NormEps > 0 && m.NormEps < 1):
		return fmt.Errorf("model %s: NormEps %g: the RMSNorm epsilon must lie in (0, 1) (config.json rms_norm_eps)", m.Name, m.NormEps)
	case !(m.InitStd > 0 && m.InitStd < 1):
		return fmt.Errorf("model %s: InitStd %g: the init standard deviation must lie in (0, 1) (config.json initializer_range)", m.Name, m.InitStd)
	case !(m.RopeTheta > 0):
		return fmt.Errorf("model %s: RopeTheta %g must be > 0", m.Name, m.RopeTheta)
	case m.SlidingWindow < 0:
		return fmt.Errorf("model %s: SlidingWindow %d must be >= 0 (0: full attention)", m.Name, m.SlidingWindow)
	case m.Proxy && m.Base == "":
		return fmt.Errorf("model %s: a proxy must name its base model", m.Name)
	}
	return nil
}
