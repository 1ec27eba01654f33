package titan

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/heldouttest"
	"github.com/rivalbench/rival/hw"
)

// A titan launch that evaluates enables TorchTitan's validator ([validation]: freq in steps, steps
// of MBS per rank covering the held-out set once) with Rival's validator builder, and its preflight
// builds TorchTitan's own Validator per data-parallel rank through the train spec, reads two
// evaluations from its loader as validate() does, and prints the SHA-256 of the sequences: Rival's
// held-out windows in order, on nvd and amd (through Primus's start-up path) of both stacks
// (TorchTitan v0.2.2 and v0.2.0; Primus v26.5.1 with v0.2.2, v26.2 with 5fb7cc2e), with DP 8, and TP 2 × DP 4 at MBS 2.
// A validator whose ranks read each other's share prints another digest; before the set is written
// it prints none; with pipeline parallelism the launch does not evaluate and says so.
func TestPreflightDigestsTheValidatorsHeldOut(t *testing.T) {
	data := t.TempDir()
	corpus := map[string]string{
		hw.PlatformNVIDIA: encodeSample(t, data, "mistral", "mistral-7b-v0.1"),
		hw.PlatformAMD:    encodeSample(t, data, "qwen", "qwen-2.5"),
	}
	const n, sl = 8, 128
	wants := map[string]string{}
	for pf, c := range corpus {
		dir := filepath.Join(data, "held-"+pf)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		wants[pf] = heldouttest.Write(t, c, filepath.Join(dir, core.HeldOutName(n, sl)), n, sl)
	}
	layout := func(mbs, tp, dp int) func(*core.Plan) { // TP × DP = the plan's 8 GPUs
		return func(p *core.Plan) {
			f := &p.Fair
			f.SL, f.WarmupSteps, f.TrainIters = sl, 2, 20
			f.MBS, f.GA, f.TP, f.PP, f.DP = mbs, 2, tp, 1, dp
			f.GBS = mbs * 2 * dp
			f.EvalIntervalSamples, f.EvalSamples = 4*f.GBS, n
		}
	}
	type want int
	const (
		equal want = iota
		differs
		none
	)
	cases := []struct {
		name, platform string
		edit           func(*core.Plan)
		files          func(t *testing.T, files map[string][]byte)
		want           want
	}{
		{"TP2-DP4-MBS2", hw.PlatformNVIDIA, layout(2, 2, 4), nil, equal},
		{"DP8", hw.PlatformAMD, layout(1, 1, 8), nil, equal},
		{"ranks swapped", hw.PlatformNVIDIA, layout(1, 1, 8),
			replaceIn(ScriptName, "range(self.dp_rank * self.mbs,", "range((self.dp_world - 1 - self.dp_rank) * self.mbs,"), differs},
		{"no held-out set", hw.PlatformNVIDIA, layout(1, 1, 8), nil, none},
	}
	var cells []readbackCell
	var kinds []want
	for _, stack := range core.StackNames {
		for _, c := range cases {
			p := readbackPlan(t, stack, c.platform, "llama-proxy", len(cells))
			c.edit(&p)
			p.DataPrefix = path.Join(dataMount, "absent") // no training digest: the held-out set alone
			p.DataCacheDir = path.Join(dataMount, "held-"+c.platform)
			if c.want == none {
				p.DataCacheDir = path.Join(dataMount, "absent")
			}
			l, err := Build(p)
			require.NoError(t, err)
			require.Equal(t, Evaluation, l.Evaluation)
			assert.Contains(t, string(l.Files[ConfigName]), `"held_out"`)
			kinds = append(kinds, c.want)
			cells = append(cells, readbackCell{name: stack + "/" + c.platform + "/" + c.name, plan: p, l: l, edit: c.files})
		}
	}
	out, codes := runReadbacks(t, cells, container.Mount{Source: data, Target: dataMount, ReadOnly: true})
	for i, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			lines := out[c.name]
			require.Equal(t, 0, codes[c.name], strings.Join(lines, "\n"))
			d := heldouttest.Line(t, lines)
			found := d != nil
			var got core.SampleDigest
			if found {
				got = *d
			}
			switch kinds[i] {
			case none:
				assert.False(t, found, strings.Join(lines, "\n"))
			case equal:
				require.True(t, found, strings.Join(lines, "\n"))
				assert.Equal(t, core.SampleDigest{Samples: n, SHA256: wants[c.plan.Platform]}, got)
			case differs:
				require.True(t, found, strings.Join(lines, "\n"))
				assert.Equal(t, int64(n), got.Samples)
				assert.NotEqual(t, wants[c.plan.Platform], got.SHA256)
			}
		})
	}

	p := readbackPlan(t, core.StackCurrent, hw.PlatformNVIDIA, "llama-proxy", 0)
	layout(1, 2, 2)(&p)
	p.Fair.PP = 2
	l, err := Build(p)
	require.NoError(t, err)
	assert.Empty(t, l.Evaluation, "pipeline parallel: TorchTitan's validator runs its own schedule")
	assert.Equal(t, NoEvaluationPP, l.NoEvaluation)

	// An interval that is not whole steps is refused, not rounded down.
	p = readbackPlan(t, core.StackCurrent, hw.PlatformNVIDIA, "llama-proxy", 0)
	layout(1, 1, 8)(&p)
	p.Fair.EvalIntervalSamples = p.Fair.GBS + 1
	_, err = Build(p)
	assert.ErrorContains(t, err, "must be a multiple of the global batch 16")
	assert.Contains(t, string(l.Files[TOMLName]), "[validation]\nenable = false\n")
}
