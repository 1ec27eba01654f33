package main

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

	"github.com/rivalbench/rival/frameworks/conformance"
)

func rivalConform(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no folder", nil, 2, "usage: rival-conform"},
		{"two folders", []string{"a", "b"}, 2, "usage: rival-conform"},
		{"unknown family", []string{"-families", "gpt-proxy", "-upstream", "/u", t.TempDir()}, 2, `no family "gpt-proxy"`},
		{"no trees", []string{"-upstream", "", t.TempDir()}, 1, "RIVAL_UPSTREAM_DIR"},
		{"bad device", []string{"-device", "tpu", "-upstream", "/u", t.TempDir()}, 1, `device "tpu"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := rivalConform(t, c.args...)
			assert.Equal(t, c.code, code)
			assert.Contains(t, errs, c.want)
		})
	}
}

// TestGPUPlan: -gpu plans the conformance on CUDA in bf16 and 20 training steps of fsdp and
// TorchTitan per family; the plan names every run run.sh starts.
func TestGPUPlan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpu")
	code, out, errs := rivalConform(t, "-gpu", "-prepare", "-families", "llama-proxy", "-upstream", "/trees", "-repo", filepath.Join("..", ".."), dir)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "11 runs planned")
	b, err := os.ReadFile(filepath.Join(dir, conformance.PlanFile))
	require.NoError(t, err)
	var p conformance.Plan
	require.NoError(t, json.Unmarshal(b, &p))
	assert.Equal(t, "cuda", p.Device)
	assert.Equal(t, "bf16", p.DType)
	assert.Equal(t, conformance.BF16Tolerance, p.Tolerance)
	var kinds []string
	for _, r := range p.Runs {
		kinds = append(kinds, r.Kind+" "+r.Name)
	}
	assert.Equal(t, []string{"conform llama-proxy/fsdp", "conform llama-proxy/mega", "conform llama-proxy/nemo", "conform llama-proxy/prim",
		"conform llama-proxy/titan", "conform llama-proxy/previous/mega", "conform llama-proxy/previous/nemo", "conform llama-proxy/previous/prim",
		"conform llama-proxy/previous/titan", "train llama-proxy/fsdp training", "train llama-proxy/titan training"}, kinds,
		"the GPU check runs both stacks against one fsdp reference")
	sh, err := os.ReadFile(filepath.Join(dir, conformance.ScriptFile))
	require.NoError(t, err)
	assert.Contains(t, string(sh), "RIVAL_CONFORM_DEVICE=cuda RIVAL_CONFORM_DTYPE=bf16")
	assert.Contains(t, string(sh), "'--train-iters' '20'")
	assert.Contains(t, string(sh), "'/trees/torchtitan-v0.2.2'", "the current stack's TorchTitan")
	assert.Contains(t, string(sh), "'/trees/torchtitan-v0.2.0'", "and the previous one's")
	assert.Contains(t, string(sh), "'/trees/bridge-v0.3.0' '/trees/megatron-b0cc2706'")
	toml, err := os.ReadFile(filepath.Join(dir, "train", "llama-proxy", "titan", "rival_titan.toml"))
	require.NoError(t, err)
	assert.Contains(t, string(toml), "steps = 20")
	assert.Contains(t, string(toml), `mixed_precision_param = "bfloat16"`)

	// A second plan into the same folder replaces the first; a folder of other files is refused.
	code, _, errs = rivalConform(t, "-prepare", "-families", "llama-proxy", "-upstream", "/trees", "-repo", filepath.Join("..", ".."), dir)
	require.Equal(t, 0, code, errs)
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "notes.txt"), nil, 0o644))
	code, _, errs = rivalConform(t, "-prepare", "-upstream", "/trees", other)
	assert.Equal(t, 1, code)
	assert.Contains(t, errs, "name a new or empty folder")
}

// TestCollectOfAPlanThatDidNotRun: -collect reads what ran; a plan whose runs never ran fails,
// naming each.
func TestCollectOfAPlanThatDidNotRun(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := rivalConform(t, "-prepare", "-families", "llama-proxy", "-upstream", "/trees", "-repo", filepath.Join("..", ".."), dir)
	require.Equal(t, 0, code, errs)
	code, out, _ := rivalConform(t, "-collect", dir)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "llama-proxy/mega FAILED: did not run")
	assert.True(t, strings.HasSuffix(strings.TrimSpace(out), filepath.Join(dir, conformance.ReportFile)))
}
