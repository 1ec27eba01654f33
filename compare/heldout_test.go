package compare

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func heldOutGroup(t *testing.T, rep *Report, src string) *HeldOutGroup {
	t.Helper()
	hg := rep.heldOutOf(groupBySource(t, rep, src))
	require.NotNil(t, hg, src)
	return hg
}

// Time to a target held-out loss, against make.py's own interpolation (testdata/crafted, set 27).
func TestHeldOutTimeToTarget(t *testing.T) {
	rep, md := crafted(t, "held-out", DefaultPrices())
	require.Len(t, rep.Models, 1)
	require.NotNil(t, rep.Models[0].HeldOut)
	assert.False(t, rep.HasTarget, "no TARGET_LOSS and no MLPerf target recorded")
	inMD(t, md, true, "No target loss is set")

	rep.SetTarget(3.3, true)
	ho := rep.Models[0].HeldOut
	assert.Len(t, ho.Groups, 3, "the TorchTitan run has no evaluation, so no row")

	mega := heldOutGroup(t, rep, "amd_mega_1.json")
	require.Len(t, mega.Runs, 2)
	assert.Equal(t, 2, mega.Reached)
	for i, name := range []string{"amd_mega_1", "amd_mega_2"} {
		tr := mega.Runs[i]
		assert.True(t, tr.Interpolated)
		assert.InDelta(t, oracle(t, "held-out", name+"_samples"), tr.Samples, 1e-6)
		assert.InDelta(t, oracle(t, "held-out", name+"_samples")*8192, tr.Tokens, 1e-3)
		require.NotNil(t, tr.WallSeconds)
		assert.InDelta(t, oracle(t, "held-out", name+"_wall"), *tr.WallSeconds, 1e-6)
		assert.InDelta(t, oracle(t, "held-out", name+"_train"), *tr.TrainSeconds, 1e-6)
	}
	for _, k := range []struct {
		name string
		s    Summary
	}{{"samples", mega.Samples}, {"wall", mega.WallSeconds}, {"train", mega.TrainSeconds}} {
		assert.InDelta(t, oracle(t, "held-out", "amd_mega_mean_"+k.name), k.s.Mean, 1e-6, k.name)
		assert.InDelta(t, oracle(t, "held-out", "amd_mega_half_"+k.name), k.s.Half, 1e-6, k.name)
	}

	prim := heldOutGroup(t, rep, "amd_prim.json")
	assert.Equal(t, 0, prim.Reached)
	assert.Equal(t, 3.7, prim.Runs[0].Best)

	require.Len(t, ho.Same, 1, "only H100 Megatron and MI300X Megatron agree within 1%")
	assert.InDelta(t, oracle(t, "held-out", "same_max_rel"), ho.Same[0].MaxRel, 1e-12)
	assert.Len(t, ho.Same[0].Samples, 5, "the test-set evaluation is not a periodic one")

	var b bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&b))
	out := b.String()
	inMD(t, out, true, "Target held-out loss 3.3 nats per token")
	inMD(t, out, true, "| 0 of 1 (best of the others 3.7) |")
	inMD(t, out, true, "not reached")
	inMD(t, out, true, "the same held-out loss within 1% at every one of 5 sample counts")
	b.Reset()
	require.NoError(t, rep.WriteHTML(&b))
	assert.Contains(t, b.String(), `aria-label="held-out loss curves"`)
	assert.Contains(t, b.String(), `aria-label="held-out loss difference"`)
	fig, err := rep.Figure()
	require.NoError(t, err)
	titles := ""
	for _, p := range fig.Panels {
		titles += p.Steps[0].Text + "\n"
	}
	assert.Contains(t, titles, "Held-out loss, first run of each group\ntarget 3.3 (TARGET_LOSS)")
	assert.Contains(t, titles, "Held-out loss difference of groups within 1%")
}

// A run already at the target at its first evaluation is counted there, marked as an upper bound.
func TestHeldOutFirstEvaluationIsAnUpperBound(t *testing.T) {
	inputs, _, err := Load(context.Background(), []string{filepath.Join("testdata", "crafted", "held-out")}, nil)
	require.NoError(t, err)
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	rep.SetTarget(6.5, true)
	mega := heldOutGroup(t, rep, "amd_mega_1.json")
	assert.False(t, mega.Runs[0].Interpolated)
	assert.Equal(t, 1024.0, mega.Runs[0].Samples)
	assert.Contains(t, mega.toTargetCell(mega.Samples, 0, 1, ""), "≤ ")
}

func TestParseTargetLoss(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		has  bool
		err  string
	}{{"", 0, false, ""}, {" 3.3 ", 3.3, true, ""}, {"0", 0, false, "above 0"}, {"nan", 0, false, "above 0"}, {"3.3 nats", 0, false, "TARGET_LOSS=\"3.3 nats\""}} {
		got, has, err := ParseTargetLoss(c.in)
		if c.err != "" {
			require.Error(t, err, c.in)
			assert.Contains(t, err.Error(), c.err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, c.want, got)
		assert.Equal(t, c.has, has)
	}
}
