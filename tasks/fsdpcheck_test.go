package tasks

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
)

// checkExec answers an fsdp launch's preflight (train.py --check) with the workload as its read-back
// and the given sample digest, and the training launch like a trainer.
type checkExec struct {
	scriptedExecutor
	samples string
	checks  int
}

func (c *checkExec) Run(ctx context.Context, l core.Launch, maps []PathMap, onLine func(string)) (ExecInfo, error) {
	if l.Command[len(l.Command)-1] == "--check" {
		c.checks++
		onLine(effective.LinePrefix + string(l.Workload))
		onLine("preflight samples: " + c.samples)
		onLine("preflight ok: fsdp")
		return ExecInfo{}, nil
	}
	return c.scriptedExecutor.Run(ctx, l, maps, onLine)
}

// A trainer whose preflight digests other samples than those of the order Rival wrote (Megatron's)
// stops before training, with both digests.
func TestTrainStopsWhenTheTrainerReadsOtherSamples(t *testing.T) {
	w, _ := newWorkspace(t, "")
	ex := &checkExec{scriptedExecutor: scriptedExecutor{steps: 30}, samples: `{"samples": 4, "sha256": "00"}`}
	in := trainInputs(t, w, ex)
	require.Equal(t, core.FSDP, in.Framework)
	task, err := w.TrainTask(in)
	require.NoError(t, err)
	err = w.Runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Equal(t, 1, ex.checks, "the preflight ran")
	assert.Contains(t, err.Error(), "preflight: the trainer's first 4 samples (sha256 00) are not those of Megatron's order Rival wrote (sha256 ")
	assert.True(t, strings.Contains(err.Error(), "it would train on other token sequences"))
	assert.Zero(t, ex.runs.Load(), "the training launch never starts")
}

// train:check cpu fsdp runs the trainer's own check on the host, before any data is encoded, and
// compares its read-back with the workload field by field.
func TestTrainCheckFSDPOnCPU(t *testing.T) {
	if err := checkTorch(context.Background(), "/usr/bin/python3"); err != nil {
		t.Skipf("skipping the fsdp check on the host: %v", err)
	}
	w, log := newWorkspace(t, "")
	require.NoError(t, w.CheckTarget(context.Background(), "cpu", "fsdp", "mistral-proxy"))
	assert.Contains(t, log.String(), "fsdp × mistral-proxy: preflight ok: fsdp train.py built the decoder on the meta device")
	assert.Contains(t, log.String(), "  effective configuration equals the workload, field by field (40 fields)")
}
