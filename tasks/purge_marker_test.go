package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A marker is trusted only when it is a regular file Rival wrote naming
// the folder it is in and this workspace; purge never follows a symlink,
// never removes the home folder or a folder holding a .git, and lists what
// it removes.
func TestPurgeRefusesPlantedMarkers(t *testing.T) {
	type setup func(t *testing.T, root, other string) (outputDir, keep string)
	// validMarker makes a folder Rival marks, as a source to copy or link.
	validMarker := func(t *testing.T, root, dir string) string {
		t.Setenv("OUTPUT_DIR", dir)
		w, _ := newWorkspaceAt(t, root)
		w.markOwnDirs()
		return filepath.Join(dir, DirMarker)
	}
	keepFile := func(t *testing.T, dir string) string {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		p := filepath.Join(dir, "keep.txt")
		require.NoError(t, os.WriteFile(p, []byte("mine"), 0o644))
		return p
	}
	cases := []struct {
		name  string
		setup setup
		want  string
	}{
		{"a marker planted in $HOME", func(t *testing.T, root, other string) (string, string) {
			home := filepath.Join(other, "home")
			keep := keepFile(t, home)
			t.Setenv("HOME", home)
			// Even a marker whose content names $HOME and this workspace.
			src := validMarker(t, root, home+"-x")
			data, err := os.ReadFile(src)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(home, DirMarker), []byte(strings.ReplaceAll(string(data), home+"-x", home)), 0o644))
			return home, keep
		}, "home folder"},
		{"a marker that is a symlink to a real one", func(t *testing.T, root, other string) (string, string) {
			src := validMarker(t, root, filepath.Join(other, "real-out"))
			shared := filepath.Join(other, "shared")
			keep := keepFile(t, shared)
			require.NoError(t, os.Symlink(src, filepath.Join(shared, DirMarker)))
			return shared, keep
		}, "not a regular file"},
		{"a marker copied from another output folder", func(t *testing.T, root, other string) (string, string) {
			src := validMarker(t, root, filepath.Join(other, "real-out"))
			data, err := os.ReadFile(src)
			require.NoError(t, err)
			dst := filepath.Join(other, "notes")
			keep := keepFile(t, dst)
			require.NoError(t, os.WriteFile(filepath.Join(dst, DirMarker), data, 0o644))
			return dst, keep
		}, "written for another folder"},
		{"an older Rival's marker, or anyone's text", func(t *testing.T, root, other string) (string, string) {
			dst := filepath.Join(other, "notes")
			keep := keepFile(t, dst)
			require.NoError(t, os.WriteFile(filepath.Join(dst, DirMarker), []byte("created by Rival as OUTPUT_DIR; purge may remove this directory\n"), 0o644))
			return dst, keep
		}, "Rival did not write"},
		{"a git clone inside a marked output folder", func(t *testing.T, root, other string) (string, string) {
			out := filepath.Join(other, "out")
			validMarker(t, root, out)
			clone := filepath.Join(out, "runs", "mytool")
			require.NoError(t, os.MkdirAll(filepath.Join(clone, ".git"), 0o755))
			return out, keepFile(t, clone)
		}, "git repository"},
		{"OUTPUT_DIR reached through a symlink", func(t *testing.T, root, other string) (string, string) {
			out := filepath.Join(other, "out")
			validMarker(t, root, out)
			keep := keepFile(t, out)
			link := filepath.Join(other, "link")
			require.NoError(t, os.Symlink(out, link))
			return link, keep
		}, "never follows symlinks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, other := t.TempDir(), t.TempDir()
			t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
			t.Setenv("RIVAL_CONFIG", "")
			outDir, keep := tc.setup(t, root, other)
			t.Setenv("OUTPUT_DIR", outDir)
			w, _ := newWorkspaceAt(t, root)
			err := w.Purge(false)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "refusing")
			if tc.want != "" {
				assert.Contains(t, err.Error(), tc.want)
			}
			assert.FileExists(t, keep)
		})
	}
}

// purge says what it removes before removing it.
func TestPurgeListsWhatItRemoves(t *testing.T) {
	root := t.TempDir()
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	t.Setenv("RIVAL_CONFIG", "")
	t.Setenv("OUTPUT_DIR", "output")
	w, log := newWorkspaceAt(t, root)
	w.markOwnDirs()
	require.NoError(t, os.MkdirAll(w.path("OUTPUT_DIR", "runs", "a"), 0o755))
	require.NoError(t, os.WriteFile(w.path("OUTPUT_DIR", "report.md"), []byte("12345"), 0o644))
	require.NoError(t, os.WriteFile(w.path("OUTPUT_DIR", "runs", "a", "log.txt"), []byte("1234567"), 0o644))
	require.NoError(t, w.Purge(false))
	assert.NoDirExists(t, w.path("OUTPUT_DIR"))
	assert.Contains(t, log.String(), "purge: removing OUTPUT_DIR")
	assert.Contains(t, log.String(), "report.md, runs/")
	assert.Contains(t, log.String(), "3 files in 2 folders")
}
