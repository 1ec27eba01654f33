package tasks

import (
	"context"
	"os"
	"testing"

	"github.com/rivalbench/rival/dag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trainOnce runs a scripted training and returns its result file.
func trainOnce(t *testing.T, w *Workspace) string {
	t.Helper()
	task, err := w.trainTask(newTrainInputs(t, w, &scriptedExecutor{steps: 6}))
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	return task.Outputs[0].Path
}

func TestCompareIsCachedWhenNoResultChanged(t *testing.T) {
	w, _ := newWorkspace(t, "")
	trainOnce(t, w)
	ct, err := w.compareTask(nil)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), ct))
	for _, o := range ct.Outputs {
		assert.FileExists(t, o.Path)
	}
	report, err := os.ReadFile(ct.Outputs[0].Path)
	require.NoError(t, err)
	assert.Contains(t, string(report), "mistral-proxy")

	r2 := &dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}
	ct2, err := w.compareTask(nil)
	require.NoError(t, err)
	require.NoError(t, r2.Run(context.Background(), ct2))
	assert.Equal(t, "tasks: 0 run, 1 cached", r2.Summary())
}

func TestCompareWithNoResultsFails(t *testing.T) {
	w, _ := newWorkspace(t, "")
	ct, err := w.compareTask(nil)
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), ct)
	require.Error(t, err)
}
