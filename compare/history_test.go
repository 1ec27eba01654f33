package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oracleStep and oracleHistory are testdata/history/expected.json, written by
// make.py with oracle.py (numpy, independent of this package).
type oracleStep struct {
	From    int     `json:"frm"`
	To      int     `json:"to"`
	Kind    string  `json:"kind"`
	Ratio   float64 `json:"ratio"`
	HasCI   bool    `json:"has_ci"`
	Lo      float64 `json:"lo"`
	Hi      float64 `json:"hi"`
	DF      float64 `json:"df"`
	Verdict string  `json:"verdict"`
}

type oracleBatch struct {
	Host string  `json:"host"`
	Runs int     `json:"runs"`
	Mean float64 `json:"mean"`
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
}

type oracleSeries struct {
	Batches []oracleBatch `json:"batches"`
	Steps   []oracleStep  `json:"steps"`
}

type oracleAnchor struct {
	Ratio    float64 `json:"ratio"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	N        int     `json:"n"`
	Accepted bool    `json:"accepted"`
}

type oracleSet struct {
	History  []oracleSeries `json:"history"`
	DGXC     *oracleAnchor  `json:"dgxc_bf16"`
	DGXCLast *oracleAnchor  `json:"dgxc_bf16_last_step"`
}

func readHistoryOracle(t *testing.T) map[string]oracleSet {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "history", "expected.json"))
	require.NoError(t, err)
	var out map[string]oracleSet
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}

func relClose(t *testing.T, want, got float64, what string) {
	t.Helper()
	assert.InDelta(t, 0, math.Abs(got-want)/math.Max(math.Abs(want), 1e-12), 5e-4, "%s: want %v, got %v", what, want, got)
}

func analyzeDir(t *testing.T, dir string) *Report {
	t.Helper()
	inputs, skipped, err := Load(context.Background(), []string{dir}, nil)
	require.NoError(t, err)
	require.Empty(t, skipped)
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	require.Empty(t, rep.Errors)
	return rep
}

// The crafted histories: a 10% regression, noise only, a date-only change
// and mixed hosts get the verdicts, ratios and intervals oracle.py computes.
func TestHistoryCraftedAgainstOracle(t *testing.T) {
	oracle := readHistoryOracle(t)
	cases := []struct {
		set     string
		phrases []string // what each step's verdict must say, in order
		absent  []string // what no step may say
	}{
		{set: "regression", phrases: []string{"regression: 9.7% slower"}},
		{set: "noise", phrases: []string{"no change"}, absent: []string{"regression", "improvement"}},
		{set: "date-only", phrases: []string{"change outside the recorded stack: 10.0% slower"}, absent: []string{"regression:"}},
		{set: "mixed-hosts", phrases: []string{
			"host difference: 7.0% faster on another host with the same recorded software, not a software improvement",
			"regression: 9.9% slower", "regression: 10.0% slower", "not attributable: host and stack both changed",
		}},
		// Rival's two NVIDIA stacks as their results record them: the upgrade a user measures.
		{set: "nvd-stacks", phrases: []string{"improvement: 6.9% faster"}},
	}
	for _, tc := range cases {
		t.Run(tc.set, func(t *testing.T) {
			want := oracle[tc.set].History
			rep := analyzeDir(t, filepath.Join("testdata", "history", tc.set))
			require.NotNil(t, rep.History)
			require.Len(t, rep.History.Series, len(want))
			s, w := rep.History.Series[0], want[0]
			require.Len(t, s.Batches, len(w.Batches))
			for i, b := range s.Batches {
				assert.Equal(t, w.Batches[i].Host, b.Host)
				assert.Equal(t, w.Batches[i].Runs, len(b.Runs))
				relClose(t, w.Batches[i].Mean, b.TPS.Mean, "batch mean")
				relClose(t, w.Batches[i].Lo, b.TPS.CILo, "batch CI low")
				relClose(t, w.Batches[i].Hi, b.TPS.CIHi, "batch CI high")
			}
			require.Len(t, s.Steps, len(w.Steps))
			for i, st := range s.Steps {
				ws := w.Steps[i]
				assert.Equal(t, ws.From, s.index(st.From), "step %d from", i)
				assert.Equal(t, ws.To, s.index(st.To), "step %d to", i)
				assert.Equal(t, ws.Kind, st.Kind, "step %d kind", i)
				assert.Equal(t, ws.Verdict, st.Verdict, "step %d verdict", i)
				relClose(t, ws.Ratio, st.Ratio.Value, "ratio")
				require.Equal(t, ws.HasCI, st.Ratio.HasCI)
				relClose(t, ws.Lo, st.Ratio.Lo, "ratio CI low")
				relClose(t, ws.Hi, st.Ratio.Hi, "ratio CI high")
				relClose(t, ws.DF, st.Ratio.DF, "degrees of freedom")
				assert.Contains(t, st.Phrase(), tc.phrases[i])
				for _, a := range tc.absent {
					assert.NotContains(t, st.Phrase(), a)
				}
			}
			var md bytes.Buffer
			require.NoError(t, rep.WriteMarkdown(&md))
			assert.Contains(t, md.String(), "## History")
			for _, p := range tc.phrases {
				assert.Contains(t, md.String(), mdEscape(p))
			}
			var page bytes.Buffer
			require.NoError(t, rep.WriteHTML(&page))
			assert.Contains(t, page.String(), `<h2 id="history">History</h2>`)
		})
	}
}

// A stack step names what changed; a date-only step names nothing but says
// so; the hosts of a host step are named.
func TestHistoryStepsNameTheChange(t *testing.T) {
	rep := analyzeDir(t, filepath.Join("testdata", "history", "mixed-hosts"))
	steps := rep.History.Series[0].Steps
	assert.Equal(t, []string{"host h100-a → h100-b"}, steps[0].Changed)
	assert.Equal(t, []string{"cuda 12.9 → 13.0.2", "megatron-core 0.15.0 → 0.16.0", "torch 2.8.0 → 2.10.0a0",
		"image sha256:aaaaaaaaaaaa → sha256:bbbbbbbbbbbb"}, steps[1].Changed)
	// Rival's own results name the stack as "Megatron-LM <commit> (Megatron Core <version>) in <image>".
	rep = analyzeDir(t, filepath.Join("testdata", "history", "nvd-stacks"))
	changed := rep.History.Series[0].Steps[0].Changed
	assert.Contains(t, changed, "core 0.16.0 → 0.18.0")
	assert.Contains(t, strings.Join(changed, "; "), "nvcr.io/nvidia/nemo:26.02\" → \"Megatron-LM d0b3b775")
	// Each stack is a group of its own whose label names its image; the History joins them.
	var labels []string
	for _, g := range rep.Groups {
		labels = append(labels, g.Label)
	}
	assert.ElementsMatch(t, []string{"H100 Megatron-LM nemo:26.02", "H100 Megatron-LM nemo:26.06"}, labels)
	assert.Contains(t, rep.History.Series[0].Label, "· H100 Megatron-LM ·")
	assert.NotContains(t, rep.History.Series[0].Label, "nemo:26.0", "the joined workload drops the stack")
	rep = analyzeDir(t, filepath.Join("testdata", "history", "date-only"))
	assert.Empty(t, rep.History.Series[0].Steps[0].Changed)
	var con strings.Builder
	rep.ConsoleHistory(&con)
	assert.Contains(t, con.String(), "[date only]")
}

// One batch per workload is no history: the report has no History section.
func TestHistoryAbsentWithOneStack(t *testing.T) {
	rep := analyzeDir(t, filepath.Join("testdata", "history", "anchor"))
	assert.Nil(t, rep.History)
	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.NotContains(t, md.String(), "## History")
}

// The threshold decides between no change and inconclusive: at 1% the
// noise set's interval reaches beyond 1 ± θ.
func TestHistoryThresholdChangesVerdict(t *testing.T) {
	rep := analyzeDir(t, filepath.Join("testdata", "history", "noise"))
	require.NoError(t, rep.SetHistoryThreshold(0.01))
	assert.Equal(t, VerdictInconclusive, rep.History.Series[0].Steps[0].Verdict)
	require.Error(t, rep.SetHistoryThreshold(0))
	require.Error(t, rep.SetHistoryThreshold(math.NaN()))
}

func TestHistoryVerdictRule(t *testing.T) {
	ci := func(v, lo, hi float64) Ratio { return Ratio{Value: v, HasCI: true, Lo: lo, Hi: hi} }
	tests := []struct {
		name string
		r    Ratio
		want string
	}{
		{"beyond the threshold and below 1", ci(0.90, 0.87, 0.93), VerdictRegression},
		{"significant, estimate past θ, interval reaching into the band", ci(0.94, 0.90, 0.98), VerdictRegression},
		{"significant but within θ", ci(0.97, 0.96, 0.98), VerdictNoChange},
		{"improvement", ci(1.10, 1.06, 1.14), VerdictImprovement},
		{"equivalent", ci(1.00, 0.96, 1.04), VerdictNoChange},
		{"edge of the band is still within", ci(1.00, 0.95, 1.05), VerdictNoChange},
		{"wide interval holding 1", ci(0.97, 0.90, 1.04), VerdictInconclusive},
		{"significant, estimate within θ, interval past it", ci(0.96, 0.93, 0.99), VerdictInconclusive},
		{"no interval", Ratio{Value: 0.5}, VerdictInconclusive},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, why := historyVerdict(tc.r, 0.05)
			assert.Equal(t, tc.want, got)
			assert.NotEmpty(t, why)
		})
	}
}

func TestParseHistoryThreshold(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		err  string
	}{
		{"", DefaultHistoryThreshold, ""},
		{"5%", 0.05, ""},
		{"5", 0.05, ""},
		{" 2.5 % ", 0.025, ""},
		{"0.1", 0.1, ""},
		{"0", 0, "between 0% and 100%"},
		{"100%", 0, "between 0% and 100%"},
		{"-3", 0, "between 0% and 100%"},
		{"NaN", 0, "not a number"},
		{"five", 0, "HISTORY_THRESHOLD=\"five\": not a number"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseHistoryThreshold(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

func FuzzParseHistoryThreshold(f *testing.F) {
	for _, s := range []string{"", "5%", "0.05", "1e309", "-0", "5%%", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseHistoryThreshold(s)
		if err == nil && (!finite(v) || v <= 0 || v >= 1) {
			t.Fatalf("%q gave %v without an error", s, v)
		}
	})
}

// Results without a start time are listed, not placed in the history.
func TestHistoryUndatedRunsAreListed(t *testing.T) {
	inputs, _, err := Load(context.Background(), []string{filepath.Join("testdata", "history", "regression")}, nil)
	require.NoError(t, err)
	inputs[0].Result.Provenance.StartedAt = ""
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	require.NotNil(t, rep.History)
	assert.Equal(t, []string{inputs[0].Source}, rep.History.Series[0].Undated)
	assert.Len(t, rep.History.Series[0].Batches[0].Runs, 2)
}

// The trend figure: a PNG of one 12 × 4 in panel per workload at 96 dpi and
// an SVG; without a history the figure says why it is empty.
func TestHistoryPlots(t *testing.T) {
	dir := t.TempDir()
	if keep := os.Getenv("RIVAL_KEEP_PLOTS"); keep != "" {
		dir = keep
	}
	rep := analyzeDir(t, filepath.Join("testdata", "history", "mixed-hosts"))
	pngPath, svg := filepath.Join(dir, "history.png"), filepath.Join(dir, "history.svg")
	require.NoError(t, rep.writeHistoryPlots(pngPath, svg))
	f, err := os.Open(pngPath)
	require.NoError(t, err)
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	require.NoError(t, err)
	assert.Equal(t, [2]int{1152, 384}, [2]int{cfg.Width, cfg.Height})
	data, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(data), "<svg")
	assert.Contains(t, string(data), "regression")

	none := analyzeDir(t, filepath.Join("testdata", "history", "anchor"))
	other := filepath.Join(t.TempDir(), "h.png")
	require.NoError(t, none.writeHistoryPlots(other, other+".svg"))
	data, err = os.ReadFile(other + ".svg")
	require.NoError(t, err)
	assert.Contains(t, string(data), "no workload was measured on more than one software stack")
}

// Versions that share a long prefix are named from where they part, so the
// change stays in view.
func TestStackChangesShowWhereVersionsPart(t *testing.T) {
	base := "rival frameworks/fsdp train.py blake3:" + strings.Repeat("2e", 32)
	a := HistoryStack{Framework: "fsdp", FrameworkVersion: base + "; ran ddp on torch 1.13, params fp32, attention manual, AdamW foreach"}
	b := HistoryStack{Framework: "fsdp", FrameworkVersion: base + "; ran fsdp2 on torch 2.6.0, params fp32, attention sdpa enable_gqa, AdamW fused", Image: "sha256:" + strings.Repeat("b", 64)}
	got := stackChanges(a, b, true)
	require.Len(t, got, 3)
	assert.Equal(t, "torch 1.13 → 2.6.0", got[0])
	assert.Contains(t, got[1], `"…; ran ddp on torch 1.13`)
	assert.Contains(t, got[1], `"…; ran fsdp2 on torch 2.6.0`)
	assert.Equal(t, "image none (host run) → sha256:bbbbbbbbbbbb", got[2])
}

// A driver upgrade on one host is a recorded stack change: the step is a
// software step that names the driver, not a date-only step, whether or not
// the hardware fingerprint moved with it.
func TestHistoryDriverChangeIsAStackStep(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("testdata", "history", "date-only")
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for i, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		var r map[string]any
		require.NoError(t, json.Unmarshal(data, &r))
		driver := "570.133.20"
		if i >= 3 { // the second week's batch
			driver = "580.159.04"
		}
		r["gpu_info"].(map[string]any)["driver_version"] = driver
		out, err := json.MarshalIndent(r, "", " ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, e.Name()), out, 0o644))
	}
	rep := analyzeDir(t, dir)
	require.NotNil(t, rep.History)
	step := rep.History.Series[0].Steps[0]
	assert.Equal(t, StepStack, step.Kind)
	assert.Equal(t, []string{"GPU driver 570.133.20 → 580.159.04"}, step.Changed)
}

// Runs of two software stacks on one platform are never pooled: a reviewer's
// report of six Megatron-LM runs on H100, three on Megatron Core 0.15 and
// three on 0.16 (7% slower), beside MI300X runs, averaged all six into one
// group whose headline named only the first version, while the same
// report's History found the regression. Now each stack is a group of its
// own, labelled by its stack; the headline says that its side holds two
// stacks and names each; the History still sets them side by side.
func TestStacksAreNeverPooled(t *testing.T) {
	inputs, _, err := Load(context.Background(), []string{filepath.Join("testdata", "history", "regression"),
		filepath.Join("testdata", "crafted", "dagger", "amd.json")}, nil)
	require.NoError(t, err)
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	var nvd []*Group
	for _, g := range rep.Groups {
		if g.Key.Platform == "nvd" {
			nvd = append(nvd, g)
		}
	}
	require.Len(t, nvd, 2, "one group per stack")
	old, cur := "megatron-core 0.15.0, torch 2.8.0, cuda 12.9", "megatron-core 0.16.0, torch 2.10.0a0, cuda 13.0.2"
	stacks := map[string]*Group{}
	for _, g := range nvd {
		stacks[g.Key.Stack] = g
		assert.Equal(t, 3, g.TPS.N, g.Label)
		assert.Contains(t, g.Label, "[stack megatron-core 0.1", "the label names the stack")
		for _, r := range g.Runs {
			assert.Equal(t, g.Key.Stack, *r.Input.Result.Framework.Version, "a group holds its own stack's runs only")
		}
	}
	require.Contains(t, stacks, old)
	require.Contains(t, stacks, cur)
	assert.NotEqual(t, stacks[old].Label, stacks[cur].Label)
	assert.Less(t, stacks[cur].TPS.Mean, stacks[old].TPS.Mean)

	m := rep.Models[0]
	require.NotEmpty(t, m.Headlines)
	for _, h := range m.Headlines {
		line := h.Headline(m.Label)
		assert.Contains(t, line, "nvd ran Megatron-LM on 2 software stacks, each shown apart", line)
		assert.Contains(t, line, old+" (n=3)")
		assert.Contains(t, line, cur+" (n=3)")
	}
	var md, page bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	require.NoError(t, rep.WriteHTML(&page))
	for _, doc := range []string{md.String(), page.String()} {
		assert.Contains(t, doc, "2 software stacks, each shown apart")
	}

	// The History joins the stacks again, as one workload in two batches.
	require.NotNil(t, rep.History)
	require.Len(t, rep.History.Series, 1)
	s := rep.History.Series[0]
	assert.NotContains(t, s.Label, "[stack", "the workload's label drops the stack tag")
	require.Len(t, s.Batches, 2)
	assert.Equal(t, StepStack, s.Steps[0].Kind)
	assert.Equal(t, VerdictRegression, s.Steps[0].Verdict)
}
