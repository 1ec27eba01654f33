package tasks

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two checkouts of one workspace on one cache share their training runs:
// the launch enters the key with the workspace's own location written as
// a placeholder, so the second checkout trains nothing, and gets its own
// result file.
func TestTwoCheckoutsShareTrainingRuns(t *testing.T) {
	withCPUFlags(t, "no-bf16.txt")
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("RIVAL_CONFIG", "")
	var tasks []bool
	var results []string
	for i := 0; i < 2; i++ {
		root := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), nil, 0o644))
		var log bytes.Buffer
		w, err := openWorkspace(root, true, &log)
		require.NoError(t, err)
		ex := &scriptedExecutor{steps: 6}
		_, task := trainScripted(t, w, ex)
		tasks = append(tasks, task.Cached())
		results = append(results, task.Outputs[0].Path)
	}
	assert.Equal(t, []bool{false, true}, tasks, "the second checkout's training is a cache hit")
	assert.NotEqual(t, results[0], results[1])
	for _, r := range results {
		assert.FileExists(t, r, "each checkout gets its own result file")
	}
}
