package frameworks

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/hw"
)

// upstreamDir is the folder of unpacked upstream trees, named megatron-<first 8 hex of the commit>
// and primus-<tag> (../shared/upstream/README.md). Without it the preflight tests skip, naming the
// command that unpacks them; under RIVAL_REQUIRE_UPSTREAM=1 they fail.
func upstreamDir(t *testing.T) string { return upstreamtest.Get(t).Dir }

// tokenizerDir is a folder holding the model's real tokenizer.json, so the preflight reads the
// vocabulary Megatron pads (len(tokenizer)) as the run would: Qwen's and Mistral's from
// tokenizer/testdata, Llama 3.1's from ../shared/tokenizers (RIVAL_SHARED_DIR).
func tokenizerDir(t *testing.T, model string) string {
	base := strings.TrimSuffix(model, "-proxy")
	var d string
	switch base {
	case "qwen":
		d = filepath.Join("..", "tokenizer", "testdata", "qwen-2.5")
	case "mistral":
		d = filepath.Join("..", "tokenizer", "testdata", "mistral-7b-v0.1")
	default:
		shared := os.Getenv("RIVAL_SHARED_DIR")
		if shared == "" {
			shared = filepath.Join("..", "..", "shared")
		}
		d = filepath.Join(shared, "tokenizers", "llama-3.1")
	}
	abs, err := filepath.Abs(d)
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(abs, "tokenizer.json")); err != nil {
		upstreamtest.Missing(t, "no tokenizer.json in "+abs+" (set RIVAL_SHARED_DIR to the folder holding tokenizers/llama-3.1)")
	}
	// Resolved, so a ../shared that is a link reaches the torch image's container by its real path
	// (stackPython mounts that folder).
	real, err := filepath.EvalSymlinks(abs)
	require.NoError(t, err)
	return real
}

// runPreflight writes the launch's files under its OutputDir and runs its preflight with the fetched
// trees standing in for the image's.
func runPreflight(t *testing.T, dir string, r core.Request, l core.Launch) (string, error) {
	t.Helper()
	require.NotNil(t, l.Preflight, "mega, prim and nemo launches carry a preflight")
	for name, b := range l.Files {
		p := filepath.Join(r.OutputDir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	pin, err := core.PinFor(r.Platform, r.Stack)
	require.NoError(t, err)
	args := l.Preflight.Command[1:]
	if l.Framework == core.Nemo {
		facts, err := filepath.Abs("facts")
		require.NoError(t, err)
		args = append([]string{"-W", "ignore", "-c", upstreamtest.NemoPreflight, facts,
			filepath.Join(dir, "bridge-v"+pin.Bridge), filepath.Join(dir, "megatron-"+pin.MegatronCommit[:8])}, args...)
	}
	cmd := exec.Command(stackPython(t, r.Stack), args...)
	cmd.Dir = l.Preflight.WorkDir
	cmd.Env = os.Environ()
	for k, v := range l.Preflight.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, mega.DirEnv+"="+filepath.Join(dir, "megatron-"+pin.MegatronCommit[:8]),
		PrimusDirEnv+"="+filepath.Join(dir, "primus-"+pin.Primus))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stackPython is the Python that runs a stack's trees: the one upstreamtest finds for the previous
// stack, Python 3.13 in the torch image for the current one (Megatron Core 0.18 and Bridge 0.5 need
// 3.12), once per test.
func stackPython(t *testing.T, stack string) string {
	t.Helper()
	tr := upstreamtest.Get(t)
	if stack == core.StackPrevious {
		return tr.Python
	}
	modernMu.Lock()
	defer modernMu.Unlock()
	if modern == "" {
		// Not under a Once: a caller that skips (no torch image) leaves the next one to skip too,
		// with the same reason, instead of a bare failure.
		modern = tr.ModernPython(t, "..", filepath.Dir(tokenizerDir(t, "llama")))
	}
	return modern
}

var (
	modernMu sync.Mutex
	modern   string
)

// effectiveOf is the effective configuration a preflight's output reports.
func effectiveOf(t *testing.T, out string) effective.Config {
	t.Helper()
	c, found, err := effective.FromLines(strings.Split(out, "\n"))
	require.NoError(t, err, out)
	require.True(t, found, "the preflight reports the effective configuration: %s", out)
	return c
}

func TestPreflightOnUpstreamTrees(t *testing.T) {
	dir := upstreamDir(t)
	forMatrix(t, func(t *testing.T, r core.Request, _ core.Launch) {
		t.Parallel()
		r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, r.Model)
		l, err := Build(r)
		require.NoError(t, err)
		out, err := runPreflight(t, dir, r, l)
		require.NoError(t, err, out)
		assert.Contains(t, out, "preflight ok: ")
		if l.Framework == core.Prim {
			// It went through Primus's runtime, patch phases included.
			assert.Contains(t, out, `preflight primus patches: {"before_train": [`)
			assert.Contains(t, out, `"setup": ["megatron.args.add_megatron_arguments_compat"`)
		}
		// What Megatron built is Rival's workload, field by field.
		p, err := Validate(r, l.Framework)
		require.NoError(t, err)
		assert.NoError(t, effective.Check(l.Framework, p, effectiveOf(t, out)))
	})
}

// The effective configuration catches a launch Megatron accepts but that builds another model or
// recipe than the workload: each wrong launch is named by field, with both values.
func TestEffectiveConfigNegativeControlsOnUpstreamTrees(t *testing.T) {
	dir := upstreamDir(t)
	for _, c := range []struct {
		platform, fw, model string
		edit                func(l *core.Launch)
		field, got, want    string
	}{
		{hw.PlatformNVIDIA, "mega", "llama", func(l *core.Launch) { setArg(l.Preflight, "--norm-epsilon", "1e-6") }, "norm_eps", "1e-06", "1e-05"},
		{hw.PlatformAMD, "mega", "qwen", func(l *core.Launch) { setArg(l.Preflight, "--init-method-std", "0.01") }, "init_std", "0.01", "0.02"},
		{hw.PlatformNVIDIA, "mega", "mistral", func(l *core.Launch) { setArg(l.Preflight, "--lr-decay-style", "linear") }, "lr_decay_style", "linear", "cosine"},
		{hw.PlatformAMD, "prim", "llama", func(l *core.Launch) { editEXP(l, "hidden_dropout: 0.0", "hidden_dropout: 0.1") }, "hidden_dropout", "0.1", "0"},
		{hw.PlatformAMD, "prim", "qwen", func(l *core.Launch) { editEXP(l, "init_method_std: 0.02", "init_method_std: 0.008") }, "init_std", "0.008", "0.02"},
	} {
		eachStack(t, c.platform+"/"+c.fw+"/"+c.field, func(t *testing.T, stack string) {
			r := request(t, c.platform, c.fw, c.model)
			r.Stack = stack
			r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, c.model)
			l, err := Build(r)
			require.NoError(t, err)
			c.edit(&l)
			out, err := runPreflight(t, dir, r, l)
			require.NoError(t, err, "Megatron accepts the launch: %s", out)
			p, err := Validate(r, l.Framework)
			require.NoError(t, err)
			err = effective.Check(l.Framework, p, effectiveOf(t, out))
			var e *effective.Error
			require.ErrorAs(t, err, &e)
			assert.Contains(t, e.Diffs, effective.Diff{Field: c.field, Framework: c.got, Rival: c.want})
		})
	}
}

// The preflight stops a launch the framework would reject, quoting the framework's own error.
func TestPreflightNegativeControlsOnUpstreamTrees(t *testing.T) {
	dir := upstreamDir(t)
	for _, c := range []struct {
		platform, fw string
		edit         func(l *core.Launch)
		want         string
	}{
		{hw.PlatformNVIDIA, "mega", func(l *core.Launch) { setArg(l.Preflight, "--min-lr", "0.003") }, "assert args.min_lr <= args.lr"},
		{hw.PlatformNVIDIA, "mega", func(l *core.Launch) { l.Preflight.Command = append(l.Preflight.Command, "--overlap-everything") }, "unrecognized arguments: --overlap-everything"},
		{hw.PlatformAMD, "mega", func(l *core.Launch) { setArg(l.Preflight, "--num-layers", "32.5") }, "invalid int value"},
		{hw.PlatformAMD, "prim", func(l *core.Launch) { editEXP(l, "min_lr: 0.00003", "min_lr: 3e-05") }, "min_lr: '3e-05' is a str"},
		{hw.PlatformAMD, "prim", func(l *core.Launch) { editEXP(l, "fp8: null", `fp8: "None"`) }, "'None' is not one of --fp8-format's choices"},
		{hw.PlatformAMD, "prim", func(l *core.Launch) { editEXP(l, "min_lr: 0.00003", "min_lr: 0.003") }, "assert args.min_lr <= args.lr"},
		// Megatron accepts these; Primus's runtime path does not run them as asked: its ROCm check
		// rejects sync-free MoE without Primus Turbo, and its mock_data patch drops the dataset.
		{hw.PlatformAMD, "prim", func(l *core.Launch) {
			editEXP(l, "mock_data: false", "mock_data: false\n      turbo_sync_free_moe_stage: 1")
		}, "Please set `enable_primus_turbo=True` to enable sync-free MoE"},
		{hw.PlatformAMD, "prim", func(l *core.Launch) { editEXP(l, "mock_data: false", "mock_data: true") }, "Primus clears the data paths"},
	} {
		eachStack(t, c.fw+"/"+c.want, func(t *testing.T, stack string) {
			r := request(t, c.platform, c.fw, "llama")
			r.Stack = stack
			r.OutputDir = t.TempDir()
			l, err := Build(r)
			require.NoError(t, err)
			c.edit(&l)
			out, err := runPreflight(t, dir, r, l)
			require.Error(t, err, out)
			assert.Contains(t, out, "preflight failed")
			assert.Contains(t, out, c.want)
		})
	}
}

func setArg(l *core.Launch, flag, v string) {
	for i := range l.Command {
		if l.Command[i] == flag {
			l.Command[i+1] = v
		}
	}
}

func editEXP(l *core.Launch, from, to string) {
	for name, b := range l.Files {
		if strings.HasSuffix(name, "-exp.yaml") {
			l.Files[name] = []byte(strings.Replace(string(b), from, to, 1))
		}
	}
}

// appendToRun is a drift that appends args to the run's command line after the launch is built.
func appendToRun(args ...string) func(l *core.Launch) {
	return func(l *core.Launch) { l.Command = append(l.Command, args...) }
}

// eachStack runs f as one subtest per stack, named name/stack.
func eachStack(t *testing.T, name string, f func(t *testing.T, stack string)) {
	for _, stack := range core.StackNames {
		t.Run(name+"/"+stack, func(t *testing.T) { f(t, stack) })
	}
}

// llamaLaunch is fw's Llama launch on platform and stack, written for a preflight in a temporary
// directory.
func llamaLaunch(t *testing.T, platform, fw, stack string) (core.Request, core.Launch) {
	t.Helper()
	r := request(t, platform, fw, "llama")
	r.Stack = stack
	r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, "llama")
	l, err := Build(r)
	require.NoError(t, err)
	return r, l
}

// The preflight is the run's own command: an argument appended to the run's command line (or a
// changed field in the file the run reads) after the launch is built reaches the preflight, which
// reports what the framework then builds. These are drifts the read-back of a fixed list missed:
// a halved head, a warm-up that starts above 0, cross-document masking, QK layernorm, partial RoPE.
func TestPreflightIsTheRunsCommand(t *testing.T) {
	dir := upstreamDir(t)
	for _, c := range []struct {
		name, platform, fw string
		edit               func(l *core.Launch)
		field, got, want   string
	}{
		{"head width", hw.PlatformNVIDIA, "mega", appendToRun("--kv-channels", "64"), "head_dim", "64", "128"},
		{"warm-up start", hw.PlatformNVIDIA, "mega", appendToRun("--lr-warmup-init", "1e-05"), "lr_warmup_init", "1e-05", "0"},
		{"document masking", hw.PlatformAMD, "mega", appendToRun("--reset-position-ids", "--reset-attention-mask"), "reset_attention_mask", "true", "false"},
		{"QK layernorm through Primus's command line", hw.PlatformAMD, "prim", appendToRun("--qk_layernorm", "true"), "qk_norm", "true", "false"},
		{"partial RoPE in the file the run reads", hw.PlatformNVIDIA, "nemo", func(l *core.Launch) {
			l.Files["rival_nemo.json"] = []byte(strings.Replace(string(l.Files["rival_nemo.json"]), `"rotary_percent": 1,`, `"rotary_percent": 0.5,`, 1))
		}, "rotary_percent", "0.5", "1"},
	} {
		eachStack(t, c.name, func(t *testing.T, stack string) {
			r, l := llamaLaunch(t, c.platform, c.fw, stack)
			before := append([]string(nil), l.Preflight.Command...)
			c.edit(&l)
			p, err := Validate(r, l.Framework)
			require.NoError(t, err)
			if c.fw != core.Nemo {
				// Derived again from the edited run, as Build derives it: one place builds both.
				require.NoError(t, preflight(p, &l))
				assert.NotEqual(t, before, l.Preflight.Command, "the appended argument reaches the preflight")
			}
			out, err := runPreflight(t, dir, r, l)
			require.NoError(t, err, out)
			err = effective.Check(l.Framework, p, effectiveOf(t, out))
			var e *effective.Error
			require.ErrorAs(t, err, &e, out)
			assert.Contains(t, e.Diffs, effective.Diff{Field: c.field, Framework: c.got, Rival: c.want})
		})
	}
}

// The Megatron knobs (core.Fairness) are read back from what the framework built and compared with
// the launch's knobs.json by the preflight itself: a changed attention backend, Primus Turbo's
// attention or a fused kernel switched on, by the run's command line or in the file it reads, stops
// the preflight, naming the knob with both values. Golden files caught these before; a run did not.
func TestPreflightStopsAKnobDrift(t *testing.T) {
	dir := upstreamDir(t)
	for _, c := range []struct {
		name, platform, fw string
		edit               func(l *core.Launch)
		want               string
	}{
		{"attention backend", hw.PlatformNVIDIA, "mega", appendToRun("--attention-backend", "flash"),
			`attention_backend: the run builds "flash", Rival's fairness table sets "auto"`},
		{"Primus Turbo attention through Primus's command line", hw.PlatformAMD, "prim", appendToRun("--use_turbo_attention", "true"),
			`primus_turbo: the run builds true, Rival's fairness table sets false`},
		{"Primus Turbo in the experiment file", hw.PlatformAMD, "prim", func(l *core.Launch) {
			editEXP(l, "enable_primus_turbo: false", "enable_primus_turbo: true")
		}, `primus_turbo: the run builds true, Rival's fairness table sets false`},
		{"Transformer Engine's switches in prim's environment", hw.PlatformAMD, "prim", func(l *core.Launch) {
			l.Env["NVTE_FUSED_ATTN"], l.Env["NVTE_UNFUSED_ATTN"] = "0", "0"
		}, `attention_backend: the run builds "flash", Rival's fairness table sets "auto"`},
		{"cross-entropy fusion in the file the run reads", hw.PlatformNVIDIA, "nemo", func(l *core.Launch) {
			l.Files["rival_nemo.json"] = []byte(strings.Replace(string(l.Files["rival_nemo.json"]), `"cross_entropy_loss_fusion": false,`, `"cross_entropy_loss_fusion": true,`, 1))
		}, `cross_entropy_fusion: the run builds true, Rival's fairness table sets false`},
		{"attention backend in Bridge's model section", hw.PlatformNVIDIA, "nemo", func(l *core.Launch) {
			l.Files["rival_nemo.json"] = []byte(strings.Replace(string(l.Files["rival_nemo.json"]), `"attention_backend": "auto",`, `"attention_backend": "fused",`, 1))
		}, `attention_backend: the run builds "fused", Rival's fairness table sets "auto"`},
	} {
		eachStack(t, c.name, func(t *testing.T, stack string) {
			r, l := llamaLaunch(t, c.platform, c.fw, stack)
			text := func() string {
				s := strings.Join(l.Command, " ")
				for _, k := range slices.Sorted(maps.Keys(l.Env)) {
					s += "\n" + k + "=" + l.Env[k]
				}
				for _, n := range slices.Sorted(maps.Keys(l.Files)) {
					s += "\n" + n + "\n" + string(l.Files[n])
				}
				return s
			}
			before := text()
			c.edit(&l)
			require.NotEqual(t, before, text(), "the drift applies")
			if c.fw != core.Nemo {
				p, err := Validate(r, l.Framework)
				require.NoError(t, err)
				require.NoError(t, preflight(p, &l)) // derived again from the edited run
			}
			out, err := runPreflight(t, dir, r, l)
			require.Error(t, err, "the preflight must stop the drift:\n%s", out)
			assert.Contains(t, out, "preflight failed: Megatron knobs differ from Rival's fairness table (core.Fairness): ")
			assert.Contains(t, out, c.want)
		})
	}
}

// What run_pretrain.sh adds to the run's command line (TRAIN_EXTRA_ARGS) comes from the patch file
// Primus's prepare step writes, never from the environment: the pinned script empties it before
// reading that file. The one choice the environment makes there, the Megatron-LM tree
// (BACKEND_PATH, else MEGATRON_PATH in any letter case), the preflight follows, so it reads the tree
// the run trains with.
func TestPreflightFollowsPrimusBackendPath(t *testing.T) {
	dir := upstreamDir(t)
	pin, err := core.PinFor(hw.PlatformAMD, core.StackCurrent)
	require.NoError(t, err)
	sh, err := os.ReadFile(filepath.Join(dir, "primus-"+pin.Primus, "examples", "run_pretrain.sh"))
	require.NoError(t, err)
	reset, used := -1, -1
	for i, l := range strings.Split(string(sh), "\n") {
		l = strings.TrimSpace(l)
		if l == `TRAIN_EXTRA_ARGS=""` && reset < 0 {
			reset = i
		}
		if strings.HasPrefix(l, "CMD=") && strings.Contains(l, "$TRAIN_EXTRA_ARGS") && used < 0 {
			used = i
		}
		if strings.HasPrefix(l, "TRAIN_EXTRA_ARGS=") && l != `TRAIN_EXTRA_ARGS=""` {
			assert.Contains(t, l, "source_yaml_args", "line %d: TRAIN_EXTRA_ARGS is set only from the patch file", i+1)
		}
	}
	require.Positive(t, reset, "Primus %s's run_pretrain.sh empties TRAIN_EXTRA_ARGS", pin.Primus)
	require.Greater(t, used, reset, "and only then puts it on the command line")

	nvd, err := core.PinFor(hw.PlatformNVIDIA, core.StackCurrent)
	require.NoError(t, err)
	other := filepath.Join(dir, "megatron-"+nvd.MegatronCommit[:8]) // a tree other than the AMD image's
	require.NotEqual(t, pin.MegatronCommit, nvd.MegatronCommit)
	for _, env := range []map[string]string{{"BACKEND_PATH": other}, {"megatron_path": other}} {
		r := request(t, hw.PlatformAMD, core.Prim, "llama")
		r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, "llama")
		l, err := Build(r)
		require.NoError(t, err)
		maps.Copy(l.Env, env)
		p, err := Validate(r, l.Framework)
		require.NoError(t, err)
		require.NoError(t, preflight(p, &l))
		assert.Contains(t, l.Preflight.Command, other, "%v: the preflight reads the run's tree", env)
		out, _ := runPreflight(t, dir, r, l)
		assert.Contains(t, out, `"megatron_tree": "`+other+`"`, "%v", env)
	}
}
