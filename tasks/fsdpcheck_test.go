package tasks

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/spec"
)

// checkExec answers an fsdp launch's preflight (train.py --check) with the workload as its read-back
// and the given sample digest, and the training launch like a trainer.
type checkExec struct {
	scriptedExecutor
	samples string
	checks  int
}

func (c *checkExec) Run(ctx context.Context, l spec.Launch, maps []PathMap, onLine func(string)) (ExecInfo, error) {
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
	require.Equal(t, spec.FSDP, in.Framework)
	task, err := w.TrainTask(in)
	require.NoError(t, err)
	err = w.Runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Equal(t, 1, ex.checks, "the preflight ran")
	assert.Contains(t, err.Error(), "preflight: the trainer's first 4 samples (sha256 00) are not those of Megatron's order Rival wrote (sha256 ")
	assert.True(t, strings.Contains(err.Error(), "it would train on other token sequences"))
	assert.Zero(t, ex.runs.Load(), "the training launch never starts")
}
