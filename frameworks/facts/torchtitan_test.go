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
	require.ErrorContains(t, err, "torchtitan_v0.2.0_primus.json", "Primus options exist for the AMD pin only")
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
