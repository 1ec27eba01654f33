package prim

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/rivalbench/rival/frameworks/facts"
)

func TestPatchKeepsLayoutAndComments(t *testing.T) {
	src, err := os.ReadFile("testdata/llama3.1_8B-pretrain.yaml")
	require.NoError(t, err)
	out, err := Patch("llama.yaml", src, map[string]string{"exp_name": "mistral_7B-pretrain"}, []Override{
		{"seq_length", "4096"}, {"window_size", "[4096, 0]"}, {"mock_data", "False"}, {"lr", "0.0003"},
	})
	require.NoError(t, err)
	s := string(out)
	// Comments and untouched keys survive, in their order.
	for _, keep := range []string{"# Test fixture written for Rival", "# the model's architecture file",
		"model: llama3.1_8B.yaml", "# the experiment's own length", "# parallel", "work_group: ${PRIMUS_TEAM:amd}"} {
		assert.Contains(t, s, keep)
	}
	assert.Less(t, strings.Index(s, "work_group"), strings.Index(s, "modules:"))
	assert.Contains(t, s, "exp_name: mistral_7B-pretrain")

	var v struct {
		Modules struct {
			PreTrainer struct {
				Overrides map[string]any `yaml:"overrides"`
			} `yaml:"pre_trainer"`
		} `yaml:"modules"`
	}
	require.NoError(t, yaml.Unmarshal(out, &v))
	ov := v.Modules.PreTrainer.Overrides
	assert.Equal(t, 4096, ov["seq_length"])
	assert.Equal(t, false, ov["mock_data"])
	assert.Equal(t, 0.0003, ov["lr"])
	assert.Equal(t, []any{4096, 0}, ov["window_size"])
	assert.Equal(t, 128, ov["global_batch_size"], "keys not patched keep their values")
}

func TestPatchErrorsNameFileAndKey(t *testing.T) {
	read := func(n string) []byte {
		b, err := os.ReadFile("testdata/" + n)
		require.NoError(t, err)
		return b
	}
	tests := []struct {
		name string
		src  []byte
		root map[string]string
		want []string
	}{
		{"missing.yaml", nil, nil, []string{"missing.yaml", "is empty"}},
		{"malformed.yaml", read("malformed.yaml"), nil, []string{"malformed.yaml", "parse"}},
		{"no-overrides.yaml", read("no-overrides.yaml"), nil, []string{"no-overrides.yaml", "modules.pre_trainer"}},
		{"llama.yaml", read("llama3.1_8B-pretrain.yaml"), map[string]string{"no_such_key": "x"}, []string{"llama.yaml", "no_such_key"}},
		{"list.yaml", []byte("- a\n- b\n"), nil, []string{"list.yaml", "not a mapping"}},
		{"modules-list.yaml", []byte("modules: [pre_trainer]\n"), nil, []string{"modules-list.yaml", "key modules is not a mapping", "line 1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Patch(tc.name, tc.src, tc.root, []Override{{"lr", "0.1"}})
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// Every value Rival writes reads back, under PyYAML's SafeLoader rules (facts.TypeYAML, checked
// against SafeLoader itself in package facts), as the Python value meant: 3e-05 is a float, None is
// null, a list is a list.
func TestPatchedValuesKeepTheirPythonTypes(t *testing.T) {
	src, err := os.ReadFile("testdata/llama3.1_8B-pretrain.yaml")
	require.NoError(t, err)
	out, err := Patch("llama.yaml", src, nil, []Override{
		{"min_lr", "3e-05"}, {"adam_eps", "1e-08"}, {"lr", "0.0003"}, {"fp8", "None"}, {"bf16", "True"},
		{"profile_ranks", "[0,3]"}, {"seq_length", "4096"}, {"tokenizer_model", "/rival/tokenizer"},
	})
	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(out, &doc))
	v, err := facts.TypeYAML(&doc)
	require.NoError(t, err)
	ov := v.(map[string]any)["modules"].(map[string]any)["pre_trainer"].(map[string]any)["overrides"].(map[string]any)
	assert.Equal(t, 3e-05, ov["min_lr"])
	assert.Equal(t, 1e-08, ov["adam_eps"])
	assert.Equal(t, 0.0003, ov["lr"])
	assert.Nil(t, ov["fp8"])
	assert.Contains(t, ov, "fp8")
	assert.Equal(t, true, ov["bf16"])
	assert.Equal(t, []any{int64(0), int64(3)}, ov["profile_ranks"])
	assert.Equal(t, int64(4096), ov["seq_length"])
	assert.Equal(t, "/rival/tokenizer", ov["tokenizer_model"])
}

func TestPyFloat(t *testing.T) {
	for in, want := range map[float64]string{3e-05: "0.00003", 1e-08: "0.00000001", 1: "1.0", 0.1: "0.1", 0.0003: "0.0003", 1e6: "1000000.0"} {
		assert.Equal(t, want, pyFloat(in))
		assert.Equal(t, in, facts.TypeYAMLScalar(want))
		assert.Equal(t, in, facts.TypeCLI(want))
	}
}

func FuzzPatch(f *testing.F) {
	for _, n := range []string{"llama3.1_8B-pretrain.yaml", "malformed.yaml", "no-overrides.yaml"} {
		b, err := os.ReadFile("testdata/" + n)
		if err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		out, err := Patch("fuzz.yaml", src, nil, []Override{{"seq_length", "2048"}, {"profile_ranks", "[0]"}})
		if err != nil {
			return
		}
		// Whatever was patched must parse again and carry the value.
		var v map[string]any
		require.NoError(t, yaml.Unmarshal(out, &v))
	})
}
