package tasks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The purge target removes only a directory Rival marked as its own: never
// the workspace's .git, a source folder, the parent, nor an unmarked
// output/ left by an older Rival; the default OUTPUT_DIR goes.
func TestPurgeTargetRemovesOnlyMarkedDirs(t *testing.T) {
	bin := rivalBinary(t)
	gitOK := exec.Command("git", "--version").Run() == nil
	newProject := func(t *testing.T) suiteWS {
		ws := newSuiteWS(t, filepath.Join(t.TempDir(), "cache"))
		require.NoError(t, os.MkdirAll(filepath.Join(ws.root, "tasks"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws.root, "tasks", "a.go"), []byte("package tasks\n"), 0o644))
		require.NoError(t, os.MkdirAll(filepath.Join(ws.root, ".git"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(ws.root, ".git", "HEAD"), []byte("x\n"), 0o644))
		return ws
	}
	for _, dir := range []string{".git", "tasks", ".."} {
		t.Run(dir, func(t *testing.T) {
			ws := newProject(t)
			ws.env = []string{"OUTPUT_DIR=" + dir}
			cmd, out := ws.target(t.Context(), bin, "purge")
			err := cmd.Run()
			require.Error(t, err, "purge with OUTPUT_DIR=%s must fail: %s", dir, out)
			assert.Contains(t, out.String(), "refusing")
			assert.FileExists(t, filepath.Join(ws.root, ".git", "HEAD"))
			assert.FileExists(t, filepath.Join(ws.root, "tasks", "a.go"))
		})
	}
	if gitOK {
		t.Run("git-tracked", func(t *testing.T) {
			ws := newProject(t)
			require.NoError(t, os.RemoveAll(filepath.Join(ws.root, ".git")))
			for _, args := range [][]string{{"init", "-q"}, {"add", "tasks"}} {
				c := exec.Command("git", args...)
				c.Dir = ws.root
				require.NoError(t, c.Run())
			}
			// Even a marked directory that holds tracked files stays.
			require.NoError(t, os.WriteFile(filepath.Join(ws.root, "tasks", ".rival-dir"), nil, 0o644))
			ws.env = []string{"OUTPUT_DIR=tasks"}
			cmd, out := ws.target(t.Context(), bin, "purge")
			require.Error(t, cmd.Run(), "%s", out)
			assert.Contains(t, out.String(), "git tracks")
			assert.FileExists(t, filepath.Join(ws.root, "tasks", "a.go"))
		})
	}
	t.Run("default", func(t *testing.T) {
		ws := newProject(t)
		ws.run(t, bin, "purge") // every target creates and marks output/; purge removes it
		assert.NoDirExists(t, filepath.Join(ws.root, "output"))
		assert.FileExists(t, filepath.Join(ws.root, ".git", "HEAD"))
	})
	t.Run("unmarked-legacy-output", func(t *testing.T) {
		ws := newProject(t)
		require.NoError(t, os.MkdirAll(filepath.Join(ws.root, "output", "runs"), 0o755))
		cmd, out := ws.target(t.Context(), bin, "purge")
		require.Error(t, cmd.Run(), "%s", out)
		assert.True(t, strings.Contains(out.String(), "rm -rf"), "says how to remove it by hand: %s", out)
		assert.DirExists(t, filepath.Join(ws.root, "output", "runs"))
	})
}
