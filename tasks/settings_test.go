package tasks

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's settings list from settingSpecs")

// README's list of settings is the table's: rewrite it with -update-readme.
func TestReadmeSettings(t *testing.T) {
	path := filepath.Join("..", "README.md")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	re := regexp.MustCompile(`(?s)<!-- settings:begin -->\n.*?<!-- settings:end -->`)
	require.True(t, re.Match(data), "README.md has no <!-- settings:begin --> ... <!-- settings:end --> section")
	if *updateReadme {
		out := re.ReplaceAllFunc(data, func([]byte) []byte {
			return []byte("<!-- settings:begin -->\n" + settingsMarkdown() + "<!-- settings:end -->")
		})
		require.NoError(t, os.WriteFile(path, out, 0o644))
		return
	}
	block := strings.TrimPrefix(string(re.Find(data)), "<!-- settings:begin -->\n")
	block = strings.TrimSuffix(block, "<!-- settings:end -->")
	assert.Equal(t, settingsMarkdown(), block, "README.md's settings list differs from tasks/settings.go: go test ./tasks -run TestReadmeSettings -update-readme")
}

// Every setting the product reads has a row, with a doc line; no row is unused.
func TestSettingsTableIsWhole(t *testing.T) {
	src, err := os.ReadFile("settings.go")
	require.NoError(t, err)
	read := map[string]bool{}
	for _, m := range regexp.MustCompile(`s\.(?:raw|value)\("([A-Z_]+)"\)`).FindAllSubmatch(src, -1) {
		read[string(m[1])] = true
	}
	rows := map[string]bool{}
	for _, sp := range settingSpecs {
		assert.False(t, rows[sp.name], "%s listed twice", sp.name)
		rows[sp.name] = true
		assert.NotEmpty(t, sp.doc, sp.name)
		assert.True(t, read[sp.name], "%s has a row but no accessor reads it", sp.name)
	}
	for name := range read {
		assert.True(t, rows[name], "%s is read but has no row in settingSpecs", name)
	}
}

func TestSettingsValues(t *testing.T) {
	unset := environment{lookup: func(string) (string, bool) { return "", false }}
	tests := []struct {
		name   string
		values map[string]string
		check  func(t *testing.T, s environment)
	}{
		{"defaults", nil, func(t *testing.T, s environment) {
			assert.Equal(t, 8, s.gpUsPerNode())
			assert.Equal(t, "50GiB", s.cacheMax())
			assert.Equal(t, "30d", s.cacheMaxAge())
			assert.Equal(t, 2*time.Minute, s.stopGrace())
			assert.False(t, s.container())
			assert.False(t, s.noInstall())
			assert.False(t, s.extractVerbose())
			assert.Empty(t, s.imageBase())
			assert.Empty(t, s.configPath())
		}},
		{"given", map[string]string{"GPUS_PER_NODE": "4", "RIVAL_CACHE_MAX": "1GiB", "RIVAL_CACHE_MAX_AGE": "2d",
			"RIVAL_STOP_GRACE": "5s", "CONTAINER": "1", "RIVAL_NO_INSTALL": "1", "EXTRACT_VERBOSE": "yes",
			"IMAGE_BASE": "debian:12", "SLURM_IMAGE": "/s/r.sqsh", "PLATFORM": "amd", "EOD": "2", "RIVAL_CONFIG": "/c.env"},
			func(t *testing.T, s environment) {
				assert.Equal(t, 4, s.gpUsPerNode())
				assert.Equal(t, "1GiB", s.cacheMax())
				assert.Equal(t, "2d", s.cacheMaxAge())
				assert.Equal(t, 5*time.Second, s.stopGrace())
				assert.True(t, s.container())
				assert.True(t, s.noInstall())
				assert.True(t, s.extractVerbose())
				assert.Equal(t, "debian:12", s.imageBase())
				assert.Equal(t, "/s/r.sqsh", s.slurmImage())
				assert.Equal(t, "amd", s.platform())
				assert.Equal(t, "2", s.eod())
				assert.Equal(t, "/c.env", s.configPath())
			}},
		{"as read before the table", map[string]string{"GPUS_PER_NODE": "x", "RIVAL_STOP_GRACE": "-1s", "CONTAINER": "yes", "RIVAL_CACHE_MAX": ""},
			func(t *testing.T, s environment) {
				assert.Equal(t, 8, s.gpUsPerNode(), "an unreadable count keeps the default")
				assert.Equal(t, 2*time.Minute, s.stopGrace(), "a negative grace keeps the default")
				assert.False(t, s.container(), "only 1 turns containers on")
				assert.Equal(t, "50GiB", s.cacheMax(), "empty is unset")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, unset.with(tt.values)) })
	}
}

// The door users use: a workspace opened in the product reads the process environment, for its
// settings and for config.env's overrides.
func TestWorkspaceReadsSettingsFromTheEnvironment(t *testing.T) {
	t.Setenv("GPUS_PER_NODE", "2")
	t.Setenv("SL", "1024")
	w, _ := newWorkspace(t, "")
	assert.Equal(t, 2, w.env.gpUsPerNode())
	assert.Equal(t, 1024, w.config.int("SL"))
}

// Settings given to OpenWorkspaceWith reach config.env's overrides too, without the environment.
func TestOpenWorkspaceWithInjectedSettings(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "config.env"), nil, 0o644))
	other := filepath.Join(t.TempDir(), "other.env")
	require.NoError(t, os.WriteFile(other, []byte("SL=512\n"), 0o644))
	t.Setenv("RIVAL_CACHE", filepath.Join(t.TempDir(), "cache"))
	s := processEnvironment().with(map[string]string{"RIVAL_CONFIG": other, "TRAIN_ITERS": "700", "SLURM_IMAGE": "r@sha256:ab"})
	w, err := openWorkspaceWith(root, s, false, os.Stderr)
	require.NoError(t, err)
	assert.Equal(t, 512, w.config.int("SL"), "RIVAL_CONFIG from the injected settings")
	assert.Equal(t, 700, w.config.int("TRAIN_ITERS"), "config override from the injected settings")
	assert.Equal(t, "r@sha256:ab", w.env.slurmImage())
}

// setting gives one non-fingerprinted setting to w, as tests do instead of setting the environment.
func setting(w *Workspace, name, value string) {
	w.env = w.env.with(map[string]string{name: value})
}
