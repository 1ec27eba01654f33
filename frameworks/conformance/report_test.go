package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stepLine is a runner's line for one step.
func stepLine(fw string, step int, loss float64) string {
	b, _ := json.Marshal(Step{Framework: fw, Step: step, Loss: loss, GradNorm: 1, LR: 1e-4,
		Grads: map[string]float64{"embedding": 0.5}, Layout: map[string]string{"embedding": "float32[8,4]"}})
	return LinePrefix + string(b)
}

func TestCollectComparesPairsAndCountsFailures(t *testing.T) {
	cases := []struct {
		name      string
		lossB     float64 // b's loss at step 3
		exitB     string  // b's exit status file ("" for none)
		dtype     string
		wantOK    bool
		wantError string
		failed    int
	}{
		{"equal", 2, "0", FP32, true, "", 0},
		{"inside fp32's tolerance", 2 * (1 + 1e-6), "0", FP32, true, "", 0},
		{"past fp32's tolerance", 2 * (1 + 1e-4), "0", FP32, false, "step 3, loss", 1},
		{"past fp32's but inside bf16's", 2 * (1 + 1e-4), "0", BF16, true, "", 0},
		{"b failed", 2, "1", FP32, false, "a run of the pair failed", 2},
		{"b never ran", 2, "", FP32, false, "a run of the pair failed", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := Plan{Device: DeviceCPU, DType: c.dtype, Tolerance: ToleranceFor(c.dtype),
				Runs:  []Run{{Name: "m/a", Kind: KindConform}, {Name: "m/b", Kind: KindConform}},
				Pairs: []Pair{{Model: "m", A: "a", B: "b"}}}
			b, err := json.Marshal(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, PlanFile), b, 0o644))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, OutDir), 0o755))
			for i, fw := range []string{"a", "b"} {
				var lines []string
				for s := 1; s <= Steps; s++ {
					loss := 2.0
					if fw == "b" && s == 3 {
						loss = c.lossB
					}
					lines = append(lines, stepLine(fw, s, loss))
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, OutDir, fmt.Sprintf("%d.txt", i)), []byte(strings.Join(lines, "\n")), 0o644))
				rc := "0"
				if fw == "b" {
					rc = c.exitB
				}
				if rc != "" {
					require.NoError(t, os.WriteFile(filepath.Join(dir, OutDir, fmt.Sprintf("%d.rc", i)), []byte(rc+"\n"), 0o644))
				}
			}
			rep, err := Collect(dir)
			require.NoError(t, err)
			require.Len(t, rep.Pairs, 1)
			assert.Equal(t, c.wantOK, rep.Pairs[0].OK, rep.Pairs[0].Error)
			if c.wantError != "" {
				assert.Contains(t, rep.Pairs[0].Error, c.wantError)
			}
			assert.Equal(t, c.failed, rep.Failed)
			require.NoError(t, rep.Write(dir))
			var back map[string]any
			b, err = os.ReadFile(filepath.Join(dir, ReportFile))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(b, &back), "report.json is JSON")
			last := rep.Summary()[len(rep.Summary())-1]
			if c.failed == 0 {
				assert.Equal(t, "conformance: all agree", last)
			} else {
				assert.Equal(t, fmt.Sprintf("conformance: %d failures", c.failed), last)
			}
		})
	}
}

func TestCollectNamesAMissingPlan(t *testing.T) {
	_, err := Collect(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), PlanFile)
}
