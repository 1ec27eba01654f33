package kubeproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The targets (magefile.go and everything it imports) compile without the Kubernetes libraries:
// they reach Kubernetes through the rival-kube program only.
func TestTargetsBuildWithoutKubernetesLibraries(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	require.FileExists(t, filepath.Join(root, "magefile.go"))
	for _, args := range [][]string{{"-tags", "mage", "."}, {"mage.go"}} {
		cmd := exec.Command("go", append([]string{"list", "-deps"}, args...)...)
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		require.NoError(t, err, "go list -deps %s", strings.Join(args, " "))
		deps := strings.Fields(string(out))
		if args[0] == "-tags" {
			require.Contains(t, deps, "github.com/rivalbench/rival/kube/kubeproc", "the targets reach Kubernetes through this package")
		}
		for _, p := range deps {
			assert.False(t, strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") || p == "github.com/rivalbench/rival/kube",
				"go list -deps %s: %s is compiled into the targets", strings.Join(args, " "), p)
		}
	}
}
