package tasks

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
)

// captureStdout runs f with os.Stdout sent to a file and returns what it printed.
func captureStdout(t *testing.T, f func() error) (string, error) {
	t.Helper()
	tmp, err := os.CreateTemp(t.TempDir(), "stdout")
	require.NoError(t, err)
	defer tmp.Close()
	old := os.Stdout
	os.Stdout = tmp
	ferr := f()
	os.Stdout = old
	_, err = tmp.Seek(0, io.SeekStart)
	require.NoError(t, err)
	out, err := io.ReadAll(tmp)
	require.NoError(t, err)
	return string(out), ferr
}

// TestSlurmScriptTargetEveryCell runs train:slurm-script's entry point for every platform ×
// framework × model, on one node and on two. A cell the framework itself refuses for the model
// (the same refusal a one-host run gets) is skipped; every other cell must give a script.
func TestSlurmScriptTargetEveryCell(t *testing.T) {
	for _, nnodes := range []int{1, 2} {
		for _, platform := range []string{hw.PlatformAMD, hw.PlatformNVIDIA, hw.PlatformCPU} {
			for _, fw := range frameworks.Names() {
				for _, model := range []string{"llama", "qwen", "mistral"} {
					name := fmt.Sprintf("%s/%s/%s/%dnode", platform, fw, model, nnodes)
					t.Run(name, func(t *testing.T) {
						w, _ := newWorkspace(t, "")
						w.env = w.env.with(map[string]string{"SLURM_IMAGE": "", "GPUS_PER_NODE": "8"})
						t.Setenv("NNODES", fmt.Sprint(nnodes))
						t.Setenv("DP", fmt.Sprint(8*nnodes))
						if platform == hw.PlatformCPU {
							t.Setenv("DP", "")
						}
						w.config, _ = w.config.with("test", map[string]string{"NNODES": fmt.Sprint(nnodes), "DP": fmt.Sprint(8 * nnodes)})
						if platform == hw.PlatformNVIDIA {
							// pyxis needs an image the nodes can pull (TestSlurmScriptPyxisImage).
							setting(w, "SLURM_IMAGE", pinnedRef)
						}
						if why := frameworkRefuses(platform, fw, model); why != "" {
							t.Skipf("the framework refuses this cell on any executor: %s", why)
						}
						out, err := captureStdout(t, func() error {
							return w.SlurmScriptTarget(context.Background(), platform, fw, model)
						})
						require.NoError(t, err)
						assert.Contains(t, out, fmt.Sprintf("#SBATCH --nodes=%d\n", nnodes))
						assert.Contains(t, out, "NODE_RANK=\"$SLURM_NODEID\"")
					})
				}
			}
		}
	}
}

// pinnedRef is an image named by digest, as image:push prints it.
var pinnedRef = "registry.example.com:5000/team/rival-nvd@sha256:" + strings.Repeat("ab", 32)

// frameworkRefuses is the framework's own verdict on a cell, asked of the registry with a one-node
// request: "" when it builds.
func frameworkRefuses(platform, fw, model string) string {
	if _, _, err := frameworks.Resolve(fw, platform); err != nil {
		return err.Error()
	}
	host := hw.Host{Platform: platform}
	dp := 8
	if platform != hw.PlatformCPU {
		for i := 0; i < 8; i++ {
			host.GPUs = append(host.GPUs, hw.GPU{Index: i})
		}
	} else {
		model += "-proxy"
		dp = 1
	}
	_, err := frameworks.Build(core.Request{Platform: platform, Framework: fw, Model: model, Host: host,
		Fair: core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, GBS: 8 * dp, TP: 1, PP: 1, DP: dp, TrainIters: 10, WarmupSteps: 1,
			LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: "bf16"},
		DataPrefix: "/rival/data/x", TokenizerPath: "/rival/tokenizer", OutputDir: "/rival/run", DataCacheDir: "/rival/cache"})
	if err != nil {
		return err.Error()
	}
	return ""
}

// A Slurm run checks its launch before torchrun: the batch script's first step after the node
// hardware runs the launch's preflight once, on the first node, in the run's image, so a launch the
// framework rejects ends the job in seconds instead of failing in every rank.
func TestSlurmScriptRunsPreflightBeforeTorchrun(t *testing.T) {
	for _, c := range []struct{ platform, fw, check string }{
		{hw.PlatformNVIDIA, "mega", "/rival/run/preflight/preflight.py"},
		{hw.PlatformNVIDIA, "nemo", "/rival/run/rival_nemo.py"},
		{hw.PlatformAMD, "mega", "/rival/run/preflight/preflight.py"},
		{hw.PlatformAMD, "prim", "/rival/run/preflight/preflight.py"},
	} {
		t.Run(c.platform+"/"+c.fw, func(t *testing.T) {
			w, _ := newWorkspace(t, "")
			t.Setenv("NNODES", "2")
			t.Setenv("DP", "16")
			w.env = w.env.with(map[string]string{"SLURM_IMAGE": "", "GPUS_PER_NODE": "8"})
			if c.platform == hw.PlatformNVIDIA {
				setting(w, "SLURM_IMAGE", pinnedRef)
			}
			w.config, _ = w.config.with("test", map[string]string{"NNODES": "2", "DP": "16"})
			out, err := captureStdout(t, func() error {
				return w.SlurmScriptTarget(context.Background(), c.platform, c.fw, "llama")
			})
			require.NoError(t, err)
			pre := strings.Index(out, "srun --nodes=1 --ntasks=1 \\\n")
			run := strings.Index(out, "rival-node \\\n")
			require.GreaterOrEqual(t, pre, 0, "the script has a preflight step:\n%s", out)
			require.Greater(t, run, pre, "the preflight runs before the launch")
			step := out[pre:run]
			assert.Contains(t, step, "rival-preflight")
			assert.Contains(t, step, c.check)
			assert.NotContains(t, step, "torchrun")
			if c.fw == "nemo" {
				assert.Contains(t, step, "WORLD_SIZE=16")
				assert.Contains(t, step, "--check")
			} else {
				assert.Contains(t, step, "RIVAL_DEVICE_CAPABILITY=")
			}
			if c.platform == hw.PlatformNVIDIA {
				assert.Contains(t, step, "--container-image=", "in the run's image")
			} else {
				assert.Contains(t, step, "rival/amd", "in the run's image (docker run, from RIVAL_NODE)")
				assert.Contains(t, step, "--device /dev/kfd")
			}
		})
	}
}

// TestSlurmScriptSamplesPower: the script a GPU run submits starts the per-node sampler with
// the power query the result's parser reads, writing where the per-node task sees the run
// folder (inside the container under pyxis).
func TestSlurmScriptSamplesPower(t *testing.T) {
	w, _ := newWorkspace(t, "")
	setting(w, "SLURM_IMAGE", pinnedRef)
	out, err := slurmScriptOf(t, w, hw.PlatformNVIDIA, "mega", "llama")
	require.NoError(t, err)
	assert.Contains(t, out, "nvidia-smi --query-gpu=index,power.draw,memory.used --format=csv,noheader,nounits")
	assert.Contains(t, out, `d=/rival/run/nodes/"${SLURMD_NODENAME`, "the run folder as the container mounts it")
	assert.Contains(t, out, `>> "$d/power.log"`)
}
