package tasks

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// The workspace's own readers of files it did not write: the kernel's CPU
// flags the CPU precision is chosen from (the training log verify:result
// looks for beside a result is package tasks/results' test). A hostile file
// there is passed over (the CPU has no bf16 flag) at once, never waited on
// or read whole.
func TestWorkspaceReadersRefuseHostileFiles(t *testing.T) {
	for _, kind := range safefiletest.Kinds {
		t.Run("cpu flags/"+kind, func(t *testing.T) {
			old := cpuFlagsPath
			cpuFlagsPath = filepath.Join(t.TempDir(), "cpuinfo")
			t.Cleanup(func() { cpuFlagsPath = old })
			safefiletest.Plant(t, cpuFlagsPath, kind, safefile.LimitSysfs)
			w, _ := newWorkspace(t, "PRECISION=bf16\n")
			safefiletest.Within(t, func() {
				_, p, err := cpuTrainConfig(w.config)
				require.NoError(t, err)
				assert.Equal(t, "fp32", p.Precision)
			})
		})
	}
}
