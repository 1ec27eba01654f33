package fsdp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
)

// windowCheck is the independent check of train.py's sliding window (testdata/window/check.py):
// the attention against a per-query reference over keys i-W..i, and which input positions reach
// which logits through a one-layer model, with and without the window.
const windowCheck = "testdata/window/check.py"

// The manual attention path (torch 1.13 has no SDPA) with Mistral's window rule, for real.
func TestSlidingWindowManualAttention(t *testing.T) {
	needTorch(t)
	dir := t.TempDir()
	train := filepath.Join(dir, ScriptName)
	require.NoError(t, os.WriteFile(train, Script(), 0o644))
	out, err := exec.Command(DefaultPython, windowCheck, train, "manual").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "window ok: ")
}

// The SDPA path (with enable_gqa) and the FlexAttention path GPU runs take past the window (its
// block mask; eager here, compiled on CUDA), in Debian 13's torch 2.6 (the trixie torch base image).
func TestSlidingWindowInTorch26(t *testing.T) {
	e := engineWithImage(t, imageTrixie, "trixie")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ScriptName), Script(), 0o644))
	check, err := os.ReadFile(windowCheck)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "check.py"), check, 0o644))
	for _, attention := range []string{"sdpa", "flex"} {
		t.Run(attention, func(t *testing.T) {
			var lines []string
			code, err := e.Run(context.Background(), container.RunSpec{
				Image: imageTrixie, RunID: fmt.Sprintf("fsdp-window-%s-%d", attention, time.Now().UnixNano()),
				Cmd: []string{"python3", "/rival/run/check.py", "/rival/run/" + ScriptName, attention}, WorkDir: "/rival/run",
				Network: "none", Platform: container.PlatformCPU, Timeout: 5 * time.Minute,
				Mounts: []container.Mount{{Source: dir, Target: "/rival/run", ReadOnly: true}},
				Env:    []string{"PYTHONDONTWRITEBYTECODE=1"},
			}, func(line string) { lines = append(lines, line) })
			if _, exited := err.(*container.ExitError); err != nil && !exited {
				require.NoError(t, err, strings.Join(lines, "\n"))
			}
			require.Equal(t, 0, code, strings.Join(lines, "\n"))
			assert.Contains(t, strings.Join(lines, "\n"), "window ok: torch 2.6.0+debian, attention "+attention)
		})
	}
}

// The model facts the builder passes reach the model and optimizer the trainer builds: a Mistral-style
// window, tied embeddings (one matrix fewer), the init std and the AdamW ε, as the run reports them.
func TestTrainTiedWindowedModel(t *testing.T) {
	needTorch(t)
	cfg := proxyConfig(t, proxyDataset(t, 2048))
	cfg.Window, cfg.TieEmbeddings, cfg.InitStd, cfg.AdamEps, cfg.TrainIters, cfg.WarmupSteps = 16, true, 0.01, 1e-6, 3, 1
	stdout, stderr, code := run(t, launchOrFail(t, cfg))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Len(t, iterations(t, stdout), 3)
	parsed := parseLog(t, stdout)
	assert.Equal(t, int64(proxyParams(cfg)-cfg.Vocab*cfg.Hidden), *parsed.Preamble.ParameterCount, "the head is the embedding")
	assert.Equal(t, "(16, 0)", parsed.Preamble.Args["window_size"])
	assert.Equal(t, "False", parsed.Preamble.Args["untie_embeddings_and_output_weights"])
	assert.Equal(t, "0.01", parsed.Preamble.Args["init_method_std"])
	assert.Equal(t, "1e-06", parsed.Preamble.Args["adam_eps"])
	assert.Contains(t, stdout, "eps 1e-06")
	// The embedding (shared with the head) and 7 matrices per block decay; 5 norms do not.
	assert.Contains(t, stdout, "weight decay 0.1 on 15 tensors, none on 5 (biases, norms)")
}
