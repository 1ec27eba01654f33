package facts

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/upstreamtest"
)

// TestPreflightPython runs the preflight's Python tests (test_preflight.py): the stand-in tests
// always, the upstream ones on the pinned trees (and none may skip under RIVAL_REQUIRE_UPSTREAM=1).
func TestPreflightPython(t *testing.T) {
	py := "/usr/bin/python3" // Debian's, with PyYAML and packaging
	if _, err := exec.LookPath(py); err != nil {
		upstreamtest.Missing(t, "no "+py)
	}
	if upstreamtest.Required() {
		py = upstreamtest.Get(t).Python
	}
	cmd := exec.Command(py, "-W", "ignore", "-m", "unittest", "test_preflight.py", "-v")
	cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	if upstreamtest.Required() {
		assert.NotContains(t, string(out), "skipped", "%s", out)
	}
}
