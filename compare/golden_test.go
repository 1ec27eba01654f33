package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/result"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/ from the current output")

// expected.json is written by testdata/gen.py, computed independently of this
// package (Python standard library only).
type expected struct {
	Groups map[string]struct {
		N           int
		TPSMean     float64  `json:"tps_mean"`
		TPSSD       *float64 `json:"tps_sd"`
		TPSHalf     *float64 `json:"tps_half"`
		TPSMLPerf   *float64 `json:"tps_mlperf"`
		StepMean    float64  `json:"step_mean"`
		TFLOPs      float64  `json:"tflops"`
		MFU         float64  `json:"mfu"`
		TokensPerWh float64  `json:"tokens_per_wh"`
		CostPer1T   float64  `json:"cost_per_1t"`
		Days1T      float64  `json:"days_1t"`
		StepMedianJ float64  `json:"step_median"`
		StepP10J    float64  `json:"step_p10"`
		StepP90J    float64  `json:"step_p90"`
	}
	Speedups []struct {
		Model, Faster, Slower string
		Ratio                 float64
		Half, DF              *float64
		Identical             bool
	}
	LossParity []struct {
		Model    string
		MaxGap   float64 `json:"max_gap"`
		TailGap  float64 `json:"tail_gap"`
		Steps    int
		Diverged bool
	} `json:"loss_parity"`
	Errors     [][2]string
	Skipped    [][2]string
	TQuantiles map[string]float64 `json:"t_quantiles"`
}

// sig3 asserts agreement to the third significant digit (and a little better).
func sig3(t *testing.T, want, got float64, what string) {
	t.Helper()
	if want == 0 {
		assert.InDelta(t, 0, got, 1e-9, what)
		return
	}
	assert.InEpsilon(t, want, got, 5e-4, "%s: want %.6g got %.6g", what, want, got)
}

func loadGolden(t *testing.T) (*Report, []Problem, expected) {
	t.Helper()
	var exp expected
	data, err := os.ReadFile("testdata/expected.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &exp))
	inputs, problems, err := Load(context.Background(), []string{"testdata/results"}, nil)
	require.NoError(t, err)
	rep, err := Analyze(inputs, DefaultPrices())
	require.NoError(t, err)
	rep.Skipped = problems
	return rep, problems, exp
}

func TestCraftedResultsMatchSchema(t *testing.T) {
	paths, _ := filepath.Glob("testdata/results/*_[0-9].json")
	paths = append(paths, "testdata/results/nvd_megatron_qwen.json", "testdata/results/amd_primus_qwen.json")
	require.GreaterOrEqual(t, len(paths), 10)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		assert.NoError(t, result.Validate(data), p)
	}
}

func TestGoldenNumbers(t *testing.T) {
	rep, problems, exp := loadGolden(t)
	for df, q := range exp.TQuantiles {
		d, err := strconv.ParseFloat(df, 64)
		require.NoError(t, err)
		sig3(t, q, tQuantile(0.975, d), "t quantile df="+df)
	}
	byName := map[string]*Group{}
	for _, g := range rep.Groups {
		byName[g.Label+"|"+g.ModelLabel] = g
	}
	require.Len(t, rep.Groups, len(exp.Groups), "groups: %v", keys(byName))
	for name, e := range exp.Groups {
		g := byName[name]
		require.NotNil(t, g, "group %s missing; have %v", name, keys(byName))
		assert.Equal(t, e.N, g.TPS.N, name)
		sig3(t, e.TPSMean, g.TPS.Mean, name+" tokens/s/GPU")
		sig3(t, e.StepMean, g.StepTime.Mean, name+" step mean")
		sig3(t, e.StepMedianJ, g.StepMedian, name+" step median")
		sig3(t, e.StepP10J, g.StepP10, name+" step p10")
		sig3(t, e.StepP90J, g.StepP90, name+" step p90")
		require.NotNil(t, g.TFLOPs, name)
		sig3(t, e.TFLOPs, *g.TFLOPs, name+" TFLOP/s")
		sig3(t, e.MFU, *g.MFU, name+" MFU")
		require.NotNil(t, g.TokensPerWh, name)
		sig3(t, e.TokensPerWh, *g.TokensPerWh, name+" tokens/Wh")
		require.NotNil(t, g.CostPer1T, name)
		sig3(t, e.CostPer1T, *g.CostPer1T, name+" cost")
		sig3(t, e.Days1T, g.DaysFor1T, name+" days")
		if e.TPSHalf != nil {
			require.True(t, g.TPS.HasCI, name)
			sig3(t, *e.TPSSD, g.TPS.SD, name+" SD")
			sig3(t, *e.TPSHalf, g.TPS.Half, name+" CI half-width")
		} else {
			assert.False(t, g.TPS.HasCI, "%s: a single run must not get an interval", name)
		}
		if e.TPSMLPerf != nil {
			require.NotNil(t, g.TPS.MLPerf, name)
			sig3(t, *e.TPSMLPerf, *g.TPS.MLPerf, name+" MLPerf mean")
		} else {
			assert.Nil(t, g.TPS.MLPerf, name)
		}
	}
	for _, e := range exp.Speedups {
		var found *Comparison
		for _, m := range rep.Models {
			for i := range m.Headlines {
				c := &m.Headlines[i]
				if m.Label == e.Model && c.Faster.Label == e.Faster && c.Slower.Label == e.Slower {
					found = c
				}
			}
		}
		require.NotNil(t, found, "headline %s %s vs %s", e.Model, e.Faster, e.Slower)
		sig3(t, e.Ratio, found.Ratio.Value, e.Model+" speedup")
		assert.Equal(t, e.Identical, found.Identical, e.Model)
		if e.Half != nil {
			require.True(t, found.Ratio.HasCI)
			sig3(t, *e.Half, found.Ratio.Half, e.Model+" speedup half-width")
			sig3(t, *e.DF, found.Ratio.DF, e.Model+" speedup df")
		} else {
			assert.False(t, found.Ratio.HasCI, e.Model)
		}
	}
	for _, e := range exp.LossParity {
		var lp *LossParity
		for _, m := range rep.Models {
			if m.Label == e.Model && len(m.Parity) > 0 {
				lp = &m.Parity[0]
			}
		}
		require.NotNil(t, lp, e.Model)
		sig3(t, e.MaxGap, lp.MaxGap, e.Model+" loss gap")
		sig3(t, e.TailGap, lp.TailGap, e.Model+" last-10% loss gap")
		assert.Equal(t, e.Steps, lp.Steps)
		assert.Equal(t, e.Diverged, lp.Diverged)
	}
	var errs [][2]string
	for _, e := range rep.Errors {
		errs = append(errs, [2]string{filepath.Base(e.Source), e.Name})
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i][0]+errs[i][1] < errs[j][0]+errs[j][1] })
	assert.Equal(t, exp.Errors, dedupe(errs))
	var skipped [][2]string
	for _, p := range problems {
		skipped = append(skipped, [2]string{filepath.Base(p.Source), p.Kind})
	}
	sort.Slice(skipped, func(i, j int) bool { return skipped[i][0] < skipped[j][0] })
	assert.Equal(t, exp.Skipped, skipped)
}

func dedupe(xs [][2]string) [][2]string {
	var out [][2]string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

func keys(m map[string]*Group) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestGoldenReport(t *testing.T) {
	rep, _, _ := loadGolden(t)
	var md, con bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	rep.Console(&con)
	for name, got := range map[string][]byte{"report.md": md.Bytes(), "console.txt": con.Bytes()} {
		path := filepath.Join("testdata", "golden", name)
		if *update {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, got, 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err, "run go test ./compare -update to create it")
		assert.Equal(t, string(want), string(got), name)
	}
	s := md.String()
	assert.Contains(t, s, "MI300X Primus vs H100 NeMo, Llama 3.1 8B: 1.30× ± ")
	assert.Contains(t, s, NotIdentical)
	assert.Contains(t, s, "mfu_above_100_percent")
	for _, in := range rep.Inputs {
		assert.Contains(t, s, in.Fingerprint, "every input's fingerprint is in the report")
	}
	assert.True(t, strings.Contains(s, "old-suite"))
}
