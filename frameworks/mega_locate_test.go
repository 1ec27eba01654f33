package frameworks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/hw"
)

// runLaunch executes a launch's command with bash, as the container does, with a stand-in torchrun
// (and no python3 megatron package) first on PATH. The stand-in fails unless the script it is given
// exists, and prints its arguments.
func runLaunch(t *testing.T, l core.Launch, env ...string) (string, error) {
	t.Helper()
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "torchrun"), []byte(`#!/bin/bash
for a in "$@"; do case "$a" in *.py) [ -f "$a" ] || { echo "torchrun: can't open file '$a'" >&2; exit 2; } ;; esac; done
echo "cwd=$PWD"; printf 'arg=%s\n' "$@"
`), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "python3"), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	cmd := exec.Command(l.Command[0], l.Command[1:]...)
	cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin"}, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// The NVIDIA image keeps Megatron-LM under /opt/Megatron-Bridge/3rdparty/Megatron-LM; the launch finds
// pretrain_gpt.py at run time and fails before torchrun, naming where it looked, when it is absent.
func TestMegaFindsPretrainGPTAtRunTime(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	for _, stack := range core.StackNames {
		pinned, err := mega.Dir(core.Plan{Request: core.Request{Platform: hw.PlatformNVIDIA, Stack: stack}})
		require.NoError(t, err)
		assert.Equal(t, "/opt/Megatron-Bridge/3rdparty/Megatron-LM", pinned, "the NeMo images' Megatron-LM tree (Megatron-Bridge's 3rdparty)")
	}

	l, err := Build(request(t, hw.PlatformNVIDIA, "mega", "llama"))
	require.NoError(t, err)

	tree := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(tree, "pretrain_gpt.py"), []byte("# stand-in\n"), 0o644))
	out, err := runLaunch(t, l, mega.DirEnv+"="+tree)
	require.NoError(t, err, out)
	assert.Contains(t, out, "cwd="+tree)
	assert.Contains(t, out, "arg="+filepath.Join(tree, "pretrain_gpt.py")+"\narg=--num-layers\narg=32\n",
		"the script comes right after torchrun's own options, before Megatron's")
	assert.Contains(t, out, "arg=--nproc_per_node=8\n")

	out, err = runLaunch(t, l, mega.DirEnv+"="+t.TempDir())
	require.Error(t, err)
	assert.NotContains(t, out, "cwd=", "torchrun never starts")
	assert.Contains(t, out, "mega: Megatron-LM's pretrain_gpt.py not found")
	assert.Contains(t, out, "/opt/Megatron-Bridge/3rdparty/Megatron-LM/pretrain_gpt.py")
	assert.Contains(t, out, "MEGATRON_LM_DIR")
	assert.Equal(t, 1, strings.Count(out, "\n"), "one line: %s", out)
}
