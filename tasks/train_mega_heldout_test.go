package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/executor"
)

// megatronPreflightExec runs a mega launch's preflight for real: preflight.py with the previous
// stack's pinned Megatron-LM tree on the host's Python (torch stood in), reading the files the run
// wrote; the training launch is scripted, with Megatron's validation lines after every fourth
// iteration. tamper, when set, changes the held-out tokens before the preflight reads them, as a
// framework reading other sequences than Rival wrote would.
type megatronPreflightExec struct {
	scriptedExecutor
	trees     upstreamtest.Trees
	tamper    bool
	preflight []string
	output    string
}

func (m *megatronPreflightExec) Run(ctx context.Context, l core.Launch, maps []executor.PathMap, onLine func(string)) (executor.Info, error) {
	if len(l.Command) > 1 && strings.HasSuffix(l.Command[1], "/preflight/preflight.py") {
		m.preflight = l.Command
		if i := slices.Index(l.Command, "--held-out"); m.tamper && i > 0 {
			bin := l.Command[i+2] + ".bin"
			b, err := os.ReadFile(bin)
			if err != nil {
				return executor.Info{}, err
			}
			b[len(b)/2] ^= 1
			if err := os.WriteFile(bin, b, 0o644); err != nil {
				return executor.Info{}, err
			}
		}
		cmd := exec.CommandContext(ctx, m.trees.Python, l.Command[1:]...)
		cmd.Dir = l.WorkDir
		cmd.Env = append(os.Environ(), mega.DirEnv+"="+filepath.Join(m.trees.Dir, "megatron-b0cc2706"))
		for k, v := range l.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		out, err := cmd.CombinedOutput()
		m.output = string(out)
		for _, line := range strings.Split(strings.TrimSpace(m.output), "\n") {
			onLine(line)
		}
		if err != nil {
			return executor.Info{ExitCode: 1}, nil
		}
		return executor.Info{}, nil
	}
	m.lines = nil
	for it := 4; it <= 16; it += 4 {
		m.lines = append(m.lines, fmt.Sprintf(" validation loss at iteration %d | lm loss value: %.6E | lm loss PPL: 1.0E+03 |", it, 9.5-0.6*float64(it/4)))
	}
	return m.scriptedExecutor.Run(ctx, l, maps, onLine)
}

// A mega run on the demo's settings evaluates Rival's held-out set through rival_megatron.py: its
// preflight builds the held-out view with Megatron's own GPTDataset and sampler on the pinned tree
// and prints the digest Rival's held-out set has, the run records the evaluations from Megatron's
// validation lines with no held_out_not_evaluated problem, and the result names how it evaluated.
func TestTrainMegaEvaluatesTheHeldOutSet(t *testing.T) {
	trees := upstreamtest.Get(t)
	w, _ := newWorkspace(t, "")
	ex := &megatronPreflightExec{scriptedExecutor: scriptedExecutor{steps: 16}, trees: trees}
	in := newTrainInputs(t, w, ex)
	in.Stack, in.Platform, in.Framework, in.Host = core.StackPrevious, hw.PlatformNVIDIA, "mega", oneH100()
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task), ex.output)

	require.Contains(t, ex.preflight, "--held-out", "the preflight digests the held-out view")
	run := strings.Join(ex.last.Command, " ")
	assert.Contains(t, run, "/"+mega.Wrapper+" --held-out ")
	assert.Contains(t, run, "--eval-iters 2 --eval-interval 4", "8 held-out sequences are 2 global batches of 4, every 16 samples")
	assert.Contains(t, ex.output, "preflight held-out: ")

	data, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	var r result.Result
	require.NoError(t, json.Unmarshal(data, &r))
	require.NotNil(t, r.HeldOut)
	assert.Equal(t, mega.Evaluation, r.HeldOut.Evaluated)
	require.NotNil(t, r.HeldOut.FrameworkSHA256)
	assert.Equal(t, r.HeldOut.SHA256, *r.HeldOut.FrameworkSHA256, "Megatron's view reads the sequences Rival wrote")
	for _, p := range r.Problems {
		assert.NotEqual(t, "held_out_not_evaluated", p.Name)
	}
	require.Len(t, r.Evaluations, 4)
	assert.InDelta(t, 7.1, r.Evaluations[3].Loss, 1e-9)

	// Other held-out tokens than Rival wrote: Megatron's digest differs and the run never starts.
	w, _ = newWorkspace(t, "")
	ex = &megatronPreflightExec{scriptedExecutor: scriptedExecutor{steps: 16}, trees: trees, tamper: true}
	in = newTrainInputs(t, w, ex)
	in.Stack, in.Platform, in.Framework, in.Host = core.StackPrevious, hw.PlatformNVIDIA, "mega", oneH100()
	task, err = w.trainTask(in)
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stopped the run before it started: held_out: the trainer would evaluate 8 held-out sequences with sha256 ")
	assert.Zero(t, ex.runs.Load(), "the training launch never starts")
}

// oneH100 is one NVIDIA H100.
func oneH100() hw.Host {
	return hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Index: 0, Name: "NVIDIA H100 80GB HBM3"}}}
}
