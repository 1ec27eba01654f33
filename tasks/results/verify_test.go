package results

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// The training log verify:result looks for beside a result is a file Rival
// did not necessarily write: a hostile one is passed over (the log is "not
// found") at once, never waited on or read whole.
func TestFindLogRefusesHostileFiles(t *testing.T) {
	for _, kind := range safefiletest.Kinds {
		t.Run("log beside a result/"+kind, func(t *testing.T) {
			c := openCache(t)
			dir := t.TempDir()
			res := filepath.Join(dir, "train_cpu_fsdp_llama.json")
			safefiletest.Plant(t, filepath.Join(dir, "logs", "train_cpu_fsdp_llama.log"), kind, safefile.LimitResult)
			r := &result.Result{Log: result.LogInfo{Digest: "blake3:00"}}
			safefiletest.Within(t, func() {
				assert.Nil(t, findLog(context.Background(), c, res, r), "a hostile log is not found, not read")
			})
		})
	}
	// A regular log beside the result is still found.
	c := openCache(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "logs", "r.log"), []byte("step 1\n"), 0o644))
	found := findLog(context.Background(), c, filepath.Join(dir, "r.json"), &result.Result{Log: result.LogInfo{Digest: "blake3:00"}})
	require.NotNil(t, found)
	assert.Equal(t, "step 1\n", string(found.Data))
}

func openCache(t *testing.T) *cache.Cache {
	t.Helper()
	c, err := cache.Open(t.TempDir())
	require.NoError(t, err)
	return c
}
