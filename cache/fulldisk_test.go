package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/internal/mounttest"
)

// TestFullDisk writes into a 256 KiB tmpfs: the write fails with a clear error and nothing
// half-written is visible.
//
// The tmpfs is mounted in a private mount namespace of a child test process (see package
// mounttest), so it is seen by that child alone and disappears with it;
// RIVAL_REQUIRE_FULLDISK=1 (CI) makes a skip a failure.
func TestFullDisk(t *testing.T) {
	mounttest.TmpfsNeed("256 KiB").Run(t, func(t *testing.T, dir string) {
		mounttest.Tmpfs(t, dir, "256k")
		c, err := Open(dir)
		require.NoError(t, err)
		_, err = c.PutBytes(bytes.Repeat([]byte{1}, 1<<20), false)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no space left on device")
		src := filepath.Join(t.TempDir(), "src")
		require.NoError(t, os.WriteFile(src, bytes.Repeat([]byte{2}, 1<<20), 0o644))
		_, _, err = c.PutFile(src, false)
		require.Error(t, err)
		blobs, err := c.blobs()
		require.NoError(t, err)
		assert.Empty(t, blobs, "no partial blob is left")
	})
}
