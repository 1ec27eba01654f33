package tasks

import (
	"context"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanInstall(t *testing.T) {
	const pkgs = "python3-torch python3-numpy libopenblas0-pthread"
	for _, tc := range []struct {
		name      string
		root      bool
		apt       string
		noInstall bool
		install   bool
		manual    string
	}{
		{"root with apt installs", true, "/usr/bin/apt-get", false, true, ""},
		{"not root: sudo", false, "/usr/bin/apt-get", false, false, "sudo apt-get install -y " + pkgs},
		{"RIVAL_NO_INSTALL", true, "/usr/bin/apt-get", true, false, "apt-get install -y " + pkgs},
		{"no apt-get: pip", true, "", false, false, "pip install torch numpy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planInstall(tc.root, tc.apt, tc.noInstall)
			assert.Equal(t, tc.install, p.Install != nil)
			assert.Equal(t, tc.manual, p.Manual)
			if p.Install != nil {
				assert.Equal(t, []string{tc.apt, "install", "-y", "-q", "--no-install-recommends", "python3-torch", "python3-numpy", "libopenblas0-pthread"}, p.Install)
			} else {
				assert.NotEmpty(t, p.Why)
			}
		})
	}
}

// TestDemoWithoutTorchMayNotInstallSaysTheOneCommand: an interpreter
// without torch and RIVAL_NO_INSTALL=1 stop the demo with the command.
func TestDemoWithoutTorchMayNotInstallSaysTheOneCommand(t *testing.T) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("no apt-get: the command would be pip's")
	}
	old := hostPython
	hostPython = "/bin/false"
	t.Cleanup(func() { hostPython = old })
	w, _ := newWorkspace(t, "")
	w.env = w.env.with(map[string]string{"RIVAL_NO_INSTALL": "1", "CONTAINER": "", "IMAGE_BASE": ""})
	_, _, err := w.provisionTorch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RIVAL_NO_INSTALL=1 forbids installing")
	assert.Contains(t, err.Error(), "\n    apt-get install -y python3-torch python3-numpy libopenblas0-pthread\n")
}
