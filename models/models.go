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
	"math"
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
	// RopeScaling is the RoPE frequency scaling the model trains with (config.json rope_scaling);
	// nil is plain RoPE. Llama 3.1 trains with it as released; a builder refuses a value its
	// framework cannot express.
	RopeScaling *RopeScaling
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

// RopeScaling is Llama 3's RoPE frequency scaling (config.json rope_scaling, rope_type "llama3"):
// bands whose wavelength is above OriginalPositions/LowFreqFactor turn Factor times slower, bands
// below OriginalPositions/HighFreqFactor keep their frequency, and those between are interpolated.
type RopeScaling struct {
	Factor            float64
	LowFreqFactor     float64
	HighFreqFactor    float64
	OriginalPositions int
}

// Llama3RopeScaling is Llama 3.1's (config.json of meta-llama/Llama-3.1-8B): factor 8, low 1,
// high 4, 8192 original positions; Megatron's, Megatron-Bridge's and TorchTitan's defaults.
var Llama3RopeScaling = RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalPositions: 8192}

// String is the scaling as one label, "none" for plain RoPE.
func (r *RopeScaling) String() string {
	if r == nil {
		return "none"
	}
	return fmt.Sprintf("llama3 (factor %g, low %g, high %g, original %d)", r.Factor, r.LowFreqFactor, r.HighFreqFactor, r.OriginalPositions)
}

// Frequencies are the rotary inverse frequencies of a head of headDim channels with base theta,
// scaled as r says: the numbers every framework's model must compute.
func (r *RopeScaling) Frequencies(theta float64, headDim int) []float64 {
	out := make([]float64, headDim/2)
	for i := range out {
		f := math.Pow(theta, -float64(2*i)/float64(headDim))
		if r != nil {
			wavelen := 2 * math.Pi / f
			orig := float64(r.OriginalPositions)
			switch {
			case wavelen < orig/r.HighFreqFactor:
			case wavelen > orig/r.LowFreqFactor:
				f /= r.Factor
			default:
				smooth := (orig/wavelen - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
				f = (1-smooth)*f/r.Factor + smooth*f
			}
		}
		out[i] = f
	}
	return out
}
