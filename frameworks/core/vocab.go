package core

import "fmt"

// VocabDivisor is the make-vocab-size-divisible-by that makes a Megatron-family model's embedding
// exactly the registry's vocabulary (config.json vocab_size). Megatron and Megatron-Bridge size it
// from len(tokenizer), rounded up to a multiple of the divisor × TP: Qwen 2.5's tokenizer has
// 151,665 tokens where config.json has 152,064 rows, and at TP 4 the default divisor 128 pads
// Llama 3.1's 128,256 to 128,512. The multiple used is the largest power of two dividing the
// vocabulary, which rounds every tokenizer within that many tokens below it up to exactly it (the
// preflight reads back the padded size Megatron computes).
func (p Plan) VocabDivisor() (int, error) {
	v := p.Model.Vocab
	if v <= 0 {
		return 0, fmt.Errorf("spec: model %s has vocabulary %d", p.Model.Name, v)
	}
	multiple := v & -v
	if multiple%p.Fair.TP != 0 {
		return 0, fmt.Errorf("spec: TP %d does not divide %d, the largest power of two that divides %s's vocabulary %d: Megatron would pad the embedding past it; use a TP that divides %d",
			p.Fair.TP, multiple, p.Model.Name, v, multiple)
	}
	return multiple / p.Fair.TP, nil
}
