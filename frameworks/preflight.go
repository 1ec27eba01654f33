package frameworks

import (
	"path"
	"slices"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/prim"
)

// PreflightDir is where a launch's preflight files are written, relative to OutputDir.
const PreflightDir = "preflight"

// PrimusDirEnv names the environment variable that, when set, names the Primus tree the preflight
// reads instead of the image's.
const PrimusDirEnv = "RIVAL_PRIMUS_DIR"

// preflight returns the launch that checks l before it runs (mega and prim), and adds its files to l.
func preflight(p core.Plan, l *core.Launch) error {
	var args []string
	script := path.Join(p.OutputDir, PreflightDir, "preflight.py")
	megatronTrees := "$" + mega.DirEnv
	if d, err := mega.Dir(p); err == nil {
		megatronTrees += ":" + d
	}
	world := core.Int(p.World)
	switch l.Framework {
	case core.Mega:
		n := 0
		for i, a := range l.Command {
			if a == "--num-layers" { // the first of Megatron's own arguments (mega.Args)
				n = i
				break
			}
		}
		args = []string{"python3", script, "mega", megatronTrees, world}
		if l.Evaluation != "" {
			// It digests the held-out sequences with the wrapper file the run executes.
			args = append(args, "--held-out", path.Join(p.OutputDir, mega.Wrapper), p.HeldOutPath(), core.Int(p.Fair.EvalSamples))
		}
		args = append(append(args, "--"), l.Command[n:]...)
	case core.Prim:
		if b := primusBackendPath(l.Env); b != "" {
			megatronTrees = b // the tree the run's Primus trains with, not the image's default
		}
		args = []string{"python3", script, "prim", "$" + PrimusDirEnv + ":" + prim.Dir, megatronTrees, world, l.Env["EXP"]}
		// What the run's command passes after run_pretrain.sh reaches primus/cli/main.py as overrides.
		if i := slices.Index(l.Command, prim.Script); i >= 0 && i+1 < len(l.Command) {
			args = append(append(args, "--"), l.Command[i+1:]...)
		}
	default:
		return nil
	}
	if l.Files == nil {
		l.Files = map[string][]byte{}
	}
	for n, b := range facts.PreflightFiles() {
		l.Files[path.Join(PreflightDir, n)] = b
	}
	l.Files[path.Join(PreflightDir, core.KnobsFile)] = core.KnobsJSON()
	// The run's own environment, plus what run_pretrain.sh exports before training when unset.
	env := map[string]string{}
	for k, v := range l.Env {
		env[k] = v
	}
	if l.Framework == core.Prim && env["CUDA_DEVICE_MAX_CONNECTIONS"] == "" {
		env["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
	}
	env["PYTHONDONTWRITEBYTECODE"], env["RIVAL_DEVICE_CAPABILITY"] = "1", capability(p)
	l.Preflight = &core.Launch{
		Framework: l.Framework, Requested: l.Requested, Command: args, WorkDir: p.OutputDir, Env: env,
	}
	return nil
}

// primusBackendPath is the Megatron-LM tree a Primus run takes from its environment, as
// run_pretrain.sh and examples/megatron/prepare.py choose it: BACKEND_PATH when set (passed on as
// --backend_path), else MEGATRON_PATH in any letter case (the first such name in sorted order; an
// empty value falls back as in prepare.py), else "" (Primus's own third_party/Megatron-LM); a
// relative path is taken from Primus's folder, where run_pretrain.sh runs. prepare.py writes the choice into the patch file that
// becomes TRAIN_EXTRA_ARGS on the run's command line; an environment's TRAIN_EXTRA_ARGS itself is
// overwritten by run_pretrain.sh and never reaches the run.
func primusBackendPath(env map[string]string) string {
	if b := env["BACKEND_PATH"]; b != "" {
		if !path.IsAbs(b) {
			return path.Join(prim.Dir, b)
		}
		return b
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.EqualFold(k, "MEGATRON_PATH") {
			// The first match decides, empty or not; prepare.py resolves a relative path from
			// Primus's folder, where run_pretrain.sh runs.
			if v := env[k]; v != "" && !path.IsAbs(v) {
				return path.Join(prim.Dir, v)
			}
			return env[k]
		}
	}
	return ""
}

// capability is the compute capability the run's GPUs report through torch.cuda (the preflight runs
// without them): H100 9.0; MI300X's gfx942 reports 9.4 through ROCm.
func capability(p core.Plan) string {
	if p.Platform == "amd" {
		return "9.4"
	}
	return "9.0"
}
