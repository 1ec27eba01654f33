package compare

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// outputs renders every text a reader sees of a report: report.md,
// report.html, the console and the figure's SVG text.
func outputs(t *testing.T, rep *Report) (md, html, console, svg string) {
	t.Helper()
	var m, h, c bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&m))
	require.NoError(t, rep.WriteHTML(&h))
	rep.Console(&c)
	rep.ConsoleConfigs(&c)
	dir := t.TempDir()
	require.NoError(t, rep.writePlots(dir+"/c.png", dir+"/c.svg"))
	return m.String(), h.String(), c.String(), readFile(t, dir+"/c.svg")
}

func TestCraftedWorkPerTokenDiffersComparesModelFLOPs(t *testing.T) {
	rep, md := crafted(t, "work-per-token", DefaultPrices())
	m := rep.Models[0]
	require.NotEmpty(t, m.Headlines)
	h := m.Headlines[0]
	nvd := groupBySource(t, rep, "nvd_0.json")
	assert.Same(t, nvd, h.Faster, "H100 at SL 4096 does more model FLOP/s than MI300X at SL 2048, though fewer tokens/s")
	assert.Equal(t, MetricFLOPs, h.Metric)
	sig3(t, oracle(t, "work-per-token", "flops_ratio"), h.Ratio.Value, "model FLOP/s ratio")
	line := h.Headline(m.Label)
	assert.Contains(t, line, "H100 Megatron-LM vs MI300X Megatron-LM")
	assert.Contains(t, line, "model TFLOP/s/GPU")
	assert.Contains(t, line, "compared by model FLOP/s: work per token differs (SL 4096 vs 2048")
	inMD(t, md, false, "break-even price ratio", "no per-token price between groups of different work per token")
	inMD(t, md, true, "not compared per token")
	_, html, console, _ := outputs(t, rep)
	assert.Contains(t, console, "model TFLOP/s/GPU")
	assert.Contains(t, html, "model TFLOP/s/GPU: H100")
	assert.NotContains(t, html, "tokens/s/GPU: MI300X Megatron-LM vs H100")
}

func TestCraftedInconclusiveSaysNoDifferenceShown(t *testing.T) {
	rep, md := crafted(t, "inconclusive", DefaultPrices())
	h := rep.Models[0].Headlines[0]
	require.True(t, h.Ratio.Inconclusive())
	sig3(t, oracle(t, "inconclusive", "ratio"), h.Ratio.Value, "ratio")
	sig3(t, oracle(t, "inconclusive", "hi"), h.Ratio.Hi, "upper bound")
	assert.Equal(t, int(oracle(t, "inconclusive", "runs_needed")), h.RunsNeeded)
	r, lo, hi := oracle(t, "inconclusive", "ratio"), oracle(t, "inconclusive", "lo"), oracle(t, "inconclusive", "hi")
	want := fmt.Sprintf("no difference shown at 95%% in tokens/s/GPU: %.2f× ± %.2f (95%% CI %s–%s); about %d runs per side would decide at the observed spread",
		r, hi-r, strconv.FormatFloat(lo, 'g', 3, 64), strconv.FormatFloat(hi, 'g', 3, 64), h.RunsNeeded)
	inMD(t, md, true, want)
	inMD(t, md, true, fmt.Sprintf("noisy host: the 3 runs of MI300X Megatron-LM spread %.1f%%", 100*oracle(t, "inconclusive", "amd_cv")))
	_, html, console, _ := outputs(t, rep)
	assert.Contains(t, console, want)
	assert.Contains(t, console, "WARNING noisy host")
	assert.NotContains(t, html, fmt.Sprintf("<b>%.2f×", r), "an inconclusive ratio is not printed bold as a speedup")
	assert.Contains(t, html, "no difference shown at 95%")
}

func TestCraftedStragglerFlaggedAndPooledPercentiles(t *testing.T) {
	rep, md := crafted(t, "straggler", DefaultPrices())
	g := groupBySource(t, rep, "amd_0.json")
	require.Equal(t, 5, g.TPS.N)
	assert.False(t, g.StepStatsRecorded, "several runs: pooled, not the mean of each run's recorded percentiles")
	sig3(t, oracle(t, "straggler", "p90"), g.StepP90, "pooled p90")
	sig3(t, oracle(t, "straggler", "p10"), g.StepP10, "pooled p10")
	sig3(t, oracle(t, "straggler", "median"), g.StepMedian, "pooled median")
	var flagged []int
	for i, r := range g.Runs {
		if r.Outlier > 0 {
			flagged = append(flagged, i)
			sig3(t, oracle(t, "straggler", "outlier_z"), r.Outlier, "modified z-score")
		}
	}
	assert.Equal(t, []int{int(oracle(t, "straggler", "outlier_index"))}, flagged)
	inMD(t, md, true, "outlier run: testdata/crafted/straggler/amd\\_4.json of MI300X Megatron-LM")
	inMD(t, md, true, "### Runs")
	inMD(t, md, true, "| MI300X Megatron-LM | testdata/crafted/straggler/amd\\_4.json |")
	inMD(t, md, true, "outlier (modified z-score")
	inMD(t, md, true, num(oracle(t, "straggler", "p90"), 3)+" (from the step series)")
	inMD(t, md, false, num(oracle(t, "straggler", "mean_of_run_p90"), 3))
}

func TestCraftedDuplicateByContentCountsOnce(t *testing.T) {
	rep, md := crafted(t, "duplicates", DefaultPrices())
	amd := groupBySource(t, rep, "amd.json")
	assert.Equal(t, 1, amd.TPS.N, "the re-serialised copy is the same run")
	nvd := groupBySource(t, rep, "nvd_0.json")
	assert.Equal(t, 2, nvd.TPS.N, "two runs with their own losses are two runs")
	inMD(t, md, true, "amd\\_copy.json (same run re-serialised")
}

func TestCraftedEditedCopyIsNotHiddenAsDuplicate(t *testing.T) {
	inputs, _, err := Load(context.Background(), []string{"testdata/crafted/duplicates"}, nil)
	require.NoError(t, err)
	// The same run with its throughput doubled by hand is kept (and named).
	var edited []Input
	for _, in := range inputs {
		if strings.HasSuffix(in.Source, "amd.json") {
			cp := *in.Result
			cp.PerformanceMetrics.TokensPerSecondPerGPU *= 2
			edited = append(edited, in, Input{Source: "edited.json", Fingerprint: "x", Result: &cp})
		}
	}
	require.Len(t, edited, 2)
	rep, err := Analyze(edited, DefaultPrices())
	require.NoError(t, err)
	require.NotEmpty(t, rep.Errors, "the edited copy is checked, not folded away")
}

func TestCraftedReproduceFromTrainingConfig(t *testing.T) {
	rep, _ := crafted(t, "reproduce-imported", DefaultPrices())
	rep.ConfigDefaults = map[string]string{"SL": "2048", "GBS": "", "MBS": "1", "PRECISION": "bf16", "TP": "1", "PP": "1", "DP": "8", "GA": "8", "TRAIN_ITERS": "500", "SEED": "42"}
	var b bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&b))
	md := b.String()
	ga := int(oracle(t, "reproduce-imported", "ga"))
	inMD(t, md, true, fmt.Sprintf("`GA=%d GBS=128 PRECISION=fp8 SL=4096 TRAIN_ITERS=100 go run mage.go train:run nvd mega llama`", ga))
	inMD(t, md, true, "built from training\\_config; not recorded, left at their defaults:")
}

func TestCraftedNegativeStepTimeIsReported(t *testing.T) {
	rep, md := crafted(t, "negative-step", DefaultPrices())
	require.NotEmpty(t, rep.Warnings)
	inMD(t, md, true, "1 step time zero, negative or not finite, left out of the step statistics (step 7: -0.5 s)")
	_, _, console, _ := outputs(t, rep)
	assert.Contains(t, console, "step 7: -0.5 s")
}

func TestCraftedProxyGetsNoMFUNorEnergy(t *testing.T) {
	rep, md := crafted(t, "proxy", DefaultPrices())
	for _, g := range rep.Groups {
		assert.Nil(t, g.MFU, g.Label)
		assert.Nil(t, g.TokensPerWh, g.Label)
	}
	eff := md[strings.Index(md, "### Efficiency"):strings.Index(md, "### Memory")]
	assert.NotContains(t, eff, "%", "no MFU percentage for a proxy")
	energy := md[strings.Index(md, "### Energy"):]
	energy = energy[:strings.Index(energy, "\n\n### ")]
	for _, line := range strings.Split(energy, "\n")[4:] {
		assert.Contains(t, line, "| — (proxy model) | — | — (proxy model: no time-to-train or cost) | — | — | — |", "no tokens per Wh, cost or GPU-hours for a proxy")
	}
}

func TestCraftedNativeGroupPreferredAtEqualMFU(t *testing.T) {
	rep, _ := crafted(t, "old-vs-native", DefaultPrices())
	native := groupBySource(t, rep, "amd_0.json")
	old := groupBySource(t, rep, "train_amd_mega_llama.json")
	require.NotSame(t, native, old)
	for _, h := range rep.Models[0].Headlines {
		if h.Method == MethodBest {
			assert.True(t, h.Faster == native || h.Slower == native, "MI300X at its best is the native 3-run group, not the old-suite single run")
		}
	}
}

func TestCraftedNarrowIntervalIsNotRoundedAway(t *testing.T) {
	rep, _ := crafted(t, "narrow-ci", DefaultPrices())
	h := rep.Models[0].Headlines[0]
	sig3(t, oracle(t, "narrow-ci", "lo"), h.Ratio.Lo, "lower bound")
	md, html, console, _ := outputs(t, rep)
	for name, out := range map[string]string{"report.md": md, "report.html": html, "console": console} {
		assert.NotContains(t, out, "1.2–1.2", name)
		assert.Contains(t, out, "95% CI 1.1998–1.2002", name)
	}
}

func TestAbsurdPriceWarns(t *testing.T) {
	prices, err := ParsePriceEnv(DefaultPrices(), []string{"PRICE_H100=1e9"})
	require.NoError(t, err)
	rep, md := crafted(t, "prices", prices)
	require.NotEmpty(t, rep.Warnings)
	inMD(t, md, true, "implausible price: PRICE\\_H100=1e9 is $1,000,000,000.00 per GPU-hour")
	prices, err = ParsePriceEnv(DefaultPrices(), []string{"PRICE_H100=3.10"})
	require.NoError(t, err)
	assert.Empty(t, prices.Warnings)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

// The demo report: the figure, report.md, report.html and the console say
// the same thing, and the figure draws only panels with data.
func TestDemoFigureAndReportAgree(t *testing.T) {
	rep, _ := demoReport(t)
	md, page, console, svg := outputs(t, rep)
	for name, out := range map[string]string{"report.md": md, "console": console} {
		assert.Contains(t, out, "in parity", name)
	}
	assert.Contains(t, svg, "1 of 1 pair in parity", "the loss panel speaks of the pair report.md and the console call in parity")
	assert.NotContains(t, svg, "curves not compared")
	assert.NotContains(t, svg, "Cost to train on 1T tokens", "no empty cost panel on the demo")
	assert.NotContains(t, svg, "MFU: Rival", "no empty MFU panel on the demo")
	assert.Contains(t, svg, "Not drawn: MFU")
	assert.NotContains(t, md, "†", "no † legend without a †")
	assert.NotContains(t, page, "†")
	assert.Equal(t, 2, strings.Count(md, "AdamW foreach"), "the long configuration is in the Configurations table only")
	assert.NotContains(t, md, "269,040", "no GPU-hours per 1T tokens for a proxy")
	assert.NotContains(t, md, "1.1…", "a difference is not cut mid-word")
	assert.Contains(t, md, "ran single on torch 1.13.0a0 vs ran ddp on torch 1.13.0a0")
}

func TestCostAdviceNamesASettingThatWorks(t *testing.T) {
	rep, md := crafted(t, "prices", DefaultPrices())
	_, _, _, svg := outputs(t, rep)
	want := "set PRICE_A100_SXM4_80GB=<USD per GPU-hour> in compare's environment"
	inMD(t, md, true, mdEscape(want))
	assert.Contains(t, html.UnescapeString(svg), want)
	assert.NotContains(t, svg, "in config.env", "config.env rejects PRICE_ keys")
}

// The demo report as Chromium renders it states what the console,
// report.md and the figure state: the same ratio and verdict, the same
// loss parity, and nothing they contradict (no †, no "not compared", no
// empty panel's promise).
func TestDemoReportInChromiumAgreesWithOtherOutputs(t *testing.T) {
	bin := chromium(t)
	rep, _ := demoReport(t)
	md, page, console, svg := outputs(t, rep)
	path := filepath.Join(t.TempDir(), "report.html")
	require.NoError(t, os.WriteFile(path, []byte(page), 0o644))
	dom, _ := runChromium(t, bin, "--virtual-time-budget=3000", "--dump-dom", "file://"+path)
	text := html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(dom, ""))
	cc := rep.Models[0].ConfigComparisons()
	require.Len(t, cc, 1)
	ratio := ratioText(cc[0].Ratio, cc[0].Metric, cc[0].RunsNeeded)
	for name, out := range map[string]string{"rendered report.html": text, "console": console, "report.md": md} {
		assert.Contains(t, strings.ReplaceAll(out, "\\", ""), ratio, name)
		assert.Contains(t, out, "in parity", name)
		assert.NotContains(t, out, "†", name)
		assert.NotContains(t, out, "not compared", name)
	}
	assert.Contains(t, text, "CPU FSDP (ran DDP), DP 2, 2 processes")
	assert.Contains(t, html.UnescapeString(svg), "1 of 1 pair in parity")
}

// A framework TFLOP/s of 0 is what a log that prints none leaves: shown as
// not printed, never as "0.0".
func TestFrameworkTFLOPsZeroIsNotShown(t *testing.T) {
	inputs, _, err := Load(context.Background(), []string{"testdata/crafted/energy"}, nil)
	require.NoError(t, err)
	zero := 0.0
	for i := range inputs {
		inputs[i].Result.PerformanceMetrics.FrameworkReportedTFLOPsPerGPU = &zero
	}
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&b))
	eff := b.String()[strings.Index(b.String(), "### Efficiency"):]
	eff = eff[:strings.Index(eff, "### Memory")]
	assert.NotContains(t, eff, "| 0.0 |")
	assert.NotContains(t, eff, "| 0 |")
	for _, g := range rep.Groups {
		assert.Nil(t, g.FrameworkTF, g.Label)
	}
}

// A demo result is rerun by the demo: train:run would train another corpus.
func TestDemoResultReproducedByTheDemo(t *testing.T) {
	rep, _ := demoReport(t)
	for _, g := range rep.Groups {
		cmd, _ := reproduce(firstRun(g), map[string]string{"DATASET": "bc"})
		assert.Equal(t, "go run mage.go demo", cmd)
	}
}
