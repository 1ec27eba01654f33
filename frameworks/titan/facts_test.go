package titan

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// option is one section.key = literal of a written job config.
type option struct{ section, key, literal string }

// tomlOptions reads the job config TOML a launch writes (sections of key = value lines).
func tomlOptions(t *testing.T, text string) []option {
	t.Helper()
	var out []option
	sec := ""
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			sec = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, " = ")
			require.True(t, ok, "line %d: %q", n+1, line)
			out = append(out, option{sec, k, v})
		}
	}
	return out
}

// expOptions reads modules.pre_trainer.overrides of a Primus experiment yaml a launch writes.
func expOptions(t *testing.T, text string) []option {
	t.Helper()
	_, body, ok := strings.Cut(text, "\n    overrides:\n")
	require.True(t, ok, "no overrides in\n%s", text)
	var out []option
	sec := ""
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "        "):
			k, v, ok := strings.Cut(strings.TrimSpace(line), ": ")
			require.True(t, ok, "%q", line)
			out = append(out, option{sec, k, v})
		case strings.HasPrefix(line, "      ") && strings.HasSuffix(line, ":"):
			sec = strings.TrimSuffix(strings.TrimSpace(line), ":")
		default:
			t.Fatalf("unexpected override line %q", line)
		}
	}
	return out
}

// launchOptions returns the job-config options a launch writes, read back from its files.
func launchOptions(t *testing.T, platform string, l core.Launch) []option {
	if platform == hw.PlatformNVIDIA {
		return tomlOptions(t, string(l.Files[TOMLName]))
	}
	return expOptions(t, string(l.Files[EXPName]))
}

// variants are the runs every titan launch is checked in.
var variants = []struct {
	name string
	edit func(p *core.Plan)
}{
	{"base", func(*core.Plan) {}},
	{"TP2", func(p *core.Plan) { p.Fair.TP, p.Fair.DP = 2, 4; p.Fair.GBS = p.Fair.MBS * p.Fair.GA * 4 }},
	{"fp8", func(p *core.Plan) { p.Fair.Precision = core.FP8 }},
	{"fp32", func(p *core.Plan) { p.Fair.Precision = core.FP32 }},
	{"PROFILE=1", func(p *core.Plan) { p.Fair.Profile = true }},
	{"SL8192", func(p *core.Plan) { p.Fair.SL = 8192 }},
	{"two nodes", func(p *core.Plan) {
		p.NNodes, p.World, p.Fair.DP = 2, 16, 16
		p.Fair.GBS = p.Fair.MBS * p.Fair.GA * 16
	}},
}

// TestEveryLaunchMatchesPinnedFacts builds every titan launch (each model the framework takes, in
// each variant, on amd and nvd of each stack), reads back the job config it writes, and checks every
// option against the JobConfig extracted from the TorchTitan pinned for that platform's image on that
// stack. A refused launch must be refused by the framework's own rules, never by the facts check.
func TestEveryLaunchMatchesPinnedFacts(t *testing.T) {
	checked := 0
	for _, stack := range core.StackNames {
		for _, platform := range []string{hw.PlatformNVIDIA, hw.PlatformAMD} {
			pin := pinOf(t, platform, stack)
			f, err := facts.TorchTitan(pin.Version, pin.Primus)
			require.NoError(t, err)
			for _, model := range models.Names() {
				for _, v := range variants {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", stack, platform, model, v.name), func(t *testing.T) {
						p := stackPlan(t, stack, platform, model)
						v.edit(&p)
						l, err := Build(p)
						if err != nil {
							require.Error(t, check(p), "refused by something else than the framework's rules: %v", err)
							t.Skipf("titan refuses it: %v", err)
						}
						opts := launchOptions(t, platform, l)
						require.NotEmpty(t, opts)
						for _, o := range opts {
							assert.NoError(t, f.Check(o.section, o.key, o.literal))
							if to, ok := jobConfigs[pin.Version].moved[o.section+"."+o.key]; ok {
								t.Errorf("%s.%s is written where TorchTitan %s no longer reads it (%s)", o.section, o.key, pin.Version, to)
							}
						}
						checked++
					})
				}
			}
		}
	}
	assert.Greater(t, checked, 40)
}

// TestFactsNegativeControls: the checks fail on an option the pinned version lacks, on the names
// older and newer TorchTitans use, on a value of the wrong type and on a value outside a Literal.
func TestFactsNegativeControls(t *testing.T) {
	type control struct {
		section, key, literal string
		errHas                string
	}
	// Controls that hold for the nvd JobConfig of every stack.
	common := []control{
		{"training", "no_such_option", "1", "is not an option"},
		{"training", "compile", "false", "is not an option"},             // before 2025-08-20
		{"checkpoint", "enable_checkpoint", "false", "is not an option"}, // before 2025-08-22
		{"validation", "enabled", "false", "is not an option"},
		{"training", "mock_data", "false", "is not an option"}, // Primus's, not upstream's
		{"model", "n_layers", "32", "is not an option"},        // neither
		{"training", "steps", `"500"`, "is a TOML str"},        // wrong type
		{"training", "seq_len", "2048.5", "is a TOML float"},
		{"compile", "enable", "0", "is a TOML int"},
		{"optimizer", "implementation", `"fast"`, "is not one of"}, // Literal
		{"training", "mixed_precision_param", `"float16"`, "is not one of"},
	}
	// Where seed lives: [debug] from v0.2.2 on, [training] before.
	byVersion := map[string][]control{
		"v0.2.0": {{"debug", "seed", "42", "is not a section"}},
		"v0.2.2": {{"training", "seed", "42", "is not an option"}, {"training", "deterministic", "false", "is not an option"},
			{"debug", "seed", `"42"`, "is a TOML str"}},
	}
	for _, stack := range core.StackNames {
		nvdPin, amdPin := pinOf(t, hw.PlatformNVIDIA, stack), pinOf(t, hw.PlatformAMD, stack)
		nvd, err := facts.TorchTitan(nvdPin.Version, false)
		require.NoError(t, err)
		amd, err := facts.TorchTitan(amdPin.Version, true)
		require.NoError(t, err)
		require.Contains(t, byVersion, nvdPin.Version, "negative controls for the nvd pin of %s", stack)
		for _, tc := range append(common, byVersion[nvdPin.Version]...) {
			t.Run(stack+"/"+tc.section+"."+tc.key, func(t *testing.T) {
				err := nvd.Check(tc.section, tc.key, tc.literal)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errHas)
			})
		}
		require.Error(t, amd.Check("training", "mock_data", "1"), "is a TOML int")
		// What passes: a float option takes an integer, as Python does; Primus's own option on AMD.
		require.NoError(t, nvd.Check("training", "max_norm", "1"))
		require.NoError(t, amd.Check("training", "mock_data", "false"))

		// Build refuses a launch whose job config the pinned version would reject.
		p := stackPlan(t, stack, hw.PlatformNVIDIA, "llama")
		secs, err := Sections(p, hw.PlatformNVIDIA)
		require.NoError(t, err)
		secs = append(secs, Section{"training", []KV{{"compile", "false"}}})
		err = CheckSections(p, hw.PlatformNVIDIA, secs)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "training.compile is not an option of TorchTitan "+nvdPin.Version)
	}

	// On the current amd pin, Primus v26.5.1's pre_trainer.yaml still sets training.seed, so the facts
	// take it; TorchTitan v0.2.2 reads debug.seed only, and the launch check refuses the old name.
	p := stackPlan(t, core.StackCurrent, hw.PlatformAMD, "llama")
	pin := pinOf(t, hw.PlatformAMD, core.StackCurrent)
	require.Equal(t, "v0.2.2", pin.Version)
	amd, err := facts.TorchTitan(pin.Version, true)
	require.NoError(t, err)
	require.NoError(t, amd.Check("training", "seed", "42"), "Primus's stale key is in its extracted options")
	secs, err := Sections(p, hw.PlatformAMD)
	require.NoError(t, err)
	require.NoError(t, CheckSections(p, hw.PlatformAMD, secs))
	secs = append(secs, Section{"training", []KV{{"seed", "42"}}})
	err = CheckSections(p, hw.PlatformAMD, secs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "training.seed moved to debug.seed in TorchTitan v0.2.2")
}

// pinnedTrees is every stack × platform with the TorchTitan tree its image runs (the unpacked
// torchtitan-<version> archive under RIVAL_UPSTREAM_DIR).
type pinnedTree struct{ stack, platform, dir string }

func pinnedTrees(t *testing.T) []pinnedTree {
	t.Helper()
	tr := upstreamtest.Get(t)
	var out []pinnedTree
	for _, stack := range core.StackNames {
		for _, platform := range []string{hw.PlatformNVIDIA, hw.PlatformAMD} {
			out = append(out, pinnedTree{stack, platform, tr.Tree(t, "torchtitan-"+pinOf(t, platform, stack).Version)})
		}
	}
	return out
}

// TestConfigManagerAcceptsGeneratedTOML runs TorchTitan's own ConfigManager (config/manager.py,
// torch and tyro stood in) of each pinned tree on the job config each platform of each stack writes.
// The trees are the unpacked pytorch/torchtitan archives at the pinned commits (../shared/upstream);
// docs/frameworks.md records the last run.
func TestConfigManagerAcceptsGeneratedTOML(t *testing.T) {
	for _, pt := range pinnedTrees(t) {
		platform, dir, stack := pt.platform, pt.dir, pt.stack
		t.Run(stack+"/"+platform, func(t *testing.T) {
			p := stackPlan(t, stack, platform, "llama")
			secs, err := Sections(p, platform)
			require.NoError(t, err)
			var upstream []Section
			for _, s := range secs {
				var kvs []KV
				for _, kv := range s.KVs {
					if _, ok := mustFacts(t, platform, stack).Lookup(s.Name, kv.Key); ok && !(platform == hw.PlatformAMD && s.Name == "training" && kv.Key == "mock_data") {
						kvs = append(kvs, kv)
					}
				}
				if len(kvs) > 0 { // Primus's own sections (primus_turbo) are not TorchTitan's
					upstream = append(upstream, Section{s.Name, kvs})
				}
			}
			toml := filepath.Join(t.TempDir(), TOMLName)
			require.NoError(t, os.WriteFile(toml, []byte(TOML(upstream)), 0o644))
			out, err := exec.Command(python, "../facts/torchtitan_extract.py", "--check", dir, toml).CombinedOutput()
			require.NoError(t, err, string(out))
			assert.Contains(t, string(out), `"custom_import": "rival_titan"`)
			// The seed reaches the section the tree reads it from.
			var cfg map[string]map[string]any
			j := strings.Index(string(out), "{\n") // after the loader's warnings (a tokenizer folder not here)
			require.GreaterOrEqual(t, j, 0, string(out))
			require.NoError(t, json.Unmarshal(out[j:], &cfg), string(out))
			seedAt := "training"
			if to := jobConfigs[pinOf(t, platform, stack).Version].moved["training.seed"]; to != "" {
				seedAt, _, _ = strings.Cut(to, ".")
			}
			assert.Equal(t, float64(p.Fair.Seed), cfg[seedAt]["seed"], "%s.seed", seedAt)
		})
	}
}

func mustFacts(t *testing.T, platform, stack string) *facts.TitanConfig {
	pin := pinOf(t, platform, stack)
	f, err := facts.TorchTitan(pin.Version, false)
	require.NoError(t, err)
	return f
}

// TestNVIDIAImageInstallsThePin: nvd.Dockerfile installs exactly the TorchTitan the NVIDIA job
// config of the current stack is written for by default (the image task passes the previous stack's
// TORCHTITAN_VERSION with its IMAGE_BASE), and checks the version it installed.
func TestNVIDIAImageInstallsThePin(t *testing.T) {
	data, err := os.ReadFile("../../nvd.Dockerfile")
	require.NoError(t, err)
	v := strings.TrimPrefix(pinOf(t, hw.PlatformNVIDIA, core.StackCurrent).Version, "v")
	df := string(data)
	assert.Contains(t, df, "\nARG TORCHTITAN_VERSION="+v+"\n")
	assert.Contains(t, df, `RIVAL_TT="${TORCHTITAN_VERSION}"`)
	assert.Contains(t, df, `m.version('torchtitan')`)
	// NeMo's packages stay as the image has them: every installed package is a constraint, and the
	// build compares pip check before and after.
	i := strings.Index(df, `pip list --format=freeze --exclude-editable > /tmp/rival-constraints.txt`)
	j := strings.Index(df, `pip install --no-cache-dir -c /tmp/rival-constraints.txt "torchtitan==${TORCHTITAN_VERSION}"`)
	k := strings.Index(df, `pip check > /tmp/rival-check-after`)
	require.True(t, i >= 0 && j > i && k > j, "nvd.Dockerfile writes the constraints, installs torchtitan under them, then runs pip check:\n%s", df)
	assert.Contains(t, df, `pip check > /tmp/rival-check-before`)
	assert.Contains(t, df, `grep -vxF -f /tmp/rival-check-before /tmp/rival-check-after`)
}

// TestExtensionRegistersOnPinnedTrees imports rival_titan.py into each pinned TorchTitan tree
// (torch and the model code's optional packages stood in) the way the trainer does, looks its train
// spec up and checks the registered flavour against the model registry. Trees as for
// TestConfigManagerAcceptsGeneratedTOML.
func TestExtensionRegistersOnPinnedTrees(t *testing.T) {
	for _, pt := range pinnedTrees(t) {
		platform, dir, stack := pt.platform, pt.dir, pt.stack
		for _, model := range []string{"llama", "llama-proxy", "mistral", "mistral-proxy"} {
			t.Run(stack+"/"+platform+"/"+model, func(t *testing.T) {
				p := stackPlan(t, stack, platform, model)
				ext := t.TempDir()
				require.NoError(t, os.WriteFile(filepath.Join(ext, ScriptName), Script(), 0o644))
				cfg, err := configJSON(p)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(ext, ConfigName), cfg, 0o644))
				out, err := exec.Command(python, "../facts/torchtitan_extract.py", "--register", dir, ext).Output()
				if ee, ok := err.(*exec.ExitError); ok {
					t.Fatalf("%v\n%s", err, ee.Stderr)
				}
				require.NoError(t, err)
				var raw map[string]any
				require.NoError(t, json.Unmarshal(out, &raw))
				m := p.Model
				scaling := 1.0 // TorchTitan scales every Llama 3; factor 1 is the identity
				if m.RopeScaling != nil {
					scaling = m.RopeScaling.Factor
				}
				assert.Equal(t, "TrainSpec", raw["spec"])
				assert.Equal(t, "TransformerModelArgs", raw["args_class"], "the flavour's args subclass llama3's")
				assert.Equal(t, model, raw["flavor"])
				for k, want := range map[string]float64{"dim": float64(m.Hidden), "n_layers": float64(m.Layers),
					"n_heads": float64(m.Heads), "n_kv_heads": float64(m.KVHeads), "vocab_size": float64(m.Vocab),
					"multiple_of": float64(m.FFN), "rope_theta": m.RopeTheta, "rope_scaling_factor": scaling,
					"max_seq_len": float64(p.Fair.SL)} {
					assert.Equal(t, want, raw[k], k)
				}
				assert.Equal(t, false, raw["validator"])
			})
		}
	}
}
