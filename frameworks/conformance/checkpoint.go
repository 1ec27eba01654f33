package conformance

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/models"
)

// Tensor is one fp32 checkpoint tensor under its Hugging Face name.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
}

// Checkpoint is the initial checkpoint of model m in Hugging Face's Llama/Qwen2/Mistral layout:
// every weight matrix N(0, InitStd) (the residual branches' o_proj and down_proj N(0, InitStd/√(2L)),
// Megatron's init), QKV biases N(0, InitStd), and norm weights 1 + N(0, 0.1) so that a norm loaded
// into the wrong place shows in the loss. Drawn from PCG(seed) in a fixed order.
func Checkpoint(m models.Model, seed uint64) []Tensor {
	rng := rand.New(rand.NewPCG(seed, 0x7269766c))
	normal := func(name string, std float64, shape ...int) Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		t := Tensor{Name: name, Shape: shape, Data: make([]float32, n)}
		for i := range t.Data {
			t.Data[i] = float32(rng.NormFloat64() * std)
		}
		return t
	}
	norm := func(name string) Tensor {
		t := normal(name, 0.1, m.Hidden)
		for i := range t.Data {
			t.Data[i] += 1
		}
		return t
	}
	std, hd := m.InitStd, m.HeadDim()
	resid := std / math.Sqrt(2*float64(m.Layers))
	out := []Tensor{normal("model.embed_tokens.weight", std, m.Vocab, m.Hidden)}
	for i := 0; i < m.Layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		out = append(out, norm(p+"input_layernorm.weight"),
			normal(p+"self_attn.q_proj.weight", std, m.Heads*hd, m.Hidden),
			normal(p+"self_attn.k_proj.weight", std, m.KVHeads*hd, m.Hidden),
			normal(p+"self_attn.v_proj.weight", std, m.KVHeads*hd, m.Hidden))
		if m.QKVBias {
			out = append(out, normal(p+"self_attn.q_proj.bias", std, m.Heads*hd),
				normal(p+"self_attn.k_proj.bias", std, m.KVHeads*hd), normal(p+"self_attn.v_proj.bias", std, m.KVHeads*hd))
		}
		out = append(out, normal(p+"self_attn.o_proj.weight", resid, m.Hidden, m.Heads*hd),
			norm(p+"post_attention_layernorm.weight"),
			normal(p+"mlp.gate_proj.weight", std, m.FFN, m.Hidden),
			normal(p+"mlp.up_proj.weight", std, m.FFN, m.Hidden),
			normal(p+"mlp.down_proj.weight", resid, m.Hidden, m.FFN))
	}
	out = append(out, norm("model.norm.weight"))
	if !m.TiedEmbeddings {
		out = append(out, normal("lm_head.weight", std, m.Vocab, m.Hidden))
	}
	return out
}

// HFConfig is config.json of m as Hugging Face's Llama, Qwen2 and Mistral classes read it.
func HFConfig(m models.Model) map[string]any {
	typ := map[string]string{"llama": "llama", "qwen": "qwen2", "mistral": "mistral"}[strings.TrimSuffix(m.Name, "-proxy")]
	arch := map[string]string{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM"}[typ]
	c := map[string]any{
		"architectures": []string{arch}, "model_type": typ, "hidden_size": m.Hidden, "intermediate_size": m.FFN,
		"num_attention_heads": m.Heads, "num_key_value_heads": m.KVHeads, "num_hidden_layers": m.Layers,
		"head_dim": m.HeadDim(), "vocab_size": m.Vocab, "rms_norm_eps": m.NormEps, "rope_theta": m.RopeTheta,
		"max_position_embeddings": m.MaxPositions, "tie_word_embeddings": m.TiedEmbeddings,
		"initializer_range": m.InitStd, "hidden_act": "silu", "torch_dtype": "float32",
		"attention_bias": m.QKVBias, "bos_token_id": m.BOS, "eos_token_id": m.EOD,
	}
	if r := m.RopeScaling; r != nil {
		c["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": r.Factor, "low_freq_factor": r.LowFreqFactor,
			"high_freq_factor": r.HighFreqFactor, "original_max_position_embeddings": r.OriginalPositions}
	}
	if m.SlidingWindow > 0 {
		c["sliding_window"] = m.SlidingWindow
	}
	return c
}

// WriteCheckpoint writes m's initial checkpoint into dir: config.json and model.safetensors (fp32),
// each file whole or absent.
func WriteCheckpoint(dir string, m models.Model, seed uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	cfg, err := json.MarshalIndent(HFConfig(m), "", "  ")
	if err != nil {
		return fmt.Errorf("conformance: config.json: %w", err)
	}
	if err := cache.WriteFileAtomic(filepath.Join(dir, "config.json"), append(cfg, '\n'), 0o644); err != nil {
		return err
	}
	return WriteSafetensors(filepath.Join(dir, "model.safetensors"), Checkpoint(m, seed))
}

// WriteSafetensors writes the tensors in the safetensors format: an 8-byte little-endian header
// length, the JSON header (padded with spaces to 8 bytes), then each tensor's little-endian data.
func WriteSafetensors(path string, ts []Tensor) error {
	type entry struct {
		DType   string   `json:"dtype"`
		Shape   []int    `json:"shape"`
		Offsets [2]int64 `json:"data_offsets"`
	}
	header := map[string]any{"__metadata__": map[string]string{"format": "pt", "written_by": "rival conformance"}}
	var off int64
	for _, t := range ts {
		n := int64(len(t.Data)) * 4
		header[t.Name] = entry{DType: "F32", Shape: t.Shape, Offsets: [2]int64{off, off + n}}
		off += n
	}
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("conformance: safetensors header: %w", err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	return cache.WriteAtomic(path, 0o644, func(w *bufio.Writer) error {
		if err := binary.Write(w, binary.LittleEndian, uint64(len(h))); err != nil {
			return err
		}
		if _, err := w.Write(h); err != nil {
			return err
		}
		buf := make([]byte, 4)
		for _, t := range ts {
			for _, v := range t.Data {
				binary.LittleEndian.PutUint32(buf, math.Float32bits(v))
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
