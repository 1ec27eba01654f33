package tasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rivalbench/rival/dag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A failed FORCE=1 rerun keeps the good run's log where its result points;
// a later success removes the stale failure.json and *.failed.log.
func TestTrainLeftovers(t *testing.T) {
	w, _ := newWorkspace(t, "")
	ex := &scriptedExecutor{steps: 3}
	task, err := w.trainTask(newTrainInputs(t, w, ex))
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	logPath := task.Outputs[1].Path
	good, err := os.ReadFile(logPath)
	require.NoError(t, err)
	runDir := filepath.Join(w.path("OUTPUT_DIR", "runs"), "train_cpu_fsdp_mistral-proxy_docs")

	// FORCE=1, and the rerun fails.
	ex.exit, ex.steps = 9, 1
	in := newTrainInputs(t, w, ex)
	in.Config, err = in.Config.with("test", map[string]string{"FORCE": "1"})
	require.NoError(t, err)
	forced, err := w.trainTask(in)
	require.NoError(t, err)
	require.Error(t, (&dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}).Run(context.Background(), forced))
	kept, err := os.ReadFile(logPath)
	require.NoError(t, err, "the good run's log is still where its result points")
	assert.Equal(t, string(good), string(kept))
	assert.FileExists(t, failedLogOf(logPath))
	assert.FileExists(t, filepath.Join(runDir, "failure.json"))

	// A successful rerun clears the failure's leftovers.
	ex.exit, ex.steps = 0, 3
	forced2, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, (&dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}).Run(context.Background(), forced2))
	assert.NoFileExists(t, failedLogOf(logPath))
	assert.NoFileExists(t, filepath.Join(runDir, "failure.json"))
	assert.NoFileExists(t, logPath+".prev")
}
