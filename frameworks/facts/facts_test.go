package facts

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The oracle is Primus's own coercion function and PyYAML's SafeLoader, run on the probes by
// extract_primus.py and recorded in primus_v26.2.json.
func TestTypingMatchesPrimusAndSafeLoader(t *testing.T) {
	p, err := PrimusAt("v26.2")
	require.NoError(t, err)
	require.NotEmpty(t, p.CLITyping)
	for text, want := range p.CLITyping {
		got := TypeCLI(text)
		assert.Equal(t, want.Type, PyType(got), "cli %q", text)
		assert.Equal(t, normalize(want.Value), normalize(got), "cli %q", text)
	}
	for text, want := range p.YAMLTyping {
		if want.Type == "list" {
			continue // flow sequences go through TypeYAML; the scalar resolver sees scalars only
		}
		got := TypeYAMLScalar(text)
		assert.Equal(t, want.Type, PyType(got), "yaml %q", text)
		assert.Equal(t, normalize(want.Value), normalize(got), "yaml %q", text)
	}
}

func normalize(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return x
		}
	case int64:
		return float64(x)
	}
	return v
}

func TestMegatronParse(t *testing.T) {
	for _, c := range []string{"b0cc2706", "3bec9aa9"} {
		m, err := MegatronAt(c)
		require.NoError(t, err)
		assert.Equal(t, "0.16.0", m.MegatronCore)
		good := []string{"--lr", "0.0003", "--min-lr", "3e-05", "--bf16", "--profile-ranks", "0", "3", "--window-size", "4096,0", "--fp8-format", "hybrid"}
		v, err := m.Parse(good)
		require.NoError(t, err)
		assert.Equal(t, 3e-05, v["min_lr"])
		assert.Equal(t, []any{int64(0), int64(3)}, v["profile_ranks"])
		tests := []struct {
			name string
			argv []string
			want string
		}{
			{"unknown option", []string{"--no-such-option", "1"}, "unrecognized arguments: --no-such-option"},
			{"wrong type", []string{"--num-layers", "32.5"}, "invalid int value"},
			{"min_lr above lr", []string{"--lr", "0.0001", "--min-lr", "0.001"}, "min_lr 0.001 is above lr 0.0001"},
			{"bad choice", []string{"--fp8-format", "None"}, "invalid choice"},
			{"missing value", []string{"--lr"}, "expected one argument"},
		}
		for _, tc := range tests {
			_, err := m.Parse(tc.argv)
			require.Error(t, err, tc.name)
			assert.Contains(t, err.Error(), tc.want, tc.name)
		}
	}
	_, err := MegatronAt("000c4ac2")
	assert.ErrorContains(t, err, "extract_megatron.py")
}

func TestPrimusOverrideChecks(t *testing.T) {
	p, err := PrimusAt("v26.2")
	require.NoError(t, err)
	m, err := MegatronAt("3bec9aa9")
	require.NoError(t, err)
	assert.True(t, p.HasEXP("llama3.1_8B-BF16-pretrain.yaml"))
	assert.False(t, p.HasEXP("llama3.1_8B-pretrain.yaml"), "gone since Primus ca4ef23d")
	ok := map[string]any{"lr": 0.0003, "min_lr": 3e-05, "fp8": nil, "profile_ranks": []any{int64(0), int64(3)}, "bf16": true, "mock_data": false}
	require.NoError(t, p.CheckOverrides("llama3.1_8B.yaml", m, ok))
	for name, c := range map[string]struct {
		ov   map[string]any
		want string
	}{
		"exponent string": {map[string]any{"lr": 0.0003, "min_lr": TypeCLI("3e-05")}, "min_lr: --min-lr converts to float, got str 3e-05"},
		"fp8 None string": {map[string]any{"fp8": TypeCLI("None")}, "is not one of"},
		"ranks string":    {map[string]any{"profile_ranks": TypeCLI("[0,3]")}, "takes a list"},
		"unknown key":     {map[string]any{"no_such_key": int64(1)}, "no_such_key: not a key"},
		"min_lr above lr": {map[string]any{"lr": 0.0001, "min_lr": 0.001}, "min_lr 0.001 is above lr 0.0001"},
		"switch":          {map[string]any{"bf16": "True"}, "needs true or false"},
	} {
		err := p.CheckOverrides("llama3.1_8B.yaml", m, c.ov)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), c.want, name)
	}
}
