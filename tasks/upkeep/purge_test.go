package upkeep

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// markerFile is the marker's name as docs/cache.md gives it.
const markerFile = ".rival-dir"

// purgeOutput purges the OUTPUT_DIR value (relative to root, or
// absolute) of the workspace root as package tasks does, with the cache
// beside it, and returns what purge said.
func purgeOutput(t *testing.T, root, value string) (string, error) {
	t.Helper()
	path := value
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	var log bytes.Buffer
	err := Purge(&log, root, filepath.Join(t.TempDir(), "cache"), []Folder{{Key: "OUTPUT_DIR", Value: value, Path: path}})
	return log.String(), err
}

// A marker is trusted only when it is a regular file Rival wrote naming
// the folder it is in and this workspace; purge never follows a symlink,
// never removes the home folder or a folder holding a .git, and lists what
// it removes.
func TestPurgeRefusesPlantedMarkers(t *testing.T) {
	type setup func(t *testing.T, root, other string) (outputDir, keep string)
	// validMarker makes a folder Rival marks, as a source to copy or link.
	validMarker := func(t *testing.T, root, dir string) string {
		MakeOwnDir(dir, "OUTPUT_DIR", root)
		return filepath.Join(dir, markerFile)
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
			require.NoError(t, os.WriteFile(filepath.Join(home, markerFile), []byte(strings.ReplaceAll(string(data), home+"-x", home)), 0o644))
			return home, keep
		}, "home folder"},
		{"a marker that is a symlink to a real one", func(t *testing.T, root, other string) (string, string) {
			src := validMarker(t, root, filepath.Join(other, "real-out"))
			shared := filepath.Join(other, "shared")
			keep := keepFile(t, shared)
			require.NoError(t, os.Symlink(src, filepath.Join(shared, markerFile)))
			return shared, keep
		}, "not a regular file"},
		{"a marker copied from another output folder", func(t *testing.T, root, other string) (string, string) {
			src := validMarker(t, root, filepath.Join(other, "real-out"))
			data, err := os.ReadFile(src)
			require.NoError(t, err)
			dst := filepath.Join(other, "notes")
			keep := keepFile(t, dst)
			require.NoError(t, os.WriteFile(filepath.Join(dst, markerFile), data, 0o644))
			return dst, keep
		}, "written for another folder"},
		{"an older Rival's marker, or anyone's text", func(t *testing.T, root, other string) (string, string) {
			dst := filepath.Join(other, "notes")
			keep := keepFile(t, dst)
			require.NoError(t, os.WriteFile(filepath.Join(dst, markerFile), []byte("created by Rival as OUTPUT_DIR; purge may remove this directory\n"), 0o644))
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
			outDir, keep := tc.setup(t, root, other)
			_, err := purgeOutput(t, root, outDir)
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
	out := filepath.Join(root, "output")
	MakeOwnDir(out, "OUTPUT_DIR", root)
	require.NoError(t, os.MkdirAll(filepath.Join(out, "runs", "a"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "report.md"), []byte("12345"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "runs", "a", "log.txt"), []byte("1234567"), 0o644))
	log, err := purgeOutput(t, root, "output")
	require.NoError(t, err)
	assert.NoDirExists(t, out)
	assert.Contains(t, log, "purge: removing OUTPUT_DIR")
	assert.Contains(t, log, "report.md, runs/")
	assert.Contains(t, log, "2 files in 2 folders, 12 B", "what the user kept there, not Rival's marker")
}
