package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// train:check takes a framework the way train:run does: prim on nvd is the nemo launch the old
// suite's remap runs there, and "all" means what runs on the platform.
func TestCheckFrameworks(t *testing.T) {
	cases := []struct {
		platform, framework string
		want                []string
		err                 string
	}{
		{"nvd", "prim", []string{"prim"}, ""},
		{"amd", "nemo", []string{"nemo"}, ""},
		{"nvd", "mega", []string{"mega"}, ""},
		{"amd", "all", []string{"fsdp", "mega", "prim", "titan"}, ""},
		{"nvd", "all", []string{"fsdp", "mega", "nemo", "titan"}, ""},
		{"cpu", "all", []string{"fsdp"}, ""},
		{"cpu", "mega", nil, `framework "mega" does not run on cpu (there: fsdp, or all)`},
		{"nvd", "nope", nil, `framework "nope" does not run on nvd (there: fsdp, mega, nemo, titan, or all)`},
	}
	for _, tc := range cases {
		t.Run(tc.platform+"/"+tc.framework, func(t *testing.T) {
			got, err := checkFrameworks(tc.platform, tc.framework)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}
