package compare

import (
	"html"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStepParityBetweenFrameworks runs the step-parity sets of
// testdata/crafted (make.py): Megatron-LM and Primus on MI300X, 12 logged
// steps with one warm-up step, each with its own config fingerprint. Primus
// is the faster group, so it is A. Every expected figure is worked out by
// hand from the curves in make.py: Megatron-LM logs 10.0, 9.5, …, 4.5 at
// steps 1-12, and the relative difference of losses x and y is |x−y| / ((x+y)/2).
func TestStepParityBetweenFrameworks(t *testing.T) {
	const names = "MI300X Primus vs MI300X Megatron-LM"
	zero := make([]float64, 12)
	for _, tc := range []struct {
		set string
		// rel is every step's relative difference, steps 1-12 (warm-up included); nil when
		// the pair is not compared.
		rel         []float64
		parted      bool
		partedAt    int
		diverged    bool // the tail means differ by more than LossDivergenceThreshold
		largestStep int
		largestAbs  float64
		verdict     string // report.md's verdict for a compared pair
		skipped     string // the reason for a pair not compared
	}{
		{set: "identical", rel: zero, largestStep: 1, verdict: "in parity"},
		{
			// 0.6 apart at step 3 (9.0 vs 9.6) comes back; 0.5 apart from step 7 (7.0 vs 7.5) to the end.
			set:    "parted",
			rel:    []float64{0, 0, 0.6 / 9.3, 0, 0, 0, 0.5 / 7.25, 0.5 / 6.75, 0.5 / 6.25, 0.5 / 5.75, 0.5 / 5.25, 0.5 / 4.75},
			parted: true, partedAt: 7, diverged: true, largestStep: 12, largestAbs: 0.5, verdict: "**parted at step 7**",
		},
		{
			// 1.0 apart at step 5 (8.0 vs 9.0) only; 0.05 apart at the last step (4.5 vs 4.55) is within 2 %.
			set:         "noisy-step",
			rel:         []float64{0, 0, 0, 0, 1.0 / 8.5, 0, 0, 0, 0, 0, 0, 0.05 / 4.525},
			largestStep: 5, largestAbs: 1.0, verdict: "in parity",
		},
		{
			// 0.2 above at every step: 0.2/4.6 = 4.35 % at step 12 stays under 5 % (never parted), but the
			// tail mean (the last step of 12) is 4.35 % apart, above 2 %.
			set: "offset",
			rel: []float64{0.2 / 10.1, 0.2 / 9.6, 0.2 / 9.1, 0.2 / 8.6, 0.2 / 8.1, 0.2 / 7.6, 0.2 / 7.1, 0.2 / 6.6, 0.2 / 6.1,
				0.2 / 5.6, 0.2 / 5.1, 0.2 / 4.6},
			diverged: true, largestStep: 12, largestAbs: 0.2, verdict: "**diverged (tail-mean gap 4.35% > 2%)**",
		},
		{
			// Primus stops after step 8: from step 9 only one run has a loss, four steps to the end.
			set:    "stops-early",
			rel:    []float64{0, 0, 0, 0, 0, 0, 0, 0, math.Inf(1), math.Inf(1), math.Inf(1), math.Inf(1)},
			parted: true, partedAt: 9, largestStep: 9, largestAbs: math.Inf(1), verdict: "**parted at step 9**",
		},
		{set: "other-order", skipped: "sample orders differ (digest bbbbbbbbbbb… vs aaaaaaaaaaa…): they did not read the same batches"},
		{set: "no-order", skipped: "MI300X Primus records no sample order, so the steps need not hold the same batches"},
		{set: "other-seed", skipped: "seeds differ (SEED 42 vs 1234)"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			rep, _ := crafted(t, filepath.Join("step-parity", tc.set), DefaultPrices())
			require.Len(t, rep.Models, 1)
			m := rep.Models[0]
			assert.Empty(t, m.Parity, "one platform, another framework: not a cross-platform pair")
			md, page, console, svg := outputs(t, rep)
			page, svg = html.UnescapeString(page), html.UnescapeString(svg)
			if tc.rel == nil {
				assert.Empty(t, m.FrameworkParity)
				require.Len(t, m.FrameworkSkipped, 1)
				assert.Equal(t, tc.skipped, m.FrameworkSkipped[0].Why)
				line := names + " (frameworks differ): not compared step by step: " + tc.skipped
				inMD(t, md, true, "- "+mdEscape(line)+".\n")
				assert.Contains(t, page, "not compared step by step: "+tc.skipped)
				assert.Contains(t, console, "loss step by step, "+names+" (frameworks differ): not compared: "+tc.skipped+"\n")
				assert.Contains(t, svg, "curves not compared")
				return
			}
			assert.Empty(t, m.FrameworkSkipped)
			require.Len(t, m.FrameworkParity, 1)
			lp := m.FrameworkParity[0]
			assert.True(t, lp.Frameworks)
			assert.Equal(t, "MI300X Primus", lp.A.Label)
			require.NotNil(t, lp.StepWise)
			sp := lp.StepWise
			require.Len(t, sp.Diffs, len(tc.rel), "every common step, warm-up included")
			for i, d := range sp.Diffs {
				assert.Equal(t, i+1, d.Step)
				if math.IsInf(tc.rel[i], 1) {
					assert.True(t, math.IsInf(d.Rel, 1), "step %d: one run has no loss", d.Step)
				} else {
					assert.InDelta(t, tc.rel[i], d.Rel, 1e-12, "step %d", d.Step)
				}
			}
			assert.Equal(t, tc.parted, sp.Parted)
			assert.Equal(t, tc.partedAt, sp.PartedAt)
			assert.Equal(t, tc.diverged, lp.Diverged)
			assert.Equal(t, !tc.parted && !tc.diverged, lp.InParity())
			assert.Equal(t, tc.largestStep, sp.Largest.Step)
			if !math.IsInf(tc.largestAbs, 1) {
				assert.InDelta(t, tc.largestAbs, sp.Largest.Abs, 1e-12)
				assert.InDelta(t, tc.rel[tc.largestStep-1], sp.Largest.Rel, 1e-12)
			}
			assert.Contains(t, m.ParityPairs(), lp, "the figure, report.md and report.html speak of the same pairs")

			inMD(t, md, true, "- "+mdEscape(names)+" (frameworks differ, same batches): "+tc.verdict+": ")
			switch {
			case tc.set == "stops-early":
				assert.Contains(t, console, "(frameworks differ, same batches): PARTED at step 9: every step from 9 on")
				inMD(t, md, true, "at step 9 only one run has a finite loss, over 12 steps, warm-up included")
			case tc.parted:
				assert.Contains(t, page, `<span class="bad">parted at step 7</span>`)
				assert.Contains(t, console, "(frameworks differ, same batches): PARTED at step 7: every step from 7 on")
				assert.Contains(t, svg, "PARTED (frameworks, step by step on the same batches): "+names+" at step 7")
				inMD(t, md, true, "every step from 7 on differs by more than 5%; largest difference 10.53% (0.5 in loss) at step 12, over 12 steps, warm-up included")
			case tc.diverged:
				assert.Contains(t, page, `<span class="bad">diverged (tail-mean gap 4.35% > 2%)</span>`)
				assert.Contains(t, console, "(frameworks differ, same batches): Diverged (tail-mean gap 4.35% > 2%): no step from which")
				inMD(t, md, true, "tail-mean gap 4.35% over the last 1 step")
			default:
				assert.Contains(t, page, `<span class="ok">in parity</span>`)
				assert.Contains(t, console, "(frameworks differ, same batches): in parity: no step from which")
				assert.Contains(t, svg, "1 of 1 pair in parity")
				assert.NotContains(t, md[strings.Index(md, "### Loss parity"):], "parted at")
			}
		})
	}
}

// An existing pair kind that shares the sample order (identical
// configuration across platforms) keeps its tail-mean verdict and shows the
// step figures beside it: the H100 curve is 0.5 above from step 7 on.
func TestStepParityBesideTailMean(t *testing.T) {
	rep, _ := crafted(t, filepath.Join("step-parity", "across-platforms"), DefaultPrices())
	m := rep.Models[0]
	assert.Empty(t, m.FrameworkParity, "one framework: no framework pair")
	require.Len(t, m.Parity, 1)
	lp := m.Parity[0]
	require.NotNil(t, lp.StepWise)
	assert.Len(t, lp.StepWise.Diffs, 12)
	assert.True(t, lp.StepWise.Parted)
	assert.Equal(t, 7, lp.StepWise.PartedAt)
	// The tail mean is over the last round(10 % of 12) = 1 step: 4.5 vs 5.0.
	assert.InDelta(t, 0.5/4.75, lp.TailGap, 1e-12)
	assert.True(t, lp.Diverged)
	assert.False(t, lp.InParity(), "the verdict is the tail mean's")
	md, page, _, svg := outputs(t, rep)
	inMD(t, md, true, "**diverged**: mean loss over the last 1 step differs by 10.53%")
	inMD(t, md, true, " Step by step (same batches): parted at step 7 (every step from 7 on differs by more than 5%")
	assert.Contains(t, html.UnescapeString(page), "parted at step 7 (every step from 7 on")
	svg = html.UnescapeString(svg)
	assert.Contains(t, svg, "DIVERGED (last-10% mean gap)")
	assert.NotContains(t, svg, "PARTED", "only a framework pair is judged step by step")
}

// Runs that record no sample order get no step figures, and no framework
// pair is listed where none is eligible: the golden and demo reports say
// nothing of it.
func TestStepParityAbsentWithoutSampleOrder(t *testing.T) {
	rep, _, _ := loadGolden(t)
	for _, m := range rep.Models {
		assert.Empty(t, m.FrameworkParity, m.Label)
		assert.Empty(t, m.FrameworkSkipped, m.Label)
		for _, lp := range m.ParityPairs() {
			assert.Nil(t, lp.StepWise, m.Label)
		}
	}
	demo, _ := demoReport(t)
	md, _, console, _ := outputs(t, demo)
	assert.NotContains(t, md[strings.Index(md, "### Loss parity"):], "step by step")
	assert.NotContains(t, console, "step by step")
}

// Configurations of one framework that share the sample order (DP 8 and DP 4
// read the same global batches) show the step figures wherever their loss
// parity is shown: the DP 4 curve is 1.0 above at step 5 only (8.0 vs 9.0)
// and 0.1 above at the last step.
func TestStepParityBetweenConfigurations(t *testing.T) {
	rep, _ := crafted(t, filepath.Join("step-parity", "configs"), DefaultPrices())
	m := rep.Models[0]
	assert.Empty(t, m.FrameworkParity)
	cc := m.ConfigComparisons()
	require.Len(t, cc, 1)
	require.NotNil(t, cc[0].Parity)
	sp := cc[0].Parity.StepWise
	require.NotNil(t, sp)
	assert.False(t, sp.Parted)
	assert.Equal(t, 5, sp.Largest.Step)
	assert.InDelta(t, 1.0/8.5, sp.Largest.Rel, 1e-12)
	want := "in parity (no step from which every later step differs by more than 5%; largest difference 11.76% (1 in loss) at step 5, over 12 steps, warm-up included)"
	md, page, _, _ := outputs(t, rep)
	inMD(t, md, true, "  - loss step by step (same batches): "+want+"\n")
	inMD(t, md, true, " Step by step (same batches): "+want+".\n")
	assert.Contains(t, html.UnescapeString(page), "<td>"+want+"</td>")
	var con strings.Builder
	rep.ConsoleConfigs(&con)
	assert.Contains(t, con.String(), "    loss step by step (same batches): "+want+"\n")
}
