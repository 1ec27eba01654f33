package kube_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rivalbench/rival/kube"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// A kubeconfig that is a FIFO, a link to /dev/zero, a folder or larger than any kubeconfig is
// refused at once, naming it, in whichever place of KUBECONFIG's list it stands: client-go would
// wait on the FIFO for ever and read /dev/zero until memory ran out.
func TestKubeconfigRefusesHostileFiles(t *testing.T) {
	safefiletest.Refuses(t, safefiletest.Kinds, 16<<20, func(t *testing.T) (string, func() error) {
		dir := t.TempDir()
		p := filepath.Join(dir, "config")
		missing := filepath.Join(dir, "not-there")
		t.Setenv("KUBECONFIG", missing+string(os.PathListSeparator)+p)
		return p, func() error { _, _, err := kube.Connect(""); return err }
	})
}
