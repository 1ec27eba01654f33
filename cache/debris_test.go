package cache

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Temporary files a killed process left in the cache are removed by
// cache:trim once they are older than any live writer's; fresh ones stay.
func TestTrimRemovesKillDebris(t *testing.T) {
	c := newCache(t)
	old := time.Now().Add(-2 * time.Hour)
	stale := []string{
		filepath.Join(c.Dir, "stat", "ab", ".abcdef.tmp-123"),
		filepath.Join(c.Dir, "actions", "cd", ".cdef.json.tmp-9"),
		filepath.Join(c.Dir, "tasks", "ef", ".ef.json.tmp-1"),
		filepath.Join(c.Dir, "blobs", ".put-77"),
	}
	fresh := filepath.Join(c.Dir, "stat", "ab", ".abcdef.tmp-456")
	for _, p := range append(stale, fresh) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("torn"), 0o644))
	}
	for _, p := range stale {
		require.NoError(t, os.Chtimes(p, old, old))
	}
	rep, err := c.Trim(context.Background(), 0, 0)
	require.NoError(t, err)
	for _, p := range stale {
		assert.NoFileExists(t, p)
	}
	assert.FileExists(t, fresh, "a temporary file a live process may be writing stays")
	assert.Equal(t, 3, rep.TempRemoved, "the .put- file counts among the orphan blobs")
}
