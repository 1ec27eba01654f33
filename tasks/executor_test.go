package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The executor kind is part of every training key: its spellings must not
// change, or every cached run trains again.
func TestExecutorKindsKeepTheirSpellings(t *testing.T) {
	assert.Equal(t, ExecutorKind("host"), HostExecutor{}.Kind())
	assert.Equal(t, ExecutorKind("docker"), (&DockerExecutor{}).Kind())
	assert.Equal(t, ExecutorKind("slurm"), (&SlurmExecutor{}).Kind())

	w, _ := newWorkspace(t, "")
	task, err := w.TrainTask(trainInputs(t, w, HostExecutor{}))
	require.NoError(t, err)
	assert.Equal(t, "host", task.Tools["executor"])
}
