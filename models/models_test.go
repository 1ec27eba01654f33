package models

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistryFacts(t *testing.T) {
	tests := []struct {
		key                                 string
		layers, hidden, ffn, heads, kv, voc int
		rope, eps, std                      float64
		bias                                bool
		window, bos, eod                    int
		repo, tok                           string
	}{
		{"llama", 32, 4096, 14336, 32, 8, 128256, 500000, 1e-5, 0.02, false, 0, 128000, 128001, "meta-llama/Llama-3.1-8B", "llama"},
		{"qwen", 28, 3584, 18944, 28, 4, 152064, 1e6, 1e-6, 0.02, true, 0, -1, 151643, "Qwen/Qwen2.5-7B", "qwen"},
		{"mistral", 32, 4096, 14336, 32, 8, 32000, 1e4, 1e-5, 0.02, false, 4096, 1, 2, "mistralai/Mistral-7B-v0.1", "mistral"},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			m, err := Lookup(tc.key)
			require.NoError(t, err)
			assert.Equal(t, tc.layers, m.Layers)
			assert.Equal(t, tc.hidden, m.Hidden)
			assert.Equal(t, tc.ffn, m.FFN)
			assert.Equal(t, tc.heads, m.Heads)
			assert.Equal(t, tc.kv, m.KVHeads)
			assert.Equal(t, tc.voc, m.Vocab)
			assert.Equal(t, tc.rope, m.RopeTheta)
			assert.Equal(t, tc.bias, m.QKVBias)
			assert.Equal(t, tc.eps, m.NormEps, "config.json rms_norm_eps")
			assert.Equal(t, tc.std, m.InitStd, "config.json initializer_range")
			if tc.key == "llama" {
				assert.Equal(t, &Llama3RopeScaling, m.RopeScaling, "config.json rope_scaling (llama3)")
			} else {
				assert.Nil(t, m.RopeScaling, "config.json has no rope_scaling")
			}
			assert.False(t, m.TiedEmbeddings, "tie_word_embeddings")
			p, err := Lookup(tc.key + "-proxy")
			require.NoError(t, err)
			assert.Equal(t, m.NormEps, p.NormEps, "a proxy keeps its base's ε")
			assert.Equal(t, m.InitStd, p.InitStd)
			assert.Equal(t, m.QKVBias, p.QKVBias)
			assert.Equal(t, tc.window, m.SlidingWindow)
			assert.Equal(t, tc.bos, m.BOS)
			assert.Equal(t, tc.eod, m.EOD)
			assert.Equal(t, tc.repo, m.HFRepo)
			assert.Equal(t, tc.tok, m.TokenizerKey)
			assert.False(t, m.Proxy)
			assert.False(t, m.TiedEmbeddings)
			assert.Equal(t, 128, m.HeadDim())
			require.NoError(t, m.Validate())
		})
	}
}

// Published totals: Llama 3.1 8B 8.03B, Qwen2.5-7B 7.61B (model card: 7.61B,
// 6.53B non-embedding), Mistral 7B 7.24B. The exact counts below follow from
// the config.json shapes and match those totals.
func TestParamsMatchPublishedTotals(t *testing.T) {
	tests := []struct {
		key       string
		exact     int64
		published float64
	}{
		{"llama", 8_030_261_248, 8.03e9},
		{"qwen", 7_615_616_512, 7.62e9},
		{"mistral", 7_241_732_096, 7.24e9},
	}
	for _, tc := range tests {
		m, err := Lookup(tc.key)
		require.NoError(t, err)
		assert.Equal(t, tc.exact, m.Params(), tc.key)
		assert.InDelta(t, tc.published, float64(m.Params()), 0.005e9, tc.key)
	}
	// Qwen's non-embedding count (6.53B) is the total less both vocab matrices.
	q, _ := Lookup("qwen")
	nonEmb := q.Params() - 2*int64(q.Vocab)*int64(q.Hidden)
	assert.InDelta(t, 6.53e9, float64(nonEmb), 0.005e9)
}

func TestTiedEmbeddingsDropTheOutputLayer(t *testing.T) {
	m, _ := Lookup("llama")
	tied := m
	tied.TiedEmbeddings = true
	assert.Equal(t, int64(m.Vocab)*int64(m.Hidden), m.Params()-tied.Params())
}

func TestFLOPsPerTokenLlama(t *testing.T) {
	m, _ := Lookup("llama")
	// Hand expansion of the Megatron formula at s = 8192.
	const h, f, q, kv, s, L, V = 4096.0, 14336.0, 4096.0, 1024.0, 8192.0, 32.0, 128256.0
	want := 6 * (L*(h*(q+2*kv)+q*s+q*h+3*h*f) + h*V)
	assert.Equal(t, want, m.TrainFLOPsPerToken(8192))
	assert.InDelta(t, 51.4704e9, m.TrainFLOPsPerToken(8192), 1e5)

	// Primus' fixture line: 567.6 TFLOP/s at 9801.4 tokens/s per GPU is the
	// non-causal count at sequence length 8192 (13.3728 s × 9801.4 tok/s =
	// 131072 tokens = 128 × 8192 / 8 GPUs).
	printed := 567.6e12 / 9801.4
	assert.InDelta(t, printed, m.TrainFLOPsPerTokenNonCausal(8192), printed*0.001)
	assert.Greater(t, absRel(printed, m.TrainFLOPsPerToken(8192)), 0.1, "causal count must not match the full-s² figure")
	for _, s := range []int{4096, 16384} {
		assert.Greater(t, absRel(printed, m.TrainFLOPsPerTokenNonCausal(s)), 0.05, "seq %d", s)
	}
	// Causal halving removes exactly L·6·q·s per token.
	assert.InDelta(t, 6*L*q*s, m.TrainFLOPsPerTokenNonCausal(8192)-m.TrainFLOPsPerToken(8192), 1)
	assert.InDelta(t, 1.125, m.TrainFLOPsPerTokenNonCausal(8192)/m.TrainFLOPsPerToken(8192), 0.001)
}

func TestFLOPsPaddedVocab(t *testing.T) {
	m, _ := Lookup("qwen")
	base := m.FLOPsPerToken(4096, FLOPsOptions{})
	padded := m.FLOPsPerToken(4096, FLOPsOptions{PaddedVocab: 151680})
	assert.InDelta(t, 6*3584*(152064-151680), base-padded, 1)
}

// Around 6·N: the per-token count is six times the non-embedding weights plus
// the logit layer plus attention; for short sequences it approaches 6·(N - V·h).
func TestFLOPsApproachSixN(t *testing.T) {
	for _, m := range All() {
		nonEmbedding := float64(m.Params() - int64(m.Vocab)*int64(m.Hidden))
		assert.InDelta(t, 6*nonEmbedding, m.TrainFLOPsPerToken(1), 6*nonEmbedding*0.001, m.Name)
	}
}

func TestProxiesAreLabelledAndSmall(t *testing.T) {
	for _, key := range []string{"llama-proxy", "qwen-proxy", "mistral-proxy"} {
		p, err := Lookup(key)
		require.NoError(t, err)
		base, err := Lookup(p.Base)
		require.NoError(t, err)
		require.NoError(t, p.Validate())
		assert.True(t, p.Proxy)
		assert.Contains(t, p.DisplayName, "proxy")
		assert.True(t, strings.HasPrefix(p.DisplayName, base.DisplayName))
		assert.Equal(t, base.Vocab, p.Vocab)
		assert.Equal(t, base.TokenizerKey, p.TokenizerKey)
		assert.Equal(t, base.BOS, p.BOS)
		assert.Equal(t, base.EOD, p.EOD)
		assert.Equal(t, base.RopeTheta, p.RopeTheta)
		assert.Equal(t, base.QKVBias, p.QKVBias)
		assert.Equal(t, base.Heads/base.KVHeads, p.Heads/p.KVHeads, "GQA ratio")
		assert.Equal(t, float64(base.SlidingWindow)/float64(base.MaxPositions), float64(p.SlidingWindow)/float64(p.MaxPositions), "window share")
		assert.Equal(t, 64, p.HeadDim())
		assert.LessOrEqual(t, p.Layers, 2)
		// Embeddings dominate; the transformer body stays under 6M weights.
		body := p.Params() - 2*int64(p.Vocab)*int64(p.Hidden)
		assert.Less(t, body, int64(6_000_000), key)
	}
}

func TestLookup(t *testing.T) {
	m, err := Lookup(" Llama ")
	require.NoError(t, err)
	assert.Equal(t, "llama", m.Name)

	_, err = Lookup("gpt-2")
	require.Error(t, err)
	for _, n := range []string{"llama", "qwen", "mistral", "llama-proxy"} {
		assert.Contains(t, err.Error(), n)
	}
	assert.Len(t, All(), 6)
	for _, m := range All() {
		require.NoError(t, m.Validate(), m.Name)
	}
}

func TestValidateRejectsBrokenShapes(t *testing.T) {
	good, _ := Lookup("llama")
	for name, mut := range map[string]func(*Model){
		"no name":      func(m *Model) { m.Name = "" },
		"zero layers":  func(m *Model) { m.Layers = 0 },
		"heads":        func(m *Model) { m.Heads = 30 },
		"kv":           func(m *Model) { m.KVHeads = 5 },
		"eod":          func(m *Model) { m.EOD = m.Vocab },
		"proxy orphan": func(m *Model) { m.Proxy = true; m.Base = "" },
		"no norm eps":  func(m *Model) { m.NormEps = 0 },
		"no init std":  func(m *Model) { m.InitStd = 0 },
		"rope theta":   func(m *Model) { m.RopeTheta = 0 },
		"window":       func(m *Model) { m.SlidingWindow = -1 },
	} {
		m := good
		mut(&m)
		assert.Error(t, m.Validate(), name)
	}
}

func absRel(a, b float64) float64 {
	d := (a - b) / a
	if d < 0 {
		return -d
	}
	return d
}

// Every model names the commit its facts and tokenizer come from (a full SHA: a branch would move
// under the pinned facts) and the Primus experiment it starts from; a proxy shares both with its
// base, so its tokenizer is fetched from the same commit.
func TestModelsArePinned(t *testing.T) {
	assert.Equal(t, []string{"llama", "qwen", "mistral"}, Bases())
	want := map[string]struct {
		rev, stock string
		gated      bool
	}{
		"llama":   {"d04e592bb4f6aa9cfee91e2e20afa771667e1d4b", "llama3.1_8B", true},
		"qwen":    {"d149729398750b98c0af14eb82c78cfe92750796", "qwen2.5_7B", false},
		"mistral": {"27d67f1b5f57dc0953326b2601d68371d40ea8da", "llama3.1_8B", false},
	}
	for _, m := range All() {
		base := m.Name
		if m.Proxy {
			base = m.Base
		}
		w, ok := want[base]
		require.True(t, ok, m.Name)
		assert.Equal(t, w.rev, m.HFRevision, m.Name)
		assert.Equal(t, w.stock, m.PrimusStock, m.Name)
		assert.Equal(t, w.gated, m.Gated, m.Name)
	}
}

// TestRopeFrequenciesMatchTheOracle checks the scaled and plain frequencies against
// testdata/rope_llama3.tsv, written at 50 digits by testdata/rope_llama3.py (mpmath, not this code).
func TestRopeFrequenciesMatchTheOracle(t *testing.T) {
	raw, err := os.ReadFile("testdata/rope_llama3.tsv")
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(raw)), "\n")[1:]
	require.Len(t, rows, 160)
	got := map[[2]int][2][]float64{}
	for _, row := range rows {
		var theta, dim, band int
		var plain, scaled float64
		_, err := fmt.Sscanf(row, "%d\t%d\t%d\t%g\t%g", &theta, &dim, &band, &plain, &scaled)
		require.NoError(t, err, row)
		k := [2]int{theta, dim}
		f, ok := got[k]
		if !ok {
			f = [2][]float64{(*RopeScaling)(nil).Frequencies(float64(theta), dim), Llama3RopeScaling.Frequencies(float64(theta), dim)}
			got[k] = f
		}
		assert.InEpsilon(t, plain, f[0][band], 1e-14, "plain band %d of θ %d, head %d", band, theta, dim)
		assert.InEpsilon(t, scaled, f[1][band], 1e-14, "scaled band %d of θ %d, head %d", band, theta, dim)
	}
}
