package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crafted loads one folder of testdata/crafted (written by make.py) through
// Load and Analyze, the way compare:dir does, and renders report.md.
func crafted(t *testing.T, name string, prices PriceTable) (*Report, string) {
	t.Helper()
	inputs, skipped, err := Load(context.Background(), []string{filepath.Join("testdata", "crafted", name)}, nil)
	require.NoError(t, err)
	rep, err := Analyze(inputs, prices)
	require.NoError(t, err)
	rep.Skipped = skipped
	var b bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&b))
	return rep, b.String()
}

func oracle(t *testing.T, set, key string) float64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "crafted", "oracle.json"))
	require.NoError(t, err)
	var o map[string]map[string]float64
	require.NoError(t, json.Unmarshal(data, &o))
	v, ok := o[set][key]
	require.True(t, ok, "oracle.json has no %s.%s: run make.py", set, key)
	return v
}

func groupBySource(t *testing.T, rep *Report, src string) *Group {
	t.Helper()
	for _, g := range rep.Groups {
		for _, r := range g.Runs {
			if strings.HasSuffix(r.Input.Source, src) {
				return g
			}
		}
	}
	t.Fatalf("no group holds %s", src)
	return nil
}

func TestCraftedPoolingNeverMixesConfigurations(t *testing.T) {
	rep, md := crafted(t, "pooled-sl", DefaultPrices())
	require.Len(t, rep.Groups, 4, "SL 4096, SL 8192 and FP8 on MI300X are three groups, H100 a fourth")
	for _, g := range rep.Groups {
		assert.Equal(t, 1, g.TPS.N, g.Label)
	}
	inMD(t, md, false, "mixed:")
	inMD(t, md, false, "bf16 | fp8", "a raw | in a cell breaks the table")
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") && strings.Contains(line, "mixed") {
			t.Errorf("pooled row: %s", line)
		}
	}
	assert.NotEqual(t, groupBySource(t, rep, "amd_sl4096.json"), groupBySource(t, rep, "amd_sl8192.json"))
}

func TestCraftedIdenticalNeedsEqualRecordedConfiguration(t *testing.T) {
	rep, md := crafted(t, "fingerprint-only", DefaultPrices())
	m := rep.Models[0]
	require.NotEmpty(t, m.Headlines)
	h := m.Headlines[0]
	assert.False(t, h.Identical, "equal fingerprints but GBS 384 vs 128")
	assert.Contains(t, h.Why, "GBS 384 vs 128")
	assert.Contains(t, h.Headline(m.Label), "GBS 384 vs 128")
	assert.Contains(t, h.Headline(m.Label), "GA 48 vs 16", "the headline names the gradient accumulation too")
	inMD(t, md, false, "identical configuration; same hyperparameters")
}

func TestCraftedCPUAgainstGPUIsNotIdentical(t *testing.T) {
	rep, md := crafted(t, "cpu-vs-gpu", DefaultPrices())
	h := rep.Models[0].Headlines[0]
	assert.False(t, h.Identical)
	assert.Contains(t, h.Why, "precision bf16 vs fp32")
	cpu := groupBySource(t, rep, "cpu.json")
	assert.Nil(t, cpu.CostPer1T)
	assert.Zero(t, cpu.DaysFor1T, "a CPU run gets no time-to-train")
	inMD(t, md, false, "1 GPUs")
}

func TestCraftedFrameworksDifferLabel(t *testing.T) {
	rep, md := crafted(t, "frameworks-differ", DefaultPrices())
	m := rep.Models[0]
	h := m.Headlines[0]
	assert.True(t, h.Identical)
	assert.Contains(t, h.Headline(m.Label), "same hyperparameters and data; frameworks differ")
	assert.NotContains(t, m.Identical, "image_digest", "no group recorded it: unknown is not equal")
	assert.Contains(t, m.Unrecorded, "image_digest")
	inMD(t, md, true, "Recorded by no group")
}

func TestCraftedIdenticalHeadlineFirstBestByMFU(t *testing.T) {
	rep, _ := crafted(t, "best-vs-identical", DefaultPrices())
	m := rep.Models[0]
	require.NotEmpty(t, m.Headlines)
	h := m.Headlines[0]
	assert.True(t, h.Identical, "the identical-configuration headline comes first")
	sig3(t, oracle(t, "best-vs-identical", "identical_ratio"), h.Ratio.Value, "identical ratio")
	fast := groupBySource(t, rep, "nvd_fast.json")
	for _, c := range m.Headlines {
		assert.NotSame(t, fast, c.Faster, "H100's best by MFU is the BF16 group, not the FP8 SL 4096 one")
		assert.NotSame(t, fast, c.Slower, "H100's best by MFU is the BF16 group, not the FP8 SL 4096 one")
	}
}

func TestCraftedDaggerMarksOnlyTheDifferingPair(t *testing.T) {
	rep, md := crafted(t, "dagger", DefaultPrices())
	amd, nvd := groupBySource(t, rep, "amd.json"), groupBySource(t, rep, "nvd.json")
	nemo := groupBySource(t, rep, "nvd_nemo.json")
	assert.False(t, amd.Marked)
	assert.False(t, nvd.Marked)
	assert.True(t, nemo.Marked)
	inMD(t, md, true, "| "+amd.Label+" | "+nvd.Label+" | ")
	inMD(t, md, true, "| "+amd.Label+" | "+nemo.Label+" † | ")
}

func TestCraftedConsistencyUsesStepSeriesAndWorksWithoutNumGPUs(t *testing.T) {
	rep, _ := crafted(t, "consistency", DefaultPrices())
	bad := map[string]bool{}
	for _, e := range rep.Errors {
		bad[filepath.Base(e.Source)] = true
	}
	assert.True(t, bad["amd_slow_series.json"], "series twice as slow as its stated mean")
	assert.True(t, bad["nvd_no_gpus.json"], "no GPU count anywhere: unverifiable")
	assert.True(t, bad["nvd_2x_device_count.json"], "2x inflated tokens/s/GPU caught by gpu_info.device_count")
	for _, f := range []string{"amd_ok", "nvd_ok", "amd_slow_series", "nvd_no_gpus", "nvd_2x_device_count", "amd_device_count_ok"} {
		assert.Equal(t, oracle(t, "consistency", f) == 1, bad[f+".json"], f)
	}
	unverifiable := false
	for _, e := range rep.Errors {
		if filepath.Base(e.Source) == "nvd_no_gpus.json" && e.Name == "gpu_count_unrecorded" {
			unverifiable = true
		}
	}
	assert.True(t, unverifiable, "the report says why the run is left out")
}

func TestCraftedIdenticalRunsGiveNoCertainty(t *testing.T) {
	rep, md := crafted(t, "identical-runs", DefaultPrices())
	for _, g := range rep.Groups {
		assert.Equal(t, 2, g.TPS.N)
		assert.False(t, g.TPS.HasCI, "two identical values do not make a zero-width interval")
	}
	inMD(t, md, false, "± 0.0 ")
	inMD(t, md, false, "± 0.00")
	inMD(t, md, true, "identical values")
	inMD(t, md, false, "MLPerf-style")
	inMD(t, md, true, "olympic mean")
}

func TestCraftedLossParity(t *testing.T) {
	rep, md := crafted(t, "parity", DefaultPrices())
	m := rep.Models[0]
	amd, nvd := groupBySource(t, rep, "amd_bf16.json"), groupBySource(t, rep, "nvd_bf16.json")
	fp8 := groupBySource(t, rep, "nvd_fp8.json")
	found := map[[2]*Group]LossParity{}
	for _, lp := range m.Parity {
		found[[2]*Group{lp.A, lp.B}], found[[2]*Group{lp.B, lp.A}] = lp, lp
	}
	same, ok := found[[2]*Group{amd, nvd}]
	require.True(t, ok)
	assert.False(t, same.Diverged, "a single 7%% spike is noise, not divergence")
	prec, ok := found[[2]*Group{amd, fp8}]
	require.True(t, ok, "a BF16/FP8 pair differing only in precision gets a parity check")
	assert.True(t, prec.PrecisionOnly)
	assert.True(t, prec.Diverged)
	sig3(t, oracle(t, "parity", "fp8_vs_amd_gap"), prec.TailGap, "tail-mean gap")
	title := lossTitle(m)
	assert.Contains(t, title, fp8.Label, "every diverged pair is named in the figure")
	inMD(t, md, true, "- "+mdEscape(fp8.Label)+" vs "+mdEscape(amd.Label)+" (precision only: fp8 vs bf16): **diverged**")
}

func TestCraftedPricesAnyGPU(t *testing.T) {
	prices, err := ParsePriceEnv(DefaultPrices(), []string{"PRICE_A100=1.29", "PRICE_CPU=0.05", "PRICE_H100_NVL=2.5"})
	require.NoError(t, err)
	rep, md := crafted(t, "prices", prices)
	a100 := groupBySource(t, rep, "a100.json")
	require.NotNil(t, a100.CostPer1T, a100.Key.GPU)
	inMD(t, md, true, "$1.50–$6.00", "MI300X's price range")
	inMD(t, md, true, "break-even")
}

func TestCraftedEnergyColumnsMarked(t *testing.T) {
	_, md := crafted(t, "energy", DefaultPrices())
	inMD(t, md, true, "GPU board power only")
	assert.Regexp(t, `\| 700 \(TDP`, md[strings.Index(md, "## Llama"):])
}

// TestCraftedSlurmEnergySampledOnNodes: a Slurm run whose compute nodes sampled its GPUs shows
// sampled power, and the report no longer says Slurm runs are not sampled; a Slurm run whose
// nodes recorded nothing still says why its figure is the TDP.
func TestCraftedSlurmEnergySampledOnNodes(t *testing.T) {
	_, md := crafted(t, "slurm-energy", DefaultPrices())
	section := md[strings.Index(md, "## Llama"):]
	assert.Regexp(t, `\| 610 \(sampled\) \|`, section, "MI300X's nodes sampled its power")
	assert.Equal(t, 1, strings.Count(md, "not sampled"), "only H100's figure says it was not sampled")
	assert.Regexp(t, `\| 700 \(TDP; not sampled on the Slurm compute nodes\) \|`, section)
	inMD(t, md, false, "Slurm jobs are not sampled")
	inMD(t, md, true, "Slurm jobs are sampled on their compute nodes")
}

func TestCraftedProxyGetsNoTimeOrCost(t *testing.T) {
	rep, md := crafted(t, "proxy", DefaultPrices())
	for _, g := range rep.Groups {
		assert.Nil(t, g.CostPer1T, g.Label)
		assert.Zero(t, g.DaysFor1T, g.Label)
	}
	inMD(t, md, false, "1 GPUs")
	inMD(t, md, true, "proxy model: no time-to-train or cost")
}

// inMD checks that report.md does (or does not) contain want, naming only
// want (and the message) on failure.
func inMD(t *testing.T, md string, present bool, want string, msg ...any) {
	t.Helper()
	if strings.Contains(md, want) != present {
		verb := "lacks"
		if !present {
			verb = "contains"
		}
		t.Errorf("report.md %s %q %v", verb, want, msg)
	}
}

func TestCraftedPartitionIsMarked(t *testing.T) {
	rep, md := crafted(t, "partition", DefaultPrices())
	cpx := groupBySource(t, rep, "amd_cpx.json")
	assert.NotEmpty(t, cpx.Partition)
	assert.Empty(t, groupBySource(t, rep, "nvd.json").Partition)
	inMD(t, md, true, "(whole-GPU peak; partition)")
	inMD(t, md, true, cpx.Label+" ran on a GPU partition")
}

// The hint the report prints for an unpriced GPU is itself a setting
// ParsePriceEnv accepts, and it prices that GPU.
func TestCraftedPriceHintIsAccepted(t *testing.T) {
	rep, md := crafted(t, "prices", DefaultPrices())
	a100 := groupBySource(t, rep, "a100.json")
	hint := PriceKey(a100.Key.GPU)
	inMD(t, md, true, "no price: set "+mdEscape(hint))
	prices, err := ParsePriceEnv(DefaultPrices(), []string{hint + "=1.29"})
	require.NoError(t, err)
	p, ok := prices.Lookup(a100.Key.GPU)
	require.True(t, ok)
	assert.Equal(t, 1.29, p.USDPerGPUHour)
}

func TestCraftedWarmupSensitivity(t *testing.T) {
	rep, md := crafted(t, "fixed-window", DefaultPrices())
	require.Empty(t, rep.Errors)
	h := rep.Models[0].Headlines[0]
	sig3(t, oracle(t, "fixed-window", "rival_ratio"), h.Ratio.Value, "Rival's rule")
	require.NotNil(t, h.FixedWindow, h.FixedWindowNote)
	sig3(t, oracle(t, "fixed-window", "fixed_ratio"), h.FixedWindow.Value, "iterations 35-44")
	inMD(t, md, true, "over NVIDIA's fixed window (iterations 35-44 of 50)")
}

func TestCraftedFixedWindowNeedsFiftyIterations(t *testing.T) {
	rep, md := crafted(t, "short-window", DefaultPrices())
	require.Empty(t, rep.Errors)
	h := rep.Models[0].Headlines[0]
	assert.Nil(t, h.FixedWindow, "iterations 35-44 of a 44-iteration run are not NVIDIA's window")
	assert.Contains(t, h.FixedWindowNote, "does not apply: ran 44 iterations")
	inMD(t, md, false, "over NVIDIA's fixed window")
	inMD(t, md, true, "not used: MI300X Megatron-LM: does not apply: ran 44 iterations, the window is defined for runs of at least 50")
}

// cells counts the cells of a Markdown table row: unescaped | separators
// (a | preceded by an odd number of backslashes is text).
func cells(line string) int {
	n, bs := 0, 0
	for _, c := range line {
		switch {
		case c == '\\':
			bs++
			continue
		case c == '|' && bs%2 == 0:
			n++
		}
		bs = 0
	}
	return n - 1
}

func TestCraftedMarkdownCharactersAreEscaped(t *testing.T) {
	rep, md := crafted(t, "markdown-chars", DefaultPrices())
	require.Empty(t, rep.Errors)
	const version = "core_r0.12*rc|`x`"
	const escaped = "core\\_r0.12\\*rc\\|\\`x\\`"
	inMD(t, md, false, version, "recorded text appears unescaped")
	inMD(t, md, true, "## Llama \\*3.1\\* \\| 8B\n")
	inMD(t, md, true, "; Megatron-LM "+escaped+", image sha256:img-amd\n", "headline stack line")
	var header, rows int
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			header = 0
			continue
		}
		if header == 0 {
			header = cells(line)
			continue
		}
		rows++
		assert.Equal(t, header, cells(line), "row has its header's column count: %s", line)
	}
	assert.Greater(t, rows, 20)
	// The version sits in real cells: the configurations table's stack
	// column and the throughput table.
	inMD(t, md, true, " | Megatron-LM "+escaped+", image sha256:img-amd |")
	inMD(t, md, true, " · Megatron-LM "+escaped+" | 1 |")
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "  - ") {
			for _, bad := range []string{"Llama *3.1*", "*rc|"} {
				assert.NotContains(t, line, bad, "raw markup in a list line")
			}
		}
	}
}

func TestCraftedRecordedStatisticsAreUsed(t *testing.T) {
	rep, md := crafted(t, "recorded-stats", DefaultPrices())
	require.Empty(t, rep.Errors, "a median-based tokens/s is the result's headline statistic, not an inconsistency")
	g := groupBySource(t, rep, "amd.json")
	assert.InDelta(t, oracle(t, "recorded-stats", "median"), g.StepMedian, 1e-12)
	assert.InDelta(t, oracle(t, "recorded-stats", "p10"), g.StepP10, 1e-12, "recorded over every measured step, not the decimated series")
	assert.InDelta(t, oracle(t, "recorded-stats", "p90"), g.StepP90, 1e-12)
	assert.InDelta(t, oracle(t, "recorded-stats", "measured_series_mean"), mean(measuredSteps(g.Runs[0].Input.Result)), 1e-12,
		"the recorded warm-up counts logged steps, not entries of a decimated series")
	inMD(t, md, true, "recorded by the result")
}
