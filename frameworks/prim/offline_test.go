package prim

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/hw"
)

// Everything a default Primus run installs or builds at run time (read from each stack's pinned tree
// into the facts) is done when amd.Dockerfile builds the image, and the image keeps pip off the network.
func TestImageInstallsWhatRunsWouldFetch(t *testing.T) {
	df, err := os.ReadFile("../../amd.Dockerfile")
	require.NoError(t, err)
	run := strings.Join(regexp.MustCompile(`(?s)\nRUN (.*?[^\\])\n`).FindAllString(string(df), -1), "\n")
	for _, stack := range core.StackNames {
		pin, err := core.PinFor(hw.PlatformAMD, stack)
		require.NoError(t, err)
		p, err := facts.PrimusAt(pin.Primus)
		require.NoError(t, err)
		require.NotEmpty(t, p.RunTimeInstalls)
		for _, in := range p.RunTimeInstalls {
			var want string
			switch in.Kind {
			case "pip-requirements":
				want = "pip install --no-cache-dir -r " + in.Target
			case "make":
				want = "make -C " + in.Target
			case "pip-editable":
				want = "pip install --no-cache-dir -e " + in.Target
			default:
				t.Fatalf("Primus %s %s:%d: a run-time install of kind %q that the image does not know", p.Tag, in.File, in.Line, in.Kind)
			}
			assert.Contains(t, run, want, "Primus %s %s:%d installs %s at run time", p.Tag, in.File, in.Line, in.Target)
		}
	}
	for _, env := range []string{"PIP_NO_INDEX=1", "PIP_NO_BUILD_ISOLATION=0", "HF_HUB_OFFLINE=1"} {
		assert.Contains(t, string(df), env)
	}
}
