package prim_test

import (
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/frameworks/prim"
	"github.com/rivalbench/rival/hw"
)

var models = []string{"llama", "qwen", "mistral", "llama-proxy", "qwen-proxy", "mistral-proxy"}

var precisions = []string{core.BF16, core.FP8, core.FP32}

// request is a prim run of model on eight MI300X with config.env's values.
func request(stack, model, precision string) core.Request {
	h := hw.Host{Platform: hw.PlatformAMD}
	for i := range 8 {
		h.GPUs = append(h.GPUs, hw.GPU{Index: i, Vendor: hw.VendorAMD, Model: "MI300X"})
	}
	return core.Request{
		Platform: hw.PlatformAMD, Framework: core.Prim, Model: model, Stack: stack, Host: h,
		Fair: core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, TP: 1, PP: 1, DP: 8, TrainIters: 500, WarmupSteps: 50,
			LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, AdamEps: 1e-8, Precision: precision,
			ProfileStepStart: 10, ProfileStepEnd: 12, ProfileRanks: []int{0}},
		DataPrefix:   "/data/rival/" + model + "/bc-train_text_document",
		DataCacheDir: "/data/rival/cache/3f2a9c1d", TokenizerPath: "/data/rival/tokenizers/" + model,
		OutputDir: "/output/amd-prim-" + model,
	}
}

// pinned returns the Primus and Megatron-LM facts of a stack's AMD image.
func pinned(t *testing.T, stack string) (*facts.Primus, *facts.Megatron) {
	t.Helper()
	pin, err := core.PinFor(hw.PlatformAMD, stack)
	require.NoError(t, err)
	pf, err := facts.PrimusAt(pin.Primus)
	require.NoError(t, err)
	mg, err := facts.MegatronAt(pin.MegatronCommit)
	require.NoError(t, err)
	return pf, mg
}

// experiment is the experiment file a launch writes, as SafeLoader reads it.
type experiment struct {
	doc       map[string]any
	overrides map[string]any
	model     string
	stock     string
}

func readExperiment(t *testing.T, r core.Request, l core.Launch) experiment {
	t.Helper()
	var name string
	for n := range l.Files {
		if strings.HasPrefix(n, "primus/") && strings.HasSuffix(n, "-exp.yaml") {
			name = n
		}
	}
	require.NotEmpty(t, name, "the launch writes its experiment under primus/")
	assert.Equal(t, path.Join(r.OutputDir, name), l.Env["EXP"])
	src := l.Files[name]
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal(src, &n))
	v, err := facts.TypeYAML(&n)
	require.NoError(t, err)
	doc := v.(map[string]any)
	pt := doc["modules"].(map[string]any)["pre_trainer"].(map[string]any)
	e := experiment{doc: doc, overrides: pt["overrides"].(map[string]any), model: pt["model"].(string)}
	first := strings.SplitN(string(src), "\n", 2)[0]
	e.stock, _ = strings.CutPrefix(first, "# "+prim.StockComment)
	return e
}

// keysAnywhere lists every mapping key of a yaml document, at any depth.
func keysAnywhere(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out = append(out, k)
			out = append(out, keysAnywhere(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, keysAnywhere(e)...)
		}
	}
	return out
}

// removedBy lists the pre_trainer keys the previous stack's Primus defines and the current one does
// not: options renamed or removed on the way, which the current Primus either stops on or ignores.
func removedBy(t *testing.T) map[string]bool {
	t.Helper()
	prev, _ := pinned(t, core.StackPrevious)
	cur, _ := pinned(t, core.StackCurrent)
	out := map[string]bool{}
	for k := range prev.Module {
		if _, ok := cur.Module[k]; !ok {
			out[k] = true
		}
	}
	return out
}

// setsRemoved returns the keys of a launch's experiment file (anywhere in it) and of its command line
// that are in removed, sorted.
func setsRemoved(e experiment, l core.Launch, removed map[string]bool) []string {
	var bad []string
	for _, k := range keysAnywhere(e.doc) {
		if removed[k] {
			bad = append(bad, k)
		}
	}
	if i := slices.Index(l.Command, prim.Script); i >= 0 {
		for _, a := range l.Command[i+1:] {
			if k, ok := strings.CutPrefix(a, "--"); ok && removed[k] {
				bad = append(bad, k)
			}
		}
	}
	sort.Strings(bad)
	return slices.Compact(bad)
}

// Every launch of every model and precision, on every stack, starts from a stock experiment the
// stack's Primus ships, sets only keys that Primus or its Megatron-LM knows with the types they take,
// and names the Turbo switches as that release does.
func TestLaunchOnEveryStack(t *testing.T) {
	for _, stack := range core.StackNames {
		pf, mg := pinned(t, stack)
		for _, m := range models {
			for _, prec := range precisions {
				t.Run(stack+"/"+m+"/"+prec, func(t *testing.T) {
					r := request(stack, m, prec)
					l, err := frameworks.Build(r)
					require.NoError(t, err)
					assert.Equal(t, prim.Version(stack), l.FrameworkVersion)
					assert.Contains(t, l.FrameworkVersion, "Primus "+pf.Tag)
					e := readExperiment(t, r, l)
					assert.True(t, pf.HasEXP(e.stock), "started from %q, which Primus %s ships", e.stock, pf.Tag)
					require.NoError(t, pf.CheckOverrides(e.model, mg, e.overrides))

					turbo := core.Fairness.PrimusTurbo
					assert.Equal(t, turbo, e.overrides["enable_primus_turbo"])
					assert.Equal(t, turbo, e.overrides["use_turbo_attention"])
					switch stack {
					case core.StackCurrent:
						assert.Equal(t, turbo, e.overrides["use_turbo_grouped_gemm"])
						assert.Equal(t, false, e.overrides["use_turbo_gemm"], "the dense GEMM stays off")
						for _, old := range []string{"use_turbo_grouped_mlp", "use_turbo_parallel_linear"} {
							assert.NotContains(t, e.overrides, old)
						}
					case core.StackPrevious:
						assert.Equal(t, turbo, e.overrides["use_turbo_grouped_mlp"])
						for _, k := range []string{"use_turbo_grouped_gemm", "use_turbo_gemm", "use_turbo_parallel_linear"} {
							assert.NotContains(t, e.overrides, k)
						}
					}
				})
			}
		}
	}
}

// Primus v26.5.1 stops a run that sets a renamed Turbo option; no current launch writes a name that
// the previous Primus defines and the current one does not, anywhere in its experiment file or on its
// command line.
func TestCurrentLaunchSetsNoRemovedPrimusOption(t *testing.T) {
	removed := removedBy(t)
	for _, k := range []string{"use_turbo_grouped_mlp", "use_turbo_parallel_linear", "disable_turbo_grouped_mlp_low_precision"} {
		require.True(t, removed[k], "the facts mark %s as gone from the current Primus", k)
	}
	for _, m := range models {
		for _, prec := range precisions {
			t.Run(m+"/"+prec, func(t *testing.T) {
				r := request(core.StackCurrent, m, prec)
				l, err := frameworks.Build(r)
				require.NoError(t, err)
				e := readExperiment(t, r, l)
				assert.Empty(t, setsRemoved(e, l, removed), "options the current Primus removed")

				// The check sees an old name put back, in the overrides or on the command line.
				e.overrides["use_turbo_grouped_mlp"] = false
				assert.Equal(t, []string{"use_turbo_grouped_mlp"}, setsRemoved(e, l, removed))
				delete(e.overrides, "use_turbo_grouped_mlp")
				l.Command = append(slices.Clone(l.Command), "--use_turbo_parallel_linear", "false")
				assert.Equal(t, []string{"use_turbo_parallel_linear"}, setsRemoved(e, l, removed))
			})
		}
	}
}

// The stock experiments Rival starts from carry no option their own release removed.
func TestStockExperimentsUseTheirReleasesNames(t *testing.T) {
	removed := removedBy(t)
	pf, _ := pinned(t, core.StackCurrent)
	require.NotEmpty(t, pf.EXPs)
	for name, e := range pf.EXPs {
		for _, kv := range e.Overrides {
			k, _ := kv[0].(string)
			assert.False(t, removed[k], "Primus %s's %s sets %s", pf.Tag, name, k)
		}
	}
	for name, m := range pf.Models {
		for k := range m {
			assert.False(t, removed[k], "Primus %s's model %s sets %s", pf.Tag, name, k)
		}
	}
}

// A profiled run writes the same trace files on every stack: Primus's profiler switches, and plain
// JSON where a release would gzip them.
func TestProfileOnEveryStack(t *testing.T) {
	for _, stack := range core.StackNames {
		pf, mg := pinned(t, stack)
		r := request(stack, "llama", core.BF16)
		r.Fair.Profile, r.Fair.ProfileRanks = true, []int{0, 3}
		l, err := frameworks.Build(r)
		require.NoError(t, err)
		e := readExperiment(t, r, l)
		require.NoError(t, pf.CheckOverrides(e.model, mg, e.overrides))
		assert.Equal(t, true, e.overrides["use_pytorch_profiler"], stack)
		assert.Equal(t, []any{int64(0), int64(3)}, e.overrides["profile_ranks"], stack)
		gz, set := e.overrides["torch_profiler_use_gzip"]
		if !set {
			gz = pf.Module["torch_profiler_use_gzip"]
		}
		assert.Equal(t, false, gz, "%s: Primus %s gzips the traces", stack, pf.Tag)
		assert.Contains(t, strings.Join(l.Command, " "), path.Join(r.OutputDir, "profile"))
	}
}

// Both stacks' images keep Primus where the launch runs it from.
func TestPrimusDirOnEveryStack(t *testing.T) {
	for _, stack := range core.StackNames {
		pin, err := core.PinFor(hw.PlatformAMD, stack)
		require.NoError(t, err)
		assert.Equal(t, prim.Dir, pin.PrimusDir, stack)
	}
}
