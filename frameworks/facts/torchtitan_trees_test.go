package facts

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/upstreamtest"
)

// TestTorchTitanFactsComeFromTheTrees runs torchtitan_extract.py on the pinned trees and compares its
// output with the facts files byte for byte: each TorchTitan JobConfig from its tree, and Primus's own
// options from the Primus release that vendors that TorchTitan (v26.2 with 5fb7cc2e, v26.5.1 with
// v0.2.2), against the JobConfig facts they extend.
func TestTorchTitanFactsComeFromTheTrees(t *testing.T) {
	tr := upstreamtest.Get(t)
	extract := func(t *testing.T, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(tr.Python, append([]string{"torchtitan_extract.py"}, args...)...)
		cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("torchtitan_extract.py %v: %v\n%s", args, err, ee.Stderr)
		}
		require.NoError(t, err)
		return out
	}
	for _, c := range []struct{ version, commit string }{
		{"v0.2.0", "29624e37fa6dd319fd671b009338651b5c665da2"},
		{"5fb7cc2e", "5fb7cc2e3bbb9b9dc0ab7af34ed5cc58b5f32021"},
		{"v0.2.2", "73a0e6979dd10b6b1904098eb3c8f62c18ab87ce"},
	} {
		t.Run(c.version, func(t *testing.T) {
			want, err := os.ReadFile("torchtitan_" + c.version + ".json")
			require.NoError(t, err)
			got := extract(t, tr.Tree(t, "torchtitan-"+c.version), c.version, c.commit)
			assert.Equal(t, string(want), string(got))
		})
	}
	for _, c := range []struct{ titan, primus, commit string }{
		{"5fb7cc2e", "v26.2", "1ec29c67dd22e79d638abed65a42bfb39622491a"},
		{"v0.2.2", "v26.5.1", "9a86ba8c99d6d41199442edef6d02a2bfad71c7c"},
	} {
		t.Run(c.titan+"_primus", func(t *testing.T) {
			name := "torchtitan_" + c.titan + "_primus.json"
			want, err := os.ReadFile(name)
			require.NoError(t, err)
			got := extract(t, "--primus", tr.Tree(t, "primus-"+c.primus), "torchtitan_"+c.titan+".json", c.primus, c.commit)
			assert.Equal(t, string(want), string(got))
			f, err := TorchTitan(c.titan, true)
			require.NoError(t, err)
			require.NotNil(t, f.Extras)
			assert.Equal(t, c.primus, f.Extras.Version, filepath.Join("frameworks/facts", name))
		})
	}
}
