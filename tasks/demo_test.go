package tasks

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
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
	t.Setenv("RIVAL_NO_INSTALL", "1")
	t.Setenv("CONTAINER", "")
	t.Setenv("IMAGE_BASE", "")
	w, _ := newWorkspace(t, "")
	_, _, err := w.provisionTorch(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "RIVAL_NO_INSTALL=1 forbids installing")
	assert.Contains(t, err.Error(), "\n    apt-get install -y python3-torch python3-numpy libopenblas0-pthread\n")
}

// TestVerifyDemoResultUsesItsConfiguration: a result of the demo's
// two-process configuration is checked against that configuration, not
// the one-process one.
func TestVerifyDemoResultUsesItsConfiguration(t *testing.T) {
	old := CPUFlagsPath
	CPUFlagsPath = filepath.Join("testdata", "cpuinfo", "no-bf16.txt")
	t.Cleanup(func() { CPUFlagsPath = old })
	for _, v := range demoVariants {
		t.Run(v.Name, func(t *testing.T) {
			w, _ := newWorkspace(t, "")
			in := trainInputs(t, w, &scriptedExecutor{steps: 4})
			cfg, err := in.Config.With("demo "+v.Name, v.Values)
			require.NoError(t, err)
			in.Config, in.Variant = cfg, v.Name
			task, err := w.TrainTask(in)
			require.NoError(t, err)
			require.NoError(t, w.Runner.Run(context.Background(), task))
			var out bytes.Buffer
			w.VerifyResults([]string{task.Outputs[0].Path}, &out) // the dataset differs from the demo's: an error
			assert.Regexp(t, `(?m)^match\s+config_fingerprint`, out.String())
		})
	}
}
