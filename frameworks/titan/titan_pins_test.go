package titan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
)

// The TorchTitan each image runs is in the one pinned-versions table (core.Pins, which
// docs/frameworks.md prints), and the titan launches use exactly that pin.
func TestPinnedComesFromSpecPins(t *testing.T) {
	for _, p := range core.Pins {
		t.Run(p.Platform, func(t *testing.T) {
			require.NotEmpty(t, p.TorchTitanCommit, "core.Pins %s names no TorchTitan", p.Platform)
			got, ok := Pinned[p.Platform]
			require.True(t, ok)
			assert.Equal(t, p.TorchTitanCommit, got.Commit)
			assert.Equal(t, p.TorchTitanWhere, got.Where)
			if p.TorchTitan != "" {
				assert.Equal(t, p.TorchTitan, got.Version)
			}
		})
	}
	assert.Contains(t, core.PinsMarkdown(), "TorchTitan v0.2.0 (`29624e37`)")
}
