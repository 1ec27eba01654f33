package tasks

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// The workspace's own readers of files it did not write: the training
// log verify:result looks for beside a result, and the kernel's CPU flags
// the CPU precision is chosen from. A hostile file in either place is
// passed over (the log is "not found", the CPU has no bf16 flag) at once,
// never waited on or read whole.
func TestWorkspaceReadersRefuseHostileFiles(t *testing.T) {
	for _, kind := range safefiletest.Kinds {
		t.Run("log beside a result/"+kind, func(t *testing.T) {
			w, _ := newWorkspace(t, "")
			dir := t.TempDir()
			res := filepath.Join(dir, "train_cpu_fsdp_llama.json")
			safefiletest.Plant(t, filepath.Join(dir, "logs", "train_cpu_fsdp_llama.log"), kind, safefile.LimitResult)
			r := &result.Result{Log: result.LogInfo{Digest: "blake3:00"}}
			safefiletest.Within(t, func() {
				assert.Nil(t, w.findLog(context.Background(), res, r), "a hostile log is not found, not read")
			})
		})
		t.Run("cpu flags/"+kind, func(t *testing.T) {
			old := cpuFlagsPath
			cpuFlagsPath = filepath.Join(t.TempDir(), "cpuinfo")
			t.Cleanup(func() { cpuFlagsPath = old })
			safefiletest.Plant(t, cpuFlagsPath, kind, safefile.LimitSysfs)
			w, _ := newWorkspace(t, "PRECISION=bf16\n")
			safefiletest.Within(t, func() {
				_, p, err := cpuTrainConfig(w.Config)
				require.NoError(t, err)
				assert.Equal(t, "fp32", p.Precision)
			})
		})
	}
	// A regular log beside the result is still found.
	w, _ := newWorkspace(t, "")
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "r.log"), []byte("step 1\n"), 0o644))
	found := w.findLog(context.Background(), filepath.Join(dir, "r.json"), &result.Result{Log: result.LogInfo{Digest: "blake3:00"}})
	require.NotNil(t, found)
	assert.Equal(t, "step 1\n", string(found.Data))
}
