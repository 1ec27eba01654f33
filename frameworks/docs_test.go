package frameworks

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
)

// docs/frameworks.md shows the pinned-versions table of the code, not a copy that can drift.
// `go test ./frameworks -run TestDocsPinnedVersions -update` writes core.PinsMarkdown() between the markers.
func TestDocsPinnedVersions(t *testing.T) {
	b, err := os.ReadFile("../docs/frameworks.md")
	require.NoError(t, err)
	s := string(b)
	start, end := strings.Index(s, "<!-- pins:begin -->\n"), strings.Index(s, "<!-- pins:end -->")
	require.True(t, start >= 0 && end > start, "docs/frameworks.md has the pins markers")
	if *update {
		s = s[:start+len("<!-- pins:begin -->\n")] + core.PinsMarkdown() + s[end:]
		require.NoError(t, os.WriteFile("../docs/frameworks.md", []byte(s), 0o644))
	}
	assert.Equal(t, core.PinsMarkdown(), s[start+len("<!-- pins:begin -->\n"):end],
		"docs/frameworks.md's pinned-versions table differs from core.Pins: paste core.PinsMarkdown()")
}

// docs/frameworks.md's effective-configuration table names every field of effective.Config.
func TestDocsEffectiveConfigurationFields(t *testing.T) {
	b, err := os.ReadFile("../docs/frameworks.md")
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, "## The effective configuration")
	require.GreaterOrEqual(t, i, 0)
	for _, f := range effective.Fields() {
		assert.Contains(t, s[i:], "`"+f+"`", "docs/frameworks.md's effective-configuration table lacks %s", f)
	}
}
