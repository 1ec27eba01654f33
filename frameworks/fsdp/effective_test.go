package fsdp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/internal/testlevel"
)

// The fsdp trainer's effective configuration (train.py --check, the launch's preflight) is read back
// from the decoder, optimizer and learning rates the trainer itself builds, and equals Rival's workload
// field by field on every fsdp cell the registry accepts, in torch 1.13 (Debian 12) and 2.6 (Debian 13).

const trixieImage = "rival-test/torch-base:trixie" // container/testdata/make-torch-base.sh

var (
	torchOnce    sync.Once
	torchMissing string
)

func needTorch(t *testing.T) {
	t.Helper()
	torchOnce.Do(func() {
		if out, err := exec.Command(fsdp.DefaultPython, "-c", "import torch").CombinedOutput(); err != nil {
			torchMissing = strings.TrimSpace(string(out))
		}
	})
	if torchMissing != "" {
		t.Skipf("%s cannot import torch (apt-get install python3-torch python3-numpy): %s", fsdp.DefaultPython, torchMissing)
	}
}

func testFair() core.Fair {
	return core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, TP: 1, PP: 1, DP: 8, TrainIters: 500, WarmupSteps: 50,
		LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, AdamEps: 1e-8, Precision: core.BF16}
}

func testHost(platform string, n int) hw.Host {
	h := hw.Host{Platform: platform}
	for i := 0; i < n; i++ {
		h.GPUs = append(h.GPUs, hw.GPU{Index: i})
	}
	return h
}

func fsdpRequest(platform, model string) core.Request {
	f, n := testFair(), 8
	if platform == hw.PlatformCPU {
		n, f.DP, f.Precision = 0, 1, core.FP32
	}
	return core.Request{
		Platform: platform, Framework: core.FSDP, Model: model, Fair: f, Host: testHost(platform, n),
		DataPrefix: "/data/" + model + "/train_text_document", DataCacheDir: "/data/cache/3f2a9c1d",
		TokenizerPath: "/data/tokenizers/" + model, OutputDir: "/output/" + platform + "-fsdp-" + model,
	}
}

// cellVariants change config.env's recipe; refused is the knob the registry's refusal must name ("" when
// it accepts the cell; a proxy model may also be refused for its 4096 positions).
var cellVariants = []struct {
	name    string
	set     func(r *core.Request)
	refused string
}{
	{"base", func(*core.Request) {}, ""},
	{"fp32", func(r *core.Request) { r.Fair.Precision = core.FP32 }, ""},
	{"bf16", func(r *core.Request) { r.Fair.Precision = core.BF16 }, ""},
	{"fp8", func(r *core.Request) { r.Fair.Precision = core.FP8 }, "fp8"},
	{"TP2", func(r *core.Request) { r.Fair.TP, r.Fair.DP = 2, r.Fair.DP/2 }, "TP"},
	{"PP2", func(r *core.Request) { r.Fair.PP, r.Fair.DP = 2, r.Fair.DP/2 }, "PP"},
	{"MBS2-GA4", func(r *core.Request) { r.Fair.MBS, r.Fair.GA = 2, 4 }, ""},
	{"no-warmup", func(r *core.Request) { r.Fair.WarmupSteps = 0 }, ""},
	{"eps-wd-betas", func(r *core.Request) {
		r.Fair.AdamEps, r.Fair.WeightDecay, r.Fair.Beta1, r.Fair.Beta2, r.Fair.LR, r.Fair.MinLR = 1e-6, 0.05, 0.85, 0.99, 1e-4, 1e-6
	}, ""},
	{"no-weight-decay", func(r *core.Request) { r.Fair.WeightDecay = 0 }, ""},
	{"SL8192", func(r *core.Request) { r.Fair.SL = 8192 }, ""}, // Mistral's 4096 window masks at 8192
	{"two-nodes", func(r *core.Request) { r.NNodes, r.Fair.DP = 2, 2*r.Fair.DP }, ""},
}

var cellModels = []string{"llama", "qwen", "mistral", "llama-proxy", "qwen-proxy", "mistral-proxy"}

// cell is one accepted launch and the workload it must build.
type cell struct {
	name   string
	launch core.Launch
	want   effective.Config
}

// acceptedCells builds every fsdp launch of platforms × models × variants, checks that the refused
// ones are refused with the reason, and returns the others.
func acceptedCells(t *testing.T) []cell {
	var cells []cell
	for _, platform := range []string{hw.PlatformAMD, hw.PlatformNVIDIA, hw.PlatformCPU} {
		for _, m := range cellModels {
			for _, v := range cellVariants {
				name := platform + "/" + m + "/" + v.name
				r := fsdpRequest(platform, m)
				v.set(&r)
				if platform == hw.PlatformCPU && r.NNodes > 1 {
					continue // CPU runs are one node here
				}
				l, err := frameworks.Build(r)
				if v.refused != "" {
					require.Error(t, err, name)
					assert.Contains(t, err.Error(), v.refused, name)
					continue
				}
				if err != nil && strings.HasSuffix(m, "-proxy") && strings.Contains(err.Error(), "positions") {
					continue // a proxy's 4096 positions at SL 8192, refused with the reason
				}
				require.NoError(t, err, name)
				require.NotNil(t, l.Preflight, name)
				want, err := effective.Parse(l.Workload)
				require.NoError(t, err, name)
				cells = append(cells, cell{name: name, launch: l, want: want})
			}
		}
	}
	require.NotEmpty(t, cells)
	return cells
}

// cellsJSON is the cells driver's input: each preflight's argv after the script, and its environment.
func cellsJSON(t *testing.T, cells []cell) []byte {
	type in struct {
		Argv []string          `json:"argv"`
		Env  map[string]string `json:"env"`
	}
	var list []in
	for _, c := range cells {
		cmd := c.launch.Preflight.Command
		require.Equal(t, "train.py", filepath.Base(cmd[1]), c.name)
		require.Equal(t, "--check", cmd[len(cmd)-1], c.name)
		list = append(list, in{Argv: cmd[2:], Env: c.launch.Preflight.Env})
	}
	b, err := json.Marshal(list)
	require.NoError(t, err)
	return b
}

// splitCells splits the driver's output into each cell's lines and exit code.
func splitCells(t *testing.T, out string, n int) ([][]string, []int) {
	lines, codes := make([][]string, n), make([]int, n)
	cur := -1
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "rival-cell "); ok {
			i, err := strconv.Atoi(v)
			require.NoError(t, err)
			cur = i
			continue
		}
		if v, ok := strings.CutPrefix(l, "rival-exit "); ok && cur >= 0 {
			codes[cur], _ = strconv.Atoi(v)
			continue
		}
		if cur >= 0 {
			lines[cur] = append(lines[cur], l)
		}
	}
	require.Equal(t, n-1, cur, "every cell ran:\n%s", out)
	return lines, codes
}

// checkCells asserts every cell's read-back equals its workload, every field read.
func checkCells(t *testing.T, cells []cell, out, torch string) {
	lines, codes := splitCells(t, out, len(cells))
	for i, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, 0, codes[i], strings.Join(lines[i], "\n"))
			got, found, err := effective.FromLines(lines[i])
			require.NoError(t, err)
			require.True(t, found, strings.Join(lines[i], "\n"))
			assert.Empty(t, got.Unread)
			assert.NoError(t, effective.CheckAgainst(core.FSDP, got, c.want))
			assert.Contains(t, strings.Join(lines[i], "\n"), "preflight ok: fsdp train.py built the decoder on the meta device")
			assert.Contains(t, strings.Join(lines[i], "\n"), "(torch "+torch)
		})
	}
}

func writeCells(t *testing.T, cells []cell) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, fsdp.ScriptName), fsdp.Script(), 0o644))
	driver, err := os.ReadFile("testdata/check/cells.py")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cells.py"), driver, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cells.json"), cellsJSON(t, cells), 0o644))
	return dir
}

// Torch 1.13 (Debian 12's, the CPU demo's): every accepted cell.
func TestCheckEveryCellTorch113(t *testing.T) {
	needTorch(t)
	cells := acceptedCells(t)
	dir := writeCells(t, cells)
	cmd := exec.Command(fsdp.DefaultPython, filepath.Join(dir, "cells.py"), filepath.Join(dir, fsdp.ScriptName), filepath.Join(dir, "cells.json"))
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	checkCells(t, cells, string(out), "1.13")
}

// Torch 2.6 (Debian 13's, in the trixie torch base image): every accepted cell.
func TestCheckEveryCellTorch26(t *testing.T) {
	stop := t.Skipf
	if os.Getenv("RIVAL_TEST_TORCH_IMAGE") == "1" {
		stop = t.Fatalf
	}
	ctx := context.Background()
	e, err := container.Connect(ctx)
	if err != nil {
		stop("no Docker daemon, so the check cannot run in %s: %v", trixieImage, err)
		return
	}
	defer e.Close()
	if _, err := e.ImageID(ctx, trixieImage); err != nil {
		stop("image %s is missing: build it with sudo SUITE=trixie bash container/testdata/make-torch-base.sh (%v)", trixieImage, err)
		return
	}
	cells := acceptedCells(t)
	dir := writeCells(t, cells)
	var lines []string
	code, err := e.Run(ctx, container.RunSpec{
		Image: trixieImage, RunID: fmt.Sprintf("fsdp-check-%d", time.Now().UnixNano()),
		Cmd:     []string{"python3", "/rival/run/cells.py", "/rival/run/" + fsdp.ScriptName, "/rival/run/cells.json"},
		WorkDir: "/rival/run", Network: "none", Platform: container.PlatformCPU, Timeout: 8 * time.Minute,
		Mounts: []container.Mount{{Source: dir, Target: "/rival/run", ReadOnly: true}},
		Env:    []string{"PYTHONDONTWRITEBYTECODE=1"},
	}, func(l string) { lines = append(lines, l) })
	if _, exited := err.(*container.ExitError); err != nil && !exited {
		require.NoError(t, err, strings.Join(lines, "\n"))
	}
	require.Equal(t, 0, code, strings.Join(lines, "\n"))
	checkCells(t, cells, strings.Join(lines, "\n"), "2.6")
}

// Negative controls: a launch or a trainer that builds something else is reported, field by field, with
// the trainer's value and Rival's. Each runs the preflight command itself (the real entry point).
func TestCheckNegativeControls(t *testing.T) {
	needTorch(t)
	dropArg := func(flag string, n int) func(argv []string) []string {
		return func(argv []string) []string {
			for i, a := range argv {
				if a == flag {
					return append(append([]string(nil), argv[:i]...), argv[i+n:]...)
				}
			}
			t.Fatalf("no %s in %v", flag, argv)
			return nil
		}
	}
	setArg := func(flag, v string) func(argv []string) []string {
		return func(argv []string) []string {
			out := append([]string(nil), argv...)
			for i, a := range out {
				if a == flag {
					out[i+1] = v
					return out
				}
			}
			t.Fatalf("no %s in %v", flag, argv)
			return nil
		}
	}
	for i, tc := range []struct {
		name, model string
		sl, warmup  int // warmup -1: WARMUP_STEPS=0
		argv        func([]string) []string
		script      [2]string // replace script[0] by script[1] in train.py
		run         []string  // appended to the run's command; the preflight is derived from it
		want        []string  // the differences, as effective.Diff.String writes them
	}{
		// A drift in the run's command alone: the preflight is the run's own argv (fsdp.Preflight).
		{name: "--beta2 0.999 appended to the run's command", model: "llama", run: []string{"--beta2", "0.999"},
			want: []string{"adam_beta2: the framework built 0.999, Rival's workload is 0.95"}},
		{name: "qwen with the trainer's default eps", model: "qwen", argv: dropArg("--norm-eps", 2),
			want: []string{"norm_eps: the framework built 1e-05, Rival's workload is 1e-06"}},
		{name: "another AdamW eps", model: "llama", argv: setArg("--adam-eps", "1e-06"),
			want: []string{"adam_eps: the framework built 1e-06, Rival's workload is 1e-08"}},
		{name: "mistral at SL 8192 without its window", model: "mistral", sl: 8192, argv: dropArg("--window", 2),
			want: []string{"window: the framework built 0, Rival's workload is 4096"}},
		{name: "qwen without QKV bias", model: "qwen", argv: dropArg("--qkv-bias", 1),
			want: []string{"qkv_bias: the framework built false, Rival's workload is true"}},
		{name: "tied embeddings", model: "llama", argv: func(a []string) []string { return append(a[:len(a)-1:len(a)-1], "--tie-embeddings", "--check") },
			want: []string{"tied_embeddings: the framework built true, Rival's workload is false"}},
		{name: "decay on norms", model: "llama",
			script: [2]string{`n.endswith(("norm.weight", ".bias"))`, `n.endswith(".bias")`},
			want:   []string{"no_decay: the framework built bias, Rival's workload is bias, norm"}},
		{name: "decay on everything", model: "llama",
			script: [2]string{`n.endswith(("norm.weight", ".bias"))`, `False`},
			want:   []string{"no_decay: the framework built none, Rival's workload is bias, norm"}},
		{name: "no residual init scaling", model: "llama",
			script: [2]string{`std = args.init_std / math.sqrt(2 * args.layers)`, `std = args.init_std`},
			want:   []string{"residual_init_std: the framework built 0.02, Rival's workload is 0.0025"}},
		{name: "iteration i trains with the rate after i steps", model: "llama",
			script: [2]string{`return lr_at(args, it - 1)`, `return lr_at(args, it)`},
			want: []string{"lr: the framework built unread (the rates the training loop sets for iterations 1, 2, 3 (6e-06, 1.2e-05, 1.8e-05) fit no schedule of linear warmup from 0 then decay), Rival's workload is 0.0003",
				"lr_decay_iters: the framework built unread (not reported), Rival's workload is 500",
				"lr_decay_style: the framework built unread (not reported), Rival's workload is cosine",
				"lr_warmup_init: the framework built 5.999999999999999e-06, Rival's workload is 0",
				"lr_warmup_iters: the framework built unread (not reported), Rival's workload is 50",
				"min_lr: the framework built unread (not reported), Rival's workload is 3e-05"}},
		{name: "no warmup: iteration i trains with the rate after i steps", model: "llama", warmup: -1,
			script: [2]string{`return lr_at(args, it - 1)`, `return lr_at(args, it)`},
			want: []string{"lr: the framework built unread (the rates the training loop sets for iterations 1, 2, 3 (0.000299997, 0.000299989, 0.000299976) fit no schedule of linear warmup from 0 then decay), Rival's workload is 0.0003",
				"lr_decay_iters: the framework built unread (not reported), Rival's workload is 500",
				"lr_decay_style: the framework built unread (not reported), Rival's workload is cosine",
				"lr_warmup_iters: the framework built unread (not reported), Rival's workload is 0",
				"min_lr: the framework built unread (not reported), Rival's workload is 3e-05"}},
		{name: "another clip", model: "llama", script: [2]string{"CLIP_GRAD = 1.0", "CLIP_GRAD = 0.5"},
			want: []string{"clip_grad: the framework built 0.5, Rival's workload is 1"}},
		{name: "another rope base", model: "llama", argv: setArg("--rope-theta", "10000"),
			want: []string{"rope_theta: the framework built 10000, Rival's workload is 500000"}},
		{name: "another rope scaling factor", model: "llama", argv: setArg("--rope-scaling-factor", "4"),
			want: []string{"rope_scaling: the framework built 4, Rival's workload is 8"}},
		// The model computes its angles from a fixed base whatever --rope-theta says: the arguments
		// are right, the angles are not.
		{name: "the model ignores --rope-theta", model: "llama",
			script: [2]string{"inv = 1.0 / args.rope_theta ** (", "inv = 1.0 / 10000.0 ** ("},
			want: []string{
				"rope_scaling: the framework built unread (the model's rotary angles differ from the declared scaling in 63 bands), Rival's workload is 8",
				"rope_scaling_high_freq_factor: the framework built unread (the model's rotary angles differ from the declared scaling in 63 bands), Rival's workload is 4",
				"rope_scaling_low_freq_factor: the framework built unread (the model's rotary angles differ from the declared scaling in 63 bands), Rival's workload is 1",
				"rope_scaling_original_positions: the framework built unread (the model's rotary angles differ from the declared scaling in 63 bands), Rival's workload is 8192",
				"rope_theta: the framework built unread (band 1 of the model's rotary angles is 0.86596432, θ 500000 with scaling (8.0, 1.0, 4.0, 8192) gives 0.814617234), Rival's workload is 500000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each control starts PyTorch; a plain run keeps one of each kind: a dropped argument, a
			// changed argument, an edited trainer, an edited schedule.
			testlevel.Case(t, i, 0, 1, 12, 6, 9)
			r := fsdpRequest(hw.PlatformCPU, tc.model)
			if tc.sl > 0 {
				r.Fair.SL = tc.sl
			}
			if tc.warmup < 0 {
				r.Fair.WarmupSteps = 0
			}
			l, err := frameworks.Build(r)
			require.NoError(t, err)
			want, err := effective.Parse(l.Workload)
			require.NoError(t, err)
			dir := t.TempDir()
			script := string(fsdp.Script())
			if tc.script[0] != "" {
				require.Equal(t, 1, strings.Count(script, tc.script[0]), "the control's edit applies once")
				script = strings.Replace(script, tc.script[0], tc.script[1], 1)
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, fsdp.ScriptName), []byte(script), 0o644))
			if tc.run != nil {
				run := l
				run.Command = append(append([]string(nil), l.Command...), tc.run...)
				pf := l.Preflight
				l.Preflight, err = fsdp.Preflight(run, fsdp.Launch{Command: pf.Command[:2], Env: pf.Env, WorkDir: pf.WorkDir})
				require.NoError(t, err)
			}
			argv := l.Preflight.Command[2:]
			if tc.argv != nil {
				argv = tc.argv(argv)
			}
			cmd := exec.Command(l.Preflight.Command[0], append([]string{filepath.Join(dir, fsdp.ScriptName)}, argv...)...)
			cmd.Env = os.Environ()
			for k, v := range l.Preflight.Env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, string(out))
			got, found, err := effective.FromLines(strings.Split(string(out), "\n"))
			require.NoError(t, err)
			require.True(t, found, string(out))
			err = effective.CheckAgainst(core.FSDP, got, want)
			require.Error(t, err)
			var ee *effective.Error
			require.ErrorAs(t, err, &ee)
			var diffs []string
			for _, d := range ee.Diffs {
				diffs = append(diffs, d.String())
			}
			sort.Strings(diffs)
			sort.Strings(tc.want)
			assert.Equal(t, tc.want, diffs)
		})
	}
}
