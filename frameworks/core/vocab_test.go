package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/models"
)

// Megatron pads len(tokenizer) up to a multiple of divisor × TP. The tokenizer sizes are the real
// tokenizer.json files' (Llama 3.1 128,256; Qwen 2.5 151,665; Mistral 32,000).
func TestVocabDivisorPadsTheTokenizerToConfigJSON(t *testing.T) {
	tokens := map[string]int{"llama": 128256, "qwen": 151665, "mistral": 32000}
	for _, name := range []string{"llama", "qwen", "mistral", "qwen-proxy"} {
		m, err := models.Lookup(name)
		require.NoError(t, err)
		base := name
		if m.Proxy {
			base = m.Base
		}
		for _, tp := range []int{1, 2, 4, 8} {
			p := Plan{Request: Request{Fair: Fair{TP: tp}}, Model: m}
			d, err := p.VocabDivisor()
			require.NoError(t, err)
			multiple := d * tp
			padded := (tokens[base] + multiple - 1) / multiple * multiple
			assert.Equal(t, m.Vocab, padded, "%s at TP %d: divisor %d", name, tp, d)
		}
	}
	// Megatron's default divisor 128 does not: Qwen's 151,665 becomes 151,680.
	assert.Equal(t, 151680, (151665+127)/128*128)
}

func TestVocabDivisorRefusesATPThatCannotPadExactly(t *testing.T) {
	m, err := models.Lookup("qwen")
	require.NoError(t, err)
	_, err = Plan{Request: Request{Fair: Fair{TP: 1024}}, Model: m}.VocabDivisor()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TP 1024 does not divide 512")
}
