package titan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
)

// The TorchTitan each image of each stack runs is in the one pinned-versions table (core.Pins, which
// docs/frameworks.md prints), and the titan launches use exactly that pin.
func TestPinnedComesFromSpecPins(t *testing.T) {
	for _, p := range core.Pins {
		t.Run(p.Stack+"/"+p.Platform, func(t *testing.T) {
			require.NotEmpty(t, p.TorchTitanCommit, "core.Pins %s %s names no TorchTitan", p.Stack, p.Platform)
			got, err := PinnedFor(p.Platform, p.Stack)
			require.NoError(t, err)
			assert.Equal(t, p.TorchTitanCommit, got.Commit)
			assert.Equal(t, p.TorchTitanWhere, got.Where)
			if p.TorchTitan != "" {
				assert.Equal(t, p.TorchTitan, got.Version)
			} else {
				assert.Equal(t, p.TorchTitanCommit[:8], got.Version)
			}
			assert.Equal(t, p.Primus != "", got.Primus)
			assert.Equal(t, p.Primus, got.PrimusTag)
			assert.Equal(t, p.PrimusCommit, got.PrimusCommit)
			require.Contains(t, jobConfigs, got.Version, "a job config is written for every pinned TorchTitan")
			assert.NotEmpty(t, got.Loss)
		})
	}
	assert.Contains(t, core.PinsMarkdown(), "TorchTitan v0.2.0 (`29624e37`)")
	assert.Contains(t, core.PinsMarkdown(), "TorchTitan v0.2.2 (`73a0e697`)")
	_, err := PinnedFor(hw.PlatformCPU, "")
	assert.ErrorContains(t, err, "no TorchTitan is pinned")
	_, err = PinnedFor(hw.PlatformNVIDIA, "next")
	assert.ErrorContains(t, err, "STACK")
}

// Both stacks' TorchTitans train on the same JobConfig options apart from where the seed lives, and
// each names how it normalises the loss in its version string, which every result records.
func TestStacksDifferOnlyWhereTorchTitanMoved(t *testing.T) {
	flat := func(secs []Section) map[string]string {
		m := map[string]string{}
		for _, s := range secs {
			for _, kv := range s.KVs {
				m[s.Name+"."+kv.Key] = kv.Value
			}
		}
		return m
	}
	for _, platform := range []string{hw.PlatformNVIDIA, hw.PlatformAMD} {
		t.Run(platform, func(t *testing.T) {
			prev, err := Sections(stackPlan(t, core.StackPrevious, platform, "llama"), platform)
			require.NoError(t, err)
			cur, err := Sections(stackPlan(t, core.StackCurrent, platform, "llama"), platform)
			require.NoError(t, err)
			want := flat(prev)
			for from, to := range jobConfigs["v0.2.2"].moved {
				require.Contains(t, want, from)
				want[to] = want[from]
				delete(want, from)
			}
			assert.Equal(t, want, flat(cur))
			assert.Equal(t, "42", flat(cur)["debug.seed"])

			for stack, loss := range map[string]string{core.StackPrevious: LossPerMicroBatch, core.StackCurrent: LossPerToken} {
				v, err := Version(stackPlan(t, stack, platform, "llama"))
				require.NoError(t, err)
				assert.Contains(t, v, "; loss: "+loss, stack)
			}
		})
	}
}

// apply puts a moved option at the end of its new section, adding the section after the old one.
func TestJobConfigMoves(t *testing.T) {
	jc := jobConfig{moved: map[string]string{"training.seed": "debug.seed", "training.deterministic": "debug.deterministic",
		"job.x": "model.x"}}
	got := jc.apply([]Section{{"job", []KV{{"x", "1"}, {"y", "2"}}}, {"model", []KV{{"name", "n"}}},
		{"training", []KV{{"seed", "42"}, {"steps", "5"}, {"deterministic", "false"}}}, {"compile", []KV{{"enable", "false"}}}})
	assert.Equal(t, []Section{{"job", []KV{{"y", "2"}}}, {"model", []KV{{"x", "1"}, {"name", "n"}}},
		{"training", []KV{{"steps", "5"}}}, {"debug", []KV{{"seed", "42"}, {"deterministic", "false"}}},
		{"compile", []KV{{"enable", "false"}}}}, got)
	same := []Section{{"training", []KV{{"seed", "1"}}}}
	assert.Equal(t, same, jobConfig{}.apply(same), "a version that moves nothing")
}
