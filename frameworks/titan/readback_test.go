package titan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// torchImage is where titan's read-back runs with real torch 2.6.
const torchImage = upstreamtest.TorchImage

// readbackCells are the parallelism and precision columns every accepted titan cell is read back in.
var readbackCells = []struct {
	name string
	edit func(p *core.Plan)
}{
	{"base", func(*core.Plan) {}},
	{"TP2", func(p *core.Plan) { p.Fair.TP, p.Fair.DP = 2, 4; p.Fair.GBS = p.Fair.MBS * p.Fair.GA * 4 }},
	{"TP4-PP2", func(p *core.Plan) { p.Fair.TP, p.Fair.PP, p.Fair.DP = 4, 2, 1; p.Fair.GBS = p.Fair.MBS * p.Fair.GA }},
	{"TP4-PP2-fp32", func(p *core.Plan) {
		p.Fair.TP, p.Fair.PP, p.Fair.DP, p.Fair.Precision = 4, 2, 1, core.FP32
		p.Fair.GBS = p.Fair.MBS * p.Fair.GA
	}},
	{"TP2-PP2", func(p *core.Plan) { p.Fair.TP, p.Fair.PP, p.Fair.DP = 2, 2, 2; p.Fair.GBS = p.Fair.MBS * p.Fair.GA * 2 }},
	{"fp8", func(p *core.Plan) { p.Fair.Precision = core.FP8 }},
	{"fp32", func(p *core.Plan) { p.Fair.Precision = core.FP32 }},
	{"SL8192", func(p *core.Plan) { p.Fair.SL = 8192 }},
	{"two-nodes", func(p *core.Plan) {
		p.NNodes, p.World, p.Fair.DP = 2, 16, 16
		p.Fair.GBS = p.Fair.MBS * p.Fair.GA * 16
	}},
}

// readbackCell is one launch whose preflight runs in the image.
type readbackCell struct {
	name string
	plan core.Plan
	l    core.Launch
	// edit changes the launch's files before the preflight runs (the negative controls).
	edit func(t *testing.T, files map[string][]byte)
}

// engineWithTorchImage returns a Docker engine that has torchImage (upstreamtest.TorchEngine).
func engineWithTorchImage(t *testing.T) *container.Engine { return upstreamtest.TorchEngine(t) }

// cellRun is one preflight as testdata/readback_many.py runs it: `cd WorkDir && env Env... Argv...`
// with its output and exit code written to Out and RC.
type cellRun struct {
	WorkDir string            `json:"workdir"`
	Env     map[string]string `json:"env"`
	Argv    []string          `json:"argv"`
	Out     string            `json:"out"`
	RC      string            `json:"rc"`
}

// runReadbacks writes every cell's launch files under one folder and runs each preflight as the
// launch states it (command, working directory, environment) in one container of torchImage, with
// the pinned trees mounted where the preflight's tree variables point; testdata/readback_many.py
// imports torch and TorchTitan once per tree and forks one child per launch, one per CPU at a time.
// extra are further folders the cells read (a dataset and its sample order). It returns each cell's
// output lines and exit code.
func runReadbacks(t *testing.T, cells []readbackCell, extra ...container.Mount) (map[string][]string, map[string]int) {
	t.Helper()
	trees := upstreamtest.Get(t)
	e := engineWithTorchImage(t)
	const upstream, root = "/upstream", "/rival/cells"
	host := t.TempDir()
	var runs []cellRun
	for i, c := range cells {
		files := map[string][]byte{}
		for n, b := range c.l.Files {
			files[n] = append([]byte(nil), b...)
		}
		if c.edit != nil {
			c.edit(t, files)
		}
		dir := filepath.Join(host, fmt.Sprint(i))
		for n, b := range files {
			p := filepath.Join(dir, filepath.FromSlash(n))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}
		pf := c.l.Preflight
		require.NotNil(t, pf, c.name)
		pin := pinOf(t, c.plan.Platform, c.plan.Stack)
		env := map[string]string{TreeEnv: path.Join(upstream, "torchtitan-"+pin.Version)}
		if pin.Primus {
			env[PrimusEnv] = path.Join(upstream, "primus-"+pin.PrimusTag)
		}
		for k, v := range pf.Env {
			env[k] = v
		}
		cellDir := path.Join(root, fmt.Sprint(i))
		runs = append(runs, cellRun{WorkDir: pf.WorkDir, Env: env, Argv: pf.Command,
			Out: cellDir + "/preflight-out.txt", RC: cellDir + "/preflight-rc.txt"})
	}
	b, err := json.Marshal(runs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(host, "cells.json"), b, 0o644))
	driver, err := os.ReadFile(filepath.Join("testdata", "readback_many.py"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(host, "readback_many.py"), driver, 0o644))
	spec := container.RunSpec{
		Image: torchImage, RunID: fmt.Sprintf("titan-readback-%d", time.Now().UnixNano()),
		Cmd:     []string{"python3", root + "/readback_many.py", root + "/cells.json"},
		Network: "none", Platform: container.PlatformCPU, Timeout: 30 * time.Minute,
		Mounts: append([]container.Mount{
			{Source: trees.Dir, Target: upstream, ReadOnly: true},
			{Source: host, Target: root},
		}, extra...),
	}
	var lines []string
	_, err = e.Run(context.Background(), spec, func(l string) { lines = append(lines, l) })
	var exit *container.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err, strings.Join(lines, "\n"))
	}
	out, codes := map[string][]string{}, map[string]int{}
	for i, c := range cells {
		b, err := os.ReadFile(filepath.Join(host, fmt.Sprint(i), "preflight-out.txt"))
		require.NoError(t, err, "%s: %s", c.name, strings.Join(lines, "\n"))
		out[c.name] = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		rc, err := os.ReadFile(filepath.Join(host, fmt.Sprint(i), "preflight-rc.txt"))
		require.NoError(t, err, c.name)
		codes[c.name], err = strconv.Atoi(strings.TrimSpace(string(rc)))
		require.NoError(t, err, c.name)
	}
	return out, codes
}

// readbackPlan is a cell's plan on a stack with the run folder under the container's cell folder.
func readbackPlan(t *testing.T, stack, platform, model string, i int) core.Plan {
	p := stackPlan(t, stack, platform, model)
	p.OutputDir = fmt.Sprintf("/rival/cells/%d", i)
	return p
}

// TestEffectiveConfigOfEveryCell runs titan's preflight (rival_titan_check.py: TorchTitan's
// ConfigManager on nvd, Primus's start-up path (PrimusRuntime) on amd, then the train spec with Rival's extension,
// the model on the meta device, its init, the optimizer groups and the LR schedule) on every cell
// titan accepts, each registry model × parallelism × precision on both platforms of both stacks and
// their pinned trees, and compares what TorchTitan built with the workload field by field
// (effective.Check).
func TestEffectiveConfigOfEveryCell(t *testing.T) {
	var cells []readbackCell
	refused := 0
	for _, stack := range core.StackNames {
		for _, platform := range []string{hw.PlatformNVIDIA, hw.PlatformAMD} {
			for _, model := range models.Names() {
				for _, v := range readbackCells {
					p := readbackPlan(t, stack, platform, model, len(cells))
					v.edit(&p)
					l, err := Build(p)
					name := stack + "/" + platform + "/" + model + "/" + v.name
					if err != nil {
						require.Error(t, check(p), "%s refused by something else than the framework's rules: %v", name, err)
						refused++
						continue
					}
					cells = append(cells, readbackCell{name: name, plan: p, l: l})
				}
			}
		}
	}
	require.Greater(t, len(cells), 60)
	require.Greater(t, refused, 0, "fp8 and PROFILE=1 are refused")
	out, codes := runReadbacks(t, cells)
	for _, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			lines := out[c.name]
			require.Equal(t, 0, codes[c.name], strings.Join(lines, "\n"))
			got, found, err := effective.FromLines(lines)
			require.NoError(t, err)
			require.True(t, found, strings.Join(lines, "\n"))
			assert.Empty(t, got.Unread)
			assert.NoError(t, effective.Check(core.Titan, c.plan, got))
		})
	}
}

// replaceIn returns an edit that replaces old with new in one of the launch's files, failing when
// old is not there (the control would otherwise test nothing).
func replaceIn(name, old, new string) func(t *testing.T, files map[string][]byte) {
	return func(t *testing.T, files map[string][]byte) {
		s := string(files[name])
		require.Contains(t, s, old, name)
		files[name] = []byte(strings.Replace(s, old, new, 1))
	}
}

// TestReadbackNegativeControls: a launch that differs from the workload is reported with the
// field, TorchTitan's value and Rival's: a wrong AdamW ε in the job config, TorchTitan's own
// optimizer builder (it decays every parameter), TorchTitan's own init, a wrong RMSNorm ε in the
// model shape, a constant phase before the decay (decay_ratio), TorchTitan's own LR schedule (one
// step ahead of Megatron's), and a warmup the job config changes.
func TestReadbackNegativeControls(t *testing.T) {
	type control struct {
		name string
		edit func(platform string) func(t *testing.T, files map[string][]byte)
		want []string
	}
	jobConfig := func(platform string) string {
		if platform == hw.PlatformNVIDIA {
			return TOMLName
		}
		return EXPName
	}
	sep := func(platform string) string {
		if platform == hw.PlatformNVIDIA {
			return " = "
		}
		return ": "
	}
	controls := []control{
		{"adam eps", func(pf string) func(*testing.T, map[string][]byte) {
			return replaceIn(jobConfig(pf), "eps"+sep(pf)+"1.0e-08", "eps"+sep(pf)+"1.0e-06")
		}, []string{"adam_eps: the framework built 1e-06, Rival's workload is 1e-08"}},
		{"TorchTitan's decay rule", func(string) func(*testing.T, map[string][]byte) {
			return replaceIn(ScriptName, "build_optimizers_fn=build_optimizers, ", "")
		}, []string{"no_decay: the framework built none, Rival's workload is bias, norm"}},
		{"TorchTitan's init", func(string) func(*testing.T, map[string][]byte) {
			return replaceIn(ScriptName, "model_cls=RivalTransformer,", "")
		}, []string{"embedding_init_std: the framework built 1, Rival's workload is 0.02",
			"output_init_std: the framework built 0.06", "residual_init_std: the framework built unread (differs by parameter"}},
		{"norm eps", func(string) func(*testing.T, map[string][]byte) {
			return replaceIn(ConfigName, `"norm_eps": 0.00001`, `"norm_eps": 0.000001`)
		}, []string{"norm_eps: the framework built 1e-06, Rival's workload is 1e-05"}},
		{"decay ratio", func(pf string) func(*testing.T, map[string][]byte) {
			indent := "\n"
			if pf == hw.PlatformAMD {
				indent = "\n        "
			}
			return replaceIn(jobConfig(pf), "min_lr_factor"+sep(pf)+"0.1", "min_lr_factor"+sep(pf)+"0.1"+indent+"decay_ratio"+sep(pf)+"0.5")
		}, []string{"lr_warmup_init: the framework built 5.999999999999999e-06, Rival's workload is 0",
			"lr_decay_style: the framework built unread (iteration 1 trains at 6e-06, Megatron's schedule (warm-up 50 from 0, cosine to 3e-05 at 500) at 0)"}},
		// TorchTitan's own schedule warms up one step ahead of Megatron's: iteration 1 at lr/warmup.
		{"TorchTitan's schedule", func(string) func(*testing.T, map[string][]byte) {
			return replaceIn(ScriptName, ", build_lr_schedulers_fn=build_lr_schedulers)", ")")
		}, []string{"lr_warmup_init: the framework built 5.999999999999999e-06, Rival's workload is 0",
			"lr_warmup_iters: the framework built unread (iteration 1 trains at 6e-06, Megatron's schedule (warm-up 50 from 0, cosine to 3e-05 at 500) at 0)"}},
		{"warmup", func(pf string) func(*testing.T, map[string][]byte) {
			return replaceIn(jobConfig(pf), "warmup_steps"+sep(pf)+"50", "warmup_steps"+sep(pf)+"20")
		}, []string{"lr_warmup_iters: the framework built 20, Rival's workload is 50"}},
		{"a window", func(string) func(*testing.T, map[string][]byte) {
			return replaceIn(ConfigName, `"window": 0`, `"window": 64`)
		}, []string{"window: the framework built 64, Rival's workload is 0"}},
		// The window read back is the one the model's mask function applies, not rival_titan.json's.
		{"a wider mask than declared", func(string) func(*testing.T, map[string][]byte) {
			return func(t *testing.T, files map[string][]byte) {
				replaceIn(ConfigName, `"window": 0`, `"window": 64`)(t, files)
				replaceIn(ScriptName, "return q_idx - kv_idx <= window", "return q_idx - kv_idx <= 2 * window")(t, files)
			}
		}, []string{"window: the framework built 128, Rival's workload is 0"}},
	}
	var cells []readbackCell
	for _, stack := range core.StackNames {
		for _, platform := range []string{hw.PlatformNVIDIA, hw.PlatformAMD} {
			for _, c := range controls {
				p := readbackPlan(t, stack, platform, "llama-proxy", len(cells))
				l, err := Build(p)
				require.NoError(t, err)
				cells = append(cells, readbackCell{name: stack + "/" + platform + "/" + c.name, plan: p, l: l, edit: c.edit(platform)})
			}
		}
	}
	out, codes := runReadbacks(t, cells)
	for i, c := range cells {
		want := controls[i%len(controls)].want
		t.Run(c.name, func(t *testing.T) {
			lines := out[c.name]
			require.Equal(t, 0, codes[c.name], strings.Join(lines, "\n"))
			got, found, err := effective.FromLines(lines)
			require.NoError(t, err)
			require.True(t, found, strings.Join(lines, "\n"))
			err = effective.Check(core.Titan, c.plan, got)
			require.Error(t, err)
			var ee *effective.Error
			require.ErrorAs(t, err, &ee)
			for _, w := range want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// ranOf is the "preflight ran:" object a preflight printed.
func ranOf(t *testing.T, lines []string) map[string]string {
	t.Helper()
	for _, l := range lines {
		if j, ok := strings.CutPrefix(l, "preflight ran: "); ok {
			var m map[string]string
			require.NoError(t, json.Unmarshal([]byte(j), &m), l)
			return m
		}
	}
	t.Fatalf("no preflight ran line:\n%s", strings.Join(lines, "\n"))
	return nil
}

// TestReadbackRunsPrimusPatches: the amd read-back goes through PrimusRuntime's own steps, so
// Primus's TorchTitan patches for the build_args and setup phases apply as they do before the
// trainer starts, and the preflight names them. The control is a model override in the experiment
// yaml (n_layers under the model section, which Primus's model_override patch applies to the train
// spec's model args): the read-back reports the layers the patched spec builds.
func TestReadbackRunsPrimusPatches(t *testing.T) {
	var cells []readbackCell
	for _, stack := range core.StackNames {
		for _, c := range []struct {
			name string
			edit func(t *testing.T, files map[string][]byte)
		}{
			{"as built", nil},
			{"model override", replaceIn(EXPName, "        flavor: \"llama-proxy\"\n", "        flavor: \"llama-proxy\"\n        n_layers: 3\n")},
		} {
			p := readbackPlan(t, stack, hw.PlatformAMD, "llama-proxy", len(cells))
			l, err := Build(p)
			require.NoError(t, err)
			cells = append(cells, readbackCell{name: stack + "/" + c.name, plan: p, l: l, edit: c.edit})
		}
	}
	out, codes := runReadbacks(t, cells)
	for _, c := range cells {
		lines := out[c.name]
		require.Equal(t, 0, codes[c.name], strings.Join(lines, "\n"))
		ran := ranOf(t, lines)
		assert.Empty(t, ran["primus_patches_failed"], c.name)
		for _, id := range []string{"torchtitan.logger", "torchtitan.model_override"} {
			assert.Contains(t, strings.Split(ran["primus_patches"], ","), id, c.name)
		}
		got, found, err := effective.FromLines(lines)
		require.NoError(t, err)
		require.True(t, found, strings.Join(lines, "\n"))
		err = effective.Check(core.Titan, c.plan, got)
		if strings.HasSuffix(c.name, "/as built") {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err)
		assert.Contains(t, err.Error(), "layers: the framework built 3, Rival's workload is 2")
	}
}

// The preflight is the run's own command: an override appended to the run's command after its job
// config reaches the check, which parses it as the launcher does. On amd Primus's runtime applies it
// and the read-back reports the sequence length it sets; on nvd TorchTitan's ConfigManager parses it
// with tyro, which the test image lacks, so the check stops the run naming the override.
func TestPreflightTakesTheRunsOverrides(t *testing.T) {
	var cells []readbackCell
	plans := map[string]core.Plan{}
	for _, stack := range core.StackNames {
		for _, platform := range []string{hw.PlatformNVIDIA, hw.PlatformAMD} {
			p := readbackPlan(t, stack, platform, "llama-proxy", len(cells))
			l, err := Build(p)
			require.NoError(t, err)
			l.Command = append(l.Command, "--training.seq_len", "1024")
			l.Preflight = Preflight(p, l)
			require.Equal(t, []string{"--", "--training.seq_len", "1024"}, l.Preflight.Command[len(l.Preflight.Command)-3:])
			cells = append(cells, readbackCell{name: stack + "/" + platform, plan: p, l: l})
			plans[stack+"/"+platform] = p
		}
	}
	out, codes := runReadbacks(t, cells)
	for _, stack := range core.StackNames {
		t.Run(stack+"/nvd", func(t *testing.T) {
			name := stack + "/nvd"
			assert.NotEqual(t, 0, codes[name])
			assert.Contains(t, strings.Join(out[name], "\n"), "cannot parse ['--training.seq_len', '1024']")
		})
		t.Run(stack+"/amd", func(t *testing.T) {
			name := stack + "/amd"
			lines := out[name]
			require.Equal(t, 0, codes[name], strings.Join(lines, "\n"))
			got, found, err := effective.FromLines(lines)
			require.NoError(t, err)
			require.True(t, found, strings.Join(lines, "\n"))
			err = effective.Check(core.Titan, plans[name], got)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "seq_len: the framework built 1024, Rival's workload is 2048")
		})
	}
}
