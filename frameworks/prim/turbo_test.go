package prim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
)

// The Turbo switches take the names the pinned release defines: v26.2's grouped MLP switch, v26.5.1's
// grouped GEMM with the dense GEMM off.
func TestTurboSwitchNamesFollowTheRelease(t *testing.T) {
	for _, tc := range []struct {
		tag  string
		on   bool
		want []Override
	}{
		{"v26.2", false, []Override{{"use_turbo_attention", "False"}, {"use_turbo_grouped_mlp", "False"}}},
		{"v26.2", true, []Override{{"use_turbo_attention", "True"}, {"use_turbo_grouped_mlp", "True"}}},
		{"v26.5.1", false, []Override{{"use_turbo_attention", "False"}, {"use_turbo_grouped_gemm", "False"}, {"use_turbo_gemm", "False"}}},
		{"v26.5.1", true, []Override{{"use_turbo_attention", "True"}, {"use_turbo_grouped_gemm", "True"}, {"use_turbo_gemm", "False"}}},
	} {
		pf, err := facts.PrimusAt(tc.tag)
		require.NoError(t, err)
		got, err := turboOverrides(pf, tc.on)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s, Turbo %v", tc.tag, tc.on)
	}
	_, err := turboOverrides(&facts.Primus{Tag: "v0", Module: map[string]any{"use_turbo_attention": false}}, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "use_turbo_grouped_gemm, use_turbo_grouped_mlp")
}

// Build refuses a key the stack's Primus does not define, such as a Turbo switch by its old name.
func TestBuildRefusesAKeyTheReleaseDropped(t *testing.T) {
	for stack, wantErr := range map[string]bool{core.StackCurrent: true, core.StackPrevious: false} {
		pf, err := primusOf(stack)
		require.NoError(t, err)
		stock, err := pf.Stock("llama3.1_8B-BF16-pretrain.yaml")
		require.NoError(t, err)
		p := core.Plan{Request: core.Request{Platform: "amd", Stack: stack}}
		err = knownKeys(p, pf, stock, []Override{{"seq_length", "2048"}, {"use_turbo_grouped_mlp", "False"}})
		if !wantErr {
			assert.NoError(t, err, stack)
			continue
		}
		require.Error(t, err, stack)
		assert.Contains(t, err.Error(), "no pre_trainer key use_turbo_grouped_mlp")
		assert.Contains(t, err.Error(), "Primus v26.5.1")
	}
}
