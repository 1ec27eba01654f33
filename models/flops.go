package models

// Params is the exact parameter count: input embedding, per layer the Q/K/V/O
// projections (plus Q/K/V biases where the model has them), the SwiGLU MLP's
// gate, up and down projections and two RMSNorm weights, then the final norm
// and, unless tied, the output layer.
func (m Model) Params() int64 {
	h, f := int64(m.Hidden), int64(m.FFN)
	q := int64(m.Heads * m.HeadDim())
	kv := int64(m.KVHeads * m.HeadDim())
	v := int64(m.Vocab)

	perLayer := h*(q+2*kv) + q*h + 3*h*f + 2*h
	if m.QKVBias {
		perLayer += q + 2*kv
	}
	total := v*h + int64(m.Layers)*perLayer + h
	if !m.TiedEmbeddings {
		total += v * h
	}
	return total
}

// FLOPsOptions selects how attention and the logit layer are counted.
type FLOPsOptions struct {
	// NonCausal counts the full s×s score and value products, as frameworks that
	// predate Megatron Core 0.12's causal halving (and Primus' legacy trainer) do.
	NonCausal bool
	// PaddedVocab replaces Vocab in the logit term when the framework pads the
	// tokenizer's vocabulary (Megatron pads to --make-vocab-size-divisible-by ×
	// tensor parallel size); 0 uses the model's Vocab.
	PaddedVocab int
}

// TrainFLOPsPerToken is the model FLOPs of one training step divided by the
// tokens in it, counted the way Megatron-LM's num_floating_point_operations
// (megatron/training/training.py, transformer_flops) counts a dense model with
// GQA, SwiGLU and causal attention (Megatron Core 0.12 and later; checked
// against main at commit 001b00c2734d8f0fad096fe48a382fedf755d321):
//
//	6 · [ L · ( h·(q + 2·kv) + q·s + q·h + 3·h·f ) + h·V ]
//
// with q = heads·head_dim, kv = kv_heads·head_dim, s the sequence length,
// f the FFN width and V the vocabulary. The 6 is 2 FLOPs per multiply-add times
// 3 for forward, weight-gradient and data-gradient GEMMs; q·s is the QKᵀ and
// attention·V products (2·q·s) halved for the causal mask. Norms, softmax,
// rotary embeddings and biases are not counted, as in Megatron. Sliding-window
// attention is also counted as full causal attention, as Megatron does.
func (m Model) TrainFLOPsPerToken(seqLen int) float64 {
	return m.FLOPsPerToken(seqLen, FLOPsOptions{})
}

// TrainFLOPsPerTokenNonCausal is TrainFLOPsPerToken without the causal halving
// of the attention term, for comparison with frameworks that count full s².
func (m Model) TrainFLOPsPerTokenNonCausal(seqLen int) float64 {
	return m.FLOPsPerToken(seqLen, FLOPsOptions{NonCausal: true})
}

// FLOPsPerToken is the general form of TrainFLOPsPerToken.
func (m Model) FLOPsPerToken(seqLen int, opt FLOPsOptions) float64 {
	h, f := float64(m.Hidden), float64(m.FFN)
	q := float64(m.Heads * m.HeadDim())
	kv := float64(m.KVHeads * m.HeadDim())
	s := float64(seqLen)
	v := float64(m.Vocab)
	if opt.PaddedVocab > 0 {
		v = float64(opt.PaddedVocab)
	}
	attnScores := q * s // (QKᵀ + AV) = 2·q·s, halved for the causal mask
	if opt.NonCausal {
		attnScores = 2 * q * s
	}
	perLayer := h*(q+2*kv) + attnScores + q*h + 3*h*f
	const fwdBwd, fma = 3, 2
	return fwdBwd * fma * (float64(m.Layers)*perLayer + h*v)
}
