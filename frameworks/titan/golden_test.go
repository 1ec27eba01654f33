package titan

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

// TestGoldenJobConfigs pins, per stack and platform, the version string a result records and the job
// config a Llama launch writes (the TOML on nvd, the Primus experiment on amd), byte for byte.
// Regenerate after a reviewed change: go test ./frameworks/titan -run TestGoldenJobConfigs -update
func TestGoldenJobConfigs(t *testing.T) {
	for _, stack := range core.StackNames {
		for _, platform := range []string{hw.PlatformNVIDIA, hw.PlatformAMD} {
			t.Run(stack+"/"+platform, func(t *testing.T) {
				l, err := Build(stackPlan(t, stack, platform, "llama"))
				require.NoError(t, err)
				file, ext := TOMLName, "toml"
				if platform == hw.PlatformAMD {
					file, ext = EXPName, "yaml"
				}
				var b strings.Builder
				fmt.Fprintf(&b, "# FrameworkVersion: %s\n# Command: %s\n# %s:\n", l.FrameworkVersion, strings.Join(l.Command, " "), file)
				b.Write(l.Files[file])
				path := filepath.Join("testdata", "golden", fmt.Sprintf("%s-%s-llama.%s", stack, platform, ext))
				if *update {
					require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
					require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err, "run with -update to write it")
				assert.Equal(t, string(want), b.String())
			})
		}
	}
}
