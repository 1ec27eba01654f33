package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The executor kind is part of every training key: its spellings must not
// change, or every cached run trains again.
func TestExecutorKindsKeepTheirSpellings(t *testing.T) {
	assert.Equal(t, executorKind("host"), hostExecutor{}.Kind())
	assert.Equal(t, executorKind("docker"), (&dockerExecutor{}).Kind())
	assert.Equal(t, executorKind("slurm"), (&SlurmExecutor{}).Kind())

	w, _ := newWorkspace(t, "")
	task, err := w.trainTask(trainInputs(t, w, hostExecutor{}))
	require.NoError(t, err)
	assert.Equal(t, "host", task.Tools["executor"])
}
