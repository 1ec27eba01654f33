package facts

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTorchTitanFactsLoad(t *testing.T) {
	vs, err := TorchTitanVersions()
	require.NoError(t, err)
	assert.Contains(t, vs, "v0.2.0")
	assert.Contains(t, vs, "5fb7cc2e")
	assert.Contains(t, vs, "v0.2.2")
	for _, v := range vs {
		c, err := TorchTitan(v, false)
		require.NoError(t, err, v)
		// Options every JobConfig of these versions has, with their types in job_config.py.
		for _, o := range []struct{ sec, key, kind string }{
			{"training", "seq_len", "int"}, {"training", "max_norm", "float"}, {"optimizer", "lr", "float"},
			{"compile", "enable", "bool"}, {"model", "hf_assets_path", "str"}, {"experimental", "custom_import", "str"},
		} {
			got, ok := c.Lookup(o.sec, o.key)
			require.True(t, ok, "%s: %s.%s", v, o.sec, o.key)
			assert.Equal(t, o.kind, got.Kind, "%s: %s.%s", v, o.sec, o.key)
		}
		_, ok := c.Lookup("quantize.linear.float8", "recipe_name")
		assert.True(t, ok, "nested sections are looked up by dotted name")
	}
	_, err = TorchTitan("v9.9.9", false)
	require.ErrorContains(t, err, "torchtitan_extract.py")
	_, err = TorchTitan("v0.2.0", true)
	require.ErrorContains(t, err, "torchtitan_v0.2.0_primus.json", "Primus options exist for the AMD pins only")

	// v0.2.2 reads seed and deterministic under [debug]; Primus v26.5.1's pre_trainer.yaml still
	// sets them under [training], where its backend keeps them as attributes TorchTitan never reads.
	c, err := TorchTitan("v0.2.2", true)
	require.NoError(t, err)
	require.NoError(t, c.Check("debug", "seed", "42"))
	require.NoError(t, c.Check("debug", "deterministic", "false"))
	_, upstream := c.Sections["training"]["seed"]
	assert.False(t, upstream, "v0.2.2's JobConfig has no training.seed")
	_, primus := c.Extras.Sections["training"]["seed"]
	assert.True(t, primus, "Primus v26.5.1's module config still sets training.seed")
	for _, k := range []string{"enable_primus_turbo", "use_turbo_attention", "enable_embedding_autocast"} {
		_, ok := c.Lookup("primus_turbo", k)
		assert.True(t, ok, k)
	}
}

// FuzzTorchTitanCheck: any literal, section or key gives an answer, never a panic.
func FuzzTorchTitanCheck(f *testing.F) {
	c, err := TorchTitan("5fb7cc2e", true)
	require.NoError(f, err)
	for _, s := range [][3]string{{"training", "seq_len", "2048"}, {"optimizer", "implementation", `"fused"`},
		{"quantize.linear.float8", "recipe_name", `"rowwise"`}, {"training", "max_norm", "1e400"}, {"", "", `"\u00`}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, section, key, literal string) {
		_ = c.Check(section, key, literal)
	})
}
