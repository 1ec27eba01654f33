package effective

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/models"
)

func plan(t *testing.T, model string, edit func(*core.Fair)) core.Plan {
	m, err := models.Lookup(model)
	require.NoError(t, err)
	f := core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 1, GBS: 8, TP: 1, PP: 1, DP: 8, TrainIters: 500,
		WarmupSteps: 50, LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: core.BF16}
	if edit != nil {
		edit(&f)
	}
	return core.Plan{Request: core.Request{Model: model, Fair: f}, Model: m}
}

func TestWantIsTheWorkload(t *testing.T) {
	w, err := Want(plan(t, "qwen", nil))
	require.NoError(t, err)
	assert.Equal(t, 3584, w.Hidden)
	assert.Equal(t, 152064, w.Vocab)
	assert.Equal(t, 1e-6, w.NormEps)
	assert.True(t, w.QKVBias)
	assert.InDelta(t, 0.02/math.Sqrt(56), w.ResidualInitStd, 1e-15)
	assert.Equal(t, []string{KindBias, KindNorm}, w.NoDecay)
	assert.Equal(t, 0, w.Window)
	assert.Equal(t, "", w.FP8Recipe)

	m, err := Want(plan(t, "mistral", func(f *core.Fair) { f.SL, f.Precision = 8192, core.FP8 }))
	require.NoError(t, err)
	assert.Equal(t, 4096, m.Window, "Mistral's window masks at SL 8192")
	assert.Equal(t, FP8Recipe, m.FP8Recipe)
}

func TestCompareNamesEachFieldWithBothValues(t *testing.T) {
	p := plan(t, "llama", nil)
	w, err := Want(p)
	require.NoError(t, err)
	assert.Empty(t, Compare(w, w))
	assert.NoError(t, Check("mega", p, w))

	g := w
	g.NormEps, g.Vocab, g.NoDecay = 1e-6, 128512, nil
	g.LR = w.LR * (1 + 1e-12) // a JSON round trip's noise is not a difference
	want := []Diff{
		{Field: "vocab", Framework: "128512", Rival: "128256"},
		{Field: "norm_eps", Framework: "1e-06", Rival: "1e-05"},
		{Field: "no_decay", Framework: "none", Rival: "bias, norm"},
	}
	assert.Equal(t, want, Compare(g, w))
	err = Check("titan", p, g)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, want, e.Diffs)
	assert.Contains(t, err.Error(), "norm_eps: the framework built 1e-06, Rival's workload is 1e-05")
}

func TestWindowAtLeastTheSequenceMasksNothing(t *testing.T) {
	p := plan(t, "mistral", nil) // SL 2048 < window 4096
	w, err := Want(p)
	require.NoError(t, err)
	g := w
	g.Window = 4096
	assert.Empty(t, Compare(g, w), "a 4096 window at SL 2048 is full causal attention")
	p8 := plan(t, "mistral", func(f *core.Fair) { f.SL = 8192 })
	w8, err := Want(p8)
	require.NoError(t, err)
	g8 := w8
	g8.Window = 0
	assert.Equal(t, []Diff{{Field: "window", Framework: "0", Rival: "4096"}}, Compare(g8, w8))
}

func TestParseReportsMissingAndUnknownFields(t *testing.T) {
	w, err := Want(plan(t, "llama", nil))
	require.NoError(t, err)
	b, err := json.Marshal(w)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	delete(m, "vocab")
	m["unread"] = []string{"rope_scaling: the framework has no such setting"}
	b, err = json.Marshal(m)
	require.NoError(t, err)
	c, err := Parse(b)
	require.NoError(t, err)
	assert.Equal(t, []Diff{
		{Field: "vocab", Framework: "unread (not reported)", Rival: "128256"},
		{Field: "rope_scaling", Framework: "unread (the framework has no such setting)", Rival: "8"},
	}, Compare(c, w))
	_, ok := c.Value("vocab")
	assert.False(t, ok)
	v, ok := c.Value("hidden")
	assert.True(t, ok)
	assert.Equal(t, "4096", v)

	m["hiden"] = 1
	b, err = json.Marshal(m)
	require.NoError(t, err)
	_, err = Parse(b)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hiden")
}

func TestFromLinesTakesTheLastEffectiveLine(t *testing.T) {
	c, found, err := FromLines([]string{"x", LinePrefix + `{"hidden": 1}`, LinePrefix + `{"hidden": 2}`, "preflight ok: y"})
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, 2, c.Hidden)
	_, found, err = FromLines([]string{"preflight ok: y"})
	require.NoError(t, err)
	assert.False(t, found)
	_, _, err = FromLines([]string{LinePrefix + "{"})
	require.Error(t, err)
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"hidden": 4096, "no_decay": ["norm"], "unread": ["vocab: x"]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[1]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		for _, d := range Compare(c, Config{}) {
			assert.NotEmpty(t, d.Field)
		}
	})
}
