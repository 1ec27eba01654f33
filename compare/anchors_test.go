package compare

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/models"
)

func anchorNamed(t *testing.T, prefix string) Anchor {
	t.Helper()
	for _, a := range Anchors {
		if strings.HasPrefix(a.Name, prefix) {
			return a
		}
	}
	t.Fatalf("no anchor %q", prefix)
	return Anchor{}
}

// Every anchor is a sourced record: a repository and path (or a page), the
// timing window, FLOP convention and data mode, and figures that agree with
// each other.
func TestAnchorsAreSourcedRecords(t *testing.T) {
	for _, a := range Anchors {
		t.Run(a.Name, func(t *testing.T) {
			assert.True(t, a.Source.Repo != "" && a.Source.Path != "" || a.Source.URL != "", "source")
			assert.NotEmpty(t, a.Window)
			assert.NotEmpty(t, a.FLOPs)
			assert.NotEmpty(t, a.Data)
			assert.NotEmpty(t, a.Image)
			assert.Positive(t, a.TokensPerSecPerGPU)
			assert.Positive(t, a.GPUs)
			if a.StepSeconds > 0 {
				// GBS × SL / step / GPUs is the published tokens/s/GPU, to the unit.
				assert.InDelta(t, a.TokensPerSecPerGPU, float64(a.GBS*a.SL)/a.StepSeconds/float64(a.GPUs), 0.6)
			}
			if a.GBS > 0 && a.MBS > 0 && a.DP > 0 && a.GA > 0 {
				assert.Equal(t, a.GBS, a.MBS*a.DP*a.GA, "GBS = MBS × DP × GA")
				assert.Equal(t, a.GPUs, a.TP*a.PP*a.CP*a.DP, "GPUs = TP × PP × CP × DP")
			}
			if a.FLOPs == FLOPsCausal && a.PublishedTFLOPs > 0 {
				m, err := models.Lookup(a.Model)
				require.NoError(t, err)
				tf := m.TrainFLOPsPerToken(a.SL) * a.TokensPerSecPerGPU / 1e12
				assert.InDelta(t, 0, math.Abs(tf-a.PublishedTFLOPs)/a.PublishedTFLOPs, 0.005, "the source's TFLOP/s follows from the causal count")
			}
			rec := a.Record()
			for _, want := range []string{a.Window, a.FLOPs, a.Data, a.Source.Path} {
				assert.Contains(t, rec, want)
			}
		})
	}
}

// The Megatron-Bridge 25.11 H100 row describes the recipe as shipped (PR
// #1348): CP 1, recompute of 5 layers, DDP — not Megatron-FSDP.
func TestAnchorMegatronBridge2511IsTheShippedRecipe(t *testing.T) {
	a := anchorNamed(t, "Megatron-Bridge performance summary, NeMo 25.11")
	assert.Equal(t, 1, a.CP)
	assert.Equal(t, "5 layers", a.Recompute)
	assert.Equal(t, "DDP", a.Sharding)
	assert.Contains(t, a.Source.Note, "#1348")
	assert.Contains(t, a.Source.Note, "cb62f8620")
	assert.Equal(t, 14451.0, a.TokensPerSecPerGPU)
}

// dgxc-benchmarking v25.04 on 8×H100: CP 2, GA 32, last-step timing.
func TestAnchorDGXC2504Rows(t *testing.T) {
	for _, tc := range []struct {
		prefix, precision string
		step, tps         float64
	}{
		{"dgxc-benchmarking v25.04, Llama 3.1 8B BF16", "bf16", 12.27, 10682},
		{"dgxc-benchmarking v25.04, Llama 3.1 8B FP8", "fp8", 9.33, 14049},
	} {
		a := anchorNamed(t, tc.prefix)
		assert.Equal(t, tc.precision, a.Precision)
		assert.Equal(t, "NeMo 25.02.01", a.Image)
		assert.Equal(t, [6]int{128, 1, 8192, 2, 32, 8}, [6]int{a.GBS, a.MBS, a.SL, a.CP, a.GA, a.GPUs})
		assert.Equal(t, WindowLastStep, a.Window)
		assert.Equal(t, tc.step, a.StepSeconds)
		assert.Equal(t, tc.tps, a.TokensPerSecPerGPU)
		assert.Equal(t, "741c886", a.Source.Commit)
	}
}

// A group that ran an anchor's workload gets a measured ÷ published line
// with the interval oracle.py computes, the acceptance rule, the figure
// over the source's own window, and every convention that differs.
func TestAnchorLineAgainstOracle(t *testing.T) {
	want := readHistoryOracle(t)["anchor"]
	rep := analyzeDir(t, filepath.Join("testdata", "history", "anchor"))
	var line *AnchorLine
	for _, l := range rep.AnchorLines() {
		if strings.HasPrefix(l.Anchor.Name, "dgxc-benchmarking v25.04, Llama 3.1 8B BF16") {
			line = &l
		}
		assert.Equal(t, "bf16", l.Anchor.Precision, "an FP8 anchor never matches a BF16 run")
	}
	require.NotNil(t, line)
	relClose(t, want.DGXC.Ratio, line.Ratio.Value, "measured ÷ published")
	relClose(t, want.DGXC.Lo, line.Ratio.Lo, "low")
	relClose(t, want.DGXC.Hi, line.Ratio.Hi, "high")
	require.NotNil(t, line.SameWindow)
	relClose(t, want.DGXCLast.Ratio, line.SameWindow.Value, "last-step ratio")
	require.True(t, want.DGXC.Accepted)
	assert.True(t, strings.HasSuffix(line.Accepted, ": met"), line.Accepted)
	text := line.Text()
	for _, s := range []string{
		"measured ÷ published = ", "timing window: Rival's median step time after Rival's warm-up rule vs the source's last step",
		"data: Rival trains on a real dataset (bc) vs the source's mock", "FLOP convention: Rival's causal attention vs the source's full (non-causal) attention",
		"CP 1 vs 2", "DP 8 vs 4", "GA 16 vs 32", "≥ 0.95 of the baseline, 3 runs",
	} {
		assert.Contains(t, text, s)
	}
	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Contains(t, md.String(), mdEscape(text))
}

func TestAcceptanceRule(t *testing.T) {
	ci := func(v, lo float64) Ratio { return Ratio{Value: v, HasCI: true, Lo: lo, Hi: 2*v - lo} }
	assert.Contains(t, acceptance(2, ci(1.0, 0.99)), "not assessed")
	assert.True(t, strings.HasSuffix(acceptance(3, ci(0.97, 0.955)), ": met"))
	assert.Contains(t, acceptance(3, ci(0.96, 0.93)), "met by the mean, but the interval reaches down to 0.930")
	assert.True(t, strings.HasSuffix(acceptance(5, ci(0.94, 0.92)), ": not met"))
}
