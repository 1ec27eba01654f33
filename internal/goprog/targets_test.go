package goprog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The targets (magefile.go and everything it imports, and the mage.go bootstrap) compile without
// the libraries the programs hold: they reach each one through its program only.
func TestTargetsBuildWithoutTheProgramsLibraries(t *testing.T) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	require.FileExists(t, filepath.Join(root, "magefile.go"))
	held := map[string][]string{ // a program's library, by the package the targets reach it through
		"github.com/rivalbench/rival/kube/kubeproc": {"k8s.io/", "sigs.k8s.io/", "github.com/rivalbench/rival/kube"},
		"github.com/rivalbench/rival/hub":           {"github.com/parquet-go/", "github.com/rivalbench/rival/hub/parquettext"},
		"github.com/rivalbench/rival/compare/figure": {"gonum.org/", "golang.org/x/image/", "codeberg.org/", "git.sr.ht/",
			"github.com/ajstarks/", "image/png", "github.com/rivalbench/rival/compare/figure/render"},
	}
	for _, args := range [][]string{{"-tags", "mage", "."}, {"mage.go"}} {
		cmd := exec.Command("go", append([]string{"list", "-deps"}, args...)...)
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		require.NoError(t, err, "go list -deps %s", strings.Join(args, " "))
		deps := strings.Fields(string(out))
		for door, libs := range held {
			if args[0] == "-tags" {
				require.Contains(t, deps, door, "the targets reach the program through this package")
			}
			for _, p := range deps {
				for _, lib := range libs {
					exact := !strings.HasSuffix(lib, "/")
					assert.False(t, exact && p == lib || !exact && strings.HasPrefix(p, lib),
						"go list -deps %s: %s is compiled into the targets", strings.Join(args, " "), p)
				}
			}
		}
	}
}
