package compare

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/result"
)

// The fairness table compares what the frameworks built (their effective configurations), field by
// field, not only what was requested.
func TestFairnessComparesEffectiveConfigurations(t *testing.T) {
	mk := func(fw string, eps float64) *Group {
		r := &result.Result{Framework: result.Framework{Name: fw}}
		r.EffectiveConfig = &effective.Config{Hidden: 3584, NormEps: eps, NoDecay: []string{"bias", "norm"}}
		return &Group{Config: configOf(r)}
	}
	s := &ModelSection{Groups: []*Group{mk("mega", 1e-6), mk("prim", 1e-5)}}
	s.fairness()
	var rows []string
	for _, r := range s.Fairness {
		rows = append(rows, r.Field)
		if r.Field == "effective.norm_eps" {
			assert.Equal(t, []string{"1e-06", "1e-05"}, r.Values)
		}
	}
	assert.Contains(t, rows, "effective.norm_eps")
	assert.NotContains(t, rows, "effective.hidden")
	assert.Contains(t, s.Identical, "effective.hidden")
	assert.Contains(t, s.Identical, "effective.no_decay")
	assert.NotContains(t, s.Unrecorded, "effective configuration")

	// Without any recorded effective configuration the section says so in one entry.
	none := &ModelSection{Groups: []*Group{{Config: configOf(&result.Result{Framework: result.Framework{Name: "mega"}})}}}
	none.fairness()
	require.Contains(t, none.Unrecorded, "effective configuration")
	for _, f := range none.Unrecorded {
		assert.NotContains(t, f, "effective.")
	}
}
