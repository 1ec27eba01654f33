package conformance

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/models"
)

func steps(losses ...float64) []Step {
	var out []Step
	for i, l := range losses {
		out = append(out, Step{Step: i + 1, Loss: l, GradNorm: 2, LR: 1e-4, Grads: map[string]float64{"embedding": 1, "layers.0.q": 0.5}})
	}
	return out
}

// Compare names the step, the quantity and the parameter of every difference beyond the tolerance.
func TestCompareNamesStepQuantityAndParameter(t *testing.T) {
	tol := Tolerance{Loss: 1e-6, GradNorm: 1e-6, LR: 1e-9, Grad: 1e-6}
	tests := []struct {
		name string
		edit func(b []Step)
		want []string
	}{
		{"equal", func([]Step) {}, nil},
		{"within tolerance", func(b []Step) { b[1].Loss *= 1 + 5e-7 }, nil},
		{"loss at step 2", func(b []Step) { b[1].Loss = 10.1 }, []string{"step 2, loss: 10 vs 10.1 (relative 0.0099)"}},
		{"a layer's gradient at step 3", func(b []Step) { b[2].Grads["layers.0.q"] = 0.6 }, []string{"step 3, grad layers.0.q: 0.5 vs 0.6 (relative 0.17)"}},
		{"lr", func(b []Step) { b[0].LR = 0 }, []string{"step 1, lr: 0.0001 vs 0 (relative 1)"}},
		{"NaN on one side", func(b []Step) { b[0].GradNorm = math.NaN() }, []string{"step 1, grad_norm: 2 vs NaN (relative NaN)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := steps(10, 10, 10), steps(10, 10, 10)
			for i := range b { // own maps: an edit must not reach a
				g := map[string]float64{}
				for k, v := range b[i].Grads {
					g[k] = v
				}
				b[i].Grads = g
			}
			tc.edit(b)
			ms, err := Compare(a, b, tol)
			require.NoError(t, err)
			var got []string
			for _, m := range ms {
				got = append(got, m.String())
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCompareRefusesRunsThatDoNotMatchInShape(t *testing.T) {
	_, err := Compare(steps(1, 2), steps(1), DefaultTolerance)
	assert.ErrorContains(t, err, "2 steps against 1")
	b := steps(1)
	b[0].Grads = map[string]float64{"embedding": 1, "layers.0.k": 0.5}
	_, err = Compare(steps(1), b, DefaultTolerance)
	assert.ErrorContains(t, err, "+layers.0.k -layers.0.q")
}

func TestParseStepsReadsTheRunnerLines(t *testing.T) {
	lines := []string{"noise", `conform: {"framework":"fsdp","step":1,"loss":11.8,"grad_norm":5.8,"lr":0,"grads":{"embedding":0.1}}`,
		`conform: {"framework":"fsdp","step":2,"loss":11.7,"grad_norm":5.7,"lr":1e-4,"grads":{"embedding":0.1}}`}
	s, err := ParseSteps(lines)
	require.NoError(t, err)
	require.Len(t, s, 2)
	assert.Equal(t, 11.7, s[1].Loss)
	_, err = ParseSteps([]string{`conform: {"step":2}`})
	assert.ErrorContains(t, err, "line 1: step 2 follows step 0")
	_, err = ParseSteps([]string{"x", `conform: {"step":`})
	assert.ErrorContains(t, err, "line 2")
}

func FuzzParseSteps(f *testing.F) {
	f.Add(`conform: {"framework":"mega","step":1,"loss":1,"grad_norm":1,"lr":0,"grads":{"output":1}}`)
	f.Add("conform: {\"step\":1}\nconform: {\"step\":3}")
	f.Add("conform: null")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSteps(strings.Split(text, "\n"))
		if err != nil {
			return
		}
		for i, st := range s {
			if st.Step != i+1 {
				t.Fatalf("step %d at %d", st.Step, i)
			}
		}
	})
}

// The safetensors file reads back as the format defines it: header length, JSON header with each
// tensor's dtype, shape and byte range, then the little-endian float32 data in that order.
func TestWriteSafetensorsIsTheFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.safetensors")
	ts := []Tensor{{Name: "a", Shape: []int{2, 2}, Data: []float32{1, -2, 3.5, 0}}, {Name: "b", Shape: []int{1}, Data: []float32{7}}}
	require.NoError(t, WriteSafetensors(path, ts))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	n := binary.LittleEndian.Uint64(raw)
	assert.Zero(t, (8+n)%8, "the data starts 8-byte aligned")
	var header map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw[8:8+n], &header))
	var a struct {
		DType   string   `json:"dtype"`
		Shape   []int    `json:"shape"`
		Offsets [2]int64 `json:"data_offsets"`
	}
	require.NoError(t, json.Unmarshal(header["b"], &a))
	assert.Equal(t, "F32", a.DType)
	assert.Equal(t, [2]int64{16, 20}, a.Offsets)
	data := raw[8+n:]
	assert.Len(t, data, 20)
	assert.Equal(t, float32(3.5), math.Float32frombits(binary.LittleEndian.Uint32(data[8:])))
	assert.Equal(t, float32(7), math.Float32frombits(binary.LittleEndian.Uint32(data[16:])))
}

// The checkpoint has every parameter of the model's Hugging Face layout with its shape, Qwen's QKV
// biases, and is the same for the same seed.
func TestCheckpointLayout(t *testing.T) {
	for _, name := range []string{"llama-proxy", "qwen-proxy", "mistral-proxy"} {
		m, err := models.Lookup(name)
		require.NoError(t, err)
		ts := Checkpoint(m, 1)
		shapes := map[string][]int{}
		for _, x := range ts {
			shapes[x.Name] = x.Shape
		}
		want := 3 + 9*m.Layers
		if m.QKVBias {
			want += 3 * m.Layers
		}
		assert.Len(t, shapes, want, name)
		assert.Equal(t, []int{m.Vocab, m.Hidden}, shapes["lm_head.weight"])
		assert.Equal(t, []int{m.KVHeads * m.HeadDim(), m.Hidden}, shapes["model.layers.1.self_attn.k_proj.weight"])
		_, bias := shapes["model.layers.0.self_attn.q_proj.bias"]
		assert.Equal(t, m.QKVBias, bias, name)
		again := Checkpoint(m, 1)
		assert.Equal(t, ts[5].Data[:8], again[5].Data[:8], "the same seed draws the same weights")
		assert.NotEqual(t, ts[5].Data[:8], Checkpoint(m, 2)[5].Data[:8])
		cfg := HFConfig(m)
		assert.Equal(t, m.RopeScaling != nil, cfg["rope_scaling"] != nil, name)
	}
}

// The first step's layout (every parameter's dtype and shape under its canonical name) must be the
// same on both sides; a difference names each parameter with both layouts.
func TestCompareLayouts(t *testing.T) {
	layout := func(kv ...string) []Step {
		s := steps(10)
		s[0].Layout = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			s[0].Layout[kv[i]] = kv[i+1]
		}
		return s
	}
	tests := []struct {
		name string
		a, b []Step
		want string
	}{
		{"neither reports", steps(10), steps(10), ""},
		{"equal", layout("embedding", "float32[512,256]"), layout("embedding", "float32[512,256]"), ""},
		{"one side only", layout("embedding", "float32[512,256]"), steps(10), "only one side reports the model's layout"},
		{"a halved head", layout("layers.0.q", "float32[256,256]"), layout("layers.0.q", "float32[128,256]"),
			"layers.0.q float32[256,256] against float32[128,256]"},
		{"a bias only one side has", layout("layers.0.q", "float32[256,256]"), layout("layers.0.q", "float32[256,256]", "layers.0.q_bias", "float32[256]"),
			"layers.0.q_bias none against float32[256]"},
		{"dtype", layout("final_norm", "float32[256]"), layout("final_norm", "bfloat16[256]"), "final_norm float32[256] against bfloat16[256]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compare(tc.a, tc.b, DefaultTolerance)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// ParseConfigs keys each object a runner printed by its name; the TransformerConfig line names none.
func TestParseConfigsReadsEveryObject(t *testing.T) {
	tests := []struct {
		name    string
		lines   []string
		want    map[string]int // object: field count
		wantErr string
	}{
		{"transformer config and others", []string{
			"noise",
			ConfigPrefix + `{"framework": "mega", "fields": {"num_layers": "2", "hidden_size": "256"}}`,
			ConfigPrefix + `{"framework": "mega", "object": "OptimizerConfig", "fields": {"lr": "0.0003"}}`,
		}, map[string]int{TransformerConfig: 2, "OptimizerConfig": 1}, ""},
		{"none", []string{"conform: {}"}, map[string]int{}, ""},
		{"twice", []string{
			ConfigPrefix + `{"framework": "nemo", "object": "provider", "fields": {}}`,
			ConfigPrefix + `{"framework": "nemo", "object": "provider", "fields": {}}`,
		}, nil, "line 2: provider printed twice"},
		{"malformed", []string{"x", ConfigPrefix + `{"fields": [}`}, nil, "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfigs(tc.lines)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			counts := map[string]int{}
			for k, c := range got {
				assert.Equal(t, k, c.Object)
				counts[k] = len(c.Fields)
			}
			assert.Equal(t, tc.want, counts)
		})
	}
}

func FuzzParseConfigs(f *testing.F) {
	f.Add(ConfigPrefix + `{"framework": "titan", "object": "model args", "fields": {"dim": "256"}}`)
	f.Add(ConfigPrefix + `{"fields": null}`)
	f.Fuzz(func(t *testing.T, line string) {
		got, err := ParseConfigs(strings.Split(line, "\n"))
		if err == nil {
			for k, c := range got {
				if k != c.Object || k == "" {
					t.Fatalf("object %q keyed as %q", c.Object, k)
				}
			}
		}
	})
}
