package frameworks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/frameworks/spec"
	"github.com/rivalbench/rival/hw"
)

// Every row of the framework table is complete, and its log family is one the log parser reads.
func TestFrameworkTable(t *testing.T) {
	names := map[string]bool{}
	for _, f := range Table() {
		assert.False(t, names[f.Name], "%s appears twice", f.Name)
		names[f.Name] = true
		assert.NotEmpty(t, f.Label, f.Name)
		assert.NotEmpty(t, f.Platforms, f.Name)
		require.NotNil(t, f.Build, f.Name)
		fam, err := logparse.Canonical(f.LogFamily)
		require.NoError(t, err, "%s's log family %q", f.Name, f.LogFamily)
		assert.NotEmpty(t, fam, f.Name)
		d, err := EntryScriptDigest(f.Name)
		require.NoError(t, err)
		assert.Equal(t, f.ScriptDigest != nil, d != "", f.Name)
	}
	for _, n := range []string{spec.Mega, spec.Prim, spec.Nemo, spec.Titan, spec.FSDP} {
		assert.True(t, names[n], "%s has a row", n)
	}
	for n := range builders {
		assert.True(t, names[n], "the builder of %s has a row in spec's framework table", n)
	}
	assert.Equal(t, "Megatron-LM", Label(spec.Mega))
	assert.Equal(t, "megatron", LogFamily(spec.Mega))
	assert.Equal(t, []string{hw.PlatformAMD}, Platforms(spec.Prim))
	_, err := EntryScriptDigest("deepspeed")
	assert.ErrorContains(t, err, `unknown framework "deepspeed"`)
}
