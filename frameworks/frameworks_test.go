package frameworks

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
	"go.yaml.in/yaml/v3"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/nemo"
	"github.com/rivalbench/rival/frameworks/prim"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

var update = flag.Bool("update", false, "rewrite the golden launches under testdata/golden/")

func host(platform string, n int) hw.Host {
	h := hw.Host{Platform: platform}
	for i := 0; i < n; i++ {
		g := hw.GPU{Index: i}
		switch platform {
		case hw.PlatformAMD:
			g.Vendor, g.Model = hw.VendorAMD, "MI300X"
		case hw.PlatformNVIDIA:
			g.Vendor, g.Model = hw.VendorNVIDIA, "H100 SXM"
		}
		h.GPUs = append(h.GPUs, g)
	}
	return h
}

// fair is config.env's fair configuration.
func fair() core.Fair {
	return core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, TP: 1, PP: 1, DP: 8, TrainIters: 500, WarmupSteps: 50,
		LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, AdamEps: 1e-8, Precision: "bf16",
		ProfileStepStart: 10, ProfileStepEnd: 12, ProfileRanks: []int{0}}
}

// request is a run of model on platform with config.env's values; CPU runs use one process.
func request(t testing.TB, platform, framework, model string) core.Request {
	f := fair()
	n := 8
	if platform == hw.PlatformCPU {
		n, f.DP, f.Precision = 0, 1, "fp32"
	}
	fp := "3f2a9c1d"
	return core.Request{
		Platform: platform, Framework: framework, Model: model, Fair: f, Host: host(platform, n),
		DataPrefix:   "/data/rival/" + model + "/bc-train_text_document",
		DataCacheDir: "/data/rival/cache/" + fp, TokenizerPath: "/data/rival/tokenizers/" + model,
		OutputDir: "/output/" + platform + "-" + framework + "-" + model,
	}
}

type golden struct {
	Framework, Requested, Remapped string
	FrameworkVersion               string
	Command                        []string
	Env                            map[string]string
	Rendezvous                     core.Rendezvous
	WorkDir                        string
	Files                          map[string]string // text of each file; entry scripts by digest
	EntryScriptDigest              string
}

// toGolden renders a launch for its golden file. Entry scripts appear by name only and their digest
// as a placeholder, so editing a script (checked by TestEntryScripts) does not rewrite every golden.
func toGolden(l core.Launch) golden {
	version := l.FrameworkVersion
	digest := ""
	if l.EntryScriptDigest != "" {
		digest = "<blake3 of the embedded entry script>"
		version = strings.ReplaceAll(version, l.EntryScriptDigest, digest)
	}
	g := golden{Framework: l.Framework, Requested: l.Requested, Remapped: l.Remapped,
		FrameworkVersion: version, Command: l.Command, Env: l.Env, Rendezvous: l.Rendezvous,
		WorkDir: l.WorkDir, EntryScriptDigest: digest}
	if len(l.Files) > 0 {
		g.Files = map[string]string{}
		for n, b := range l.Files {
			if strings.HasSuffix(n, ".py") {
				g.Files[n] = "(embedded entry script)"
			} else {
				g.Files[n] = string(b)
			}
		}
	}
	return g
}

func checkGolden(t *testing.T, file string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	p := filepath.Join("testdata", "golden", file)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./frameworks -update to create %s", p)
	assert.Equal(t, string(want), string(got), "%s differs: review the change, then go test ./frameworks -update", p)
}

// TestGoldenMatrix pins the launch of every platform × framework × model on each stack (the current
// one's at the top of testdata/golden, the previous one's under previous/, so a move shows as their
// diff); combinations that cannot run are pinned in errors.json with their message.
func TestGoldenMatrix(t *testing.T) {
	errs := map[string]string{}
	for _, platform := range []string{hw.PlatformAMD, hw.PlatformNVIDIA, hw.PlatformCPU} {
		stacks := core.StackNames
		if platform == hw.PlatformCPU {
			stacks = []string{""}
		}
		for _, stack := range stacks {
			for _, fw := range Names() {
				for _, model := range models.Names() {
					name := fmt.Sprintf("%s-%s-%s", platform, fw, model)
					if stack == core.StackPrevious {
						name = stack + "/" + name
					}
					r := request(t, platform, fw, model)
					if platform != hw.PlatformCPU {
						r.Stack = stack
					}
					l, err := Build(r)
					if err != nil {
						errs[name] = err.Error()
						continue
					}
					checkGolden(t, name+".json", toGolden(l))
				}
			}
		}
	}
	checkGolden(t, "errors.json", errs)
	for name := range errs {
		cpuOnly := strings.HasPrefix(name, "cpu-") && !strings.HasPrefix(name, "cpu-fsdp")
		assert.True(t, cpuOnly, "only non-fsdp CPU runs may fail in the matrix, but %s did: %s", name, errs[name])
	}
}

func TestRemapIsStated(t *testing.T) {
	l, err := Build(request(t, hw.PlatformNVIDIA, "prim", "llama"))
	require.NoError(t, err)
	assert.Equal(t, "nemo", l.Framework)
	assert.Equal(t, "prim", l.Requested)
	assert.Contains(t, l.Remapped, "prim does not run on nvd")

	l, err = Build(request(t, hw.PlatformAMD, "nemo", "qwen"))
	require.NoError(t, err)
	assert.Equal(t, "prim", l.Framework)
	assert.Equal(t, "nemo", l.Requested)
	assert.NotEmpty(t, l.Remapped)

	l, err = Build(request(t, hw.PlatformAMD, "mega", "qwen"))
	require.NoError(t, err)
	assert.Empty(t, l.Remapped)
	assert.Equal(t, "mega", l.Requested)
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(r *core.Request)
		errHas []string
	}{
		{"unknown framework", func(r *core.Request) { r.Framework = "deepspeed" }, []string{"unknown framework", "deepspeed"}},
		{"mega on cpu", func(r *core.Request) { r.Platform, r.Host = hw.PlatformCPU, host(hw.PlatformCPU, 0) }, []string{"mega does not run on platform cpu"}},
		{"bad platform", func(r *core.Request) { r.Platform = "tpu" }, []string{"Platform", "tpu"}},
		{"host mismatch", func(r *core.Request) { r.Host = host(hw.PlatformNVIDIA, 8) }, []string{"Platform", "detected host"}},
		{"unknown model", func(r *core.Request) { r.Model = "gpt5" }, []string{"Model", "gpt5"}},
		{"TPxPPxDP", func(r *core.Request) { r.Fair.TP = 2 }, []string{"TP×PP×DP", "16", "8"}},
		{"GBS", func(r *core.Request) { r.Fair.GBS = 100 }, []string{"GBS 100", "MBS×DP×GA"}},
		{"heads by TP", func(r *core.Request) { r.Model, r.Fair.TP, r.Fair.DP = "qwen", 8, 1 }, []string{"28 attention heads", "TP 8"}},
		{"kv heads by TP", func(r *core.Request) { r.Model, r.GPUs, r.Fair.TP, r.Fair.DP = "qwen", 7, 7, 1 }, []string{"4 KV heads", "TP 7"}},
		{"attention heads by TP", func(r *core.Request) { r.Model, r.Fair.TP, r.Fair.DP = "qwen-proxy", 2, 4 }, []string{"7 attention heads", "TP 2"}},
		{"layers by PP", func(r *core.Request) { r.Model, r.Fair.PP, r.Fair.DP = "qwen-proxy", 4, 2 }, []string{"PP 4", "2 layers"}},
		{"SL beyond positions", func(r *core.Request) { r.Model, r.Fair.SL = "mistral", 65536 }, []string{"SL 65536", "32768 positions"}},
		{"MIN_LR above LR", func(r *core.Request) { r.Fair.MinLR = 1 }, []string{"MIN_LR"}},
		{"warmup", func(r *core.Request) { r.Fair.WarmupSteps = 501 }, []string{"WARMUP_STEPS 501"}},
		{"precision", func(r *core.Request) { r.Fair.Precision = "fp16" }, []string{"PRECISION", "fp16"}},
		{"profile window", func(r *core.Request) { r.Fair.Profile, r.Fair.ProfileStepEnd = true, 5 }, []string{"PROFILE_STEP_START"}},
		{"profile rank", func(r *core.Request) { r.Fair.Profile, r.Fair.ProfileRanks = true, []int{8} }, []string{"PROFILE_RANKS", "rank 8"}},
		{"relative path", func(r *core.Request) { r.TokenizerPath = "tokenizers/llama" }, []string{"TokenizerPath", "absolute"}},
		{"too many GPUs", func(r *core.Request) { r.GPUs, r.Fair.DP = 16, 16 }, []string{"GPUs 16", "8 GPUs"}},
		{"zero MBS", func(r *core.Request) { r.Fair.MBS = 0 }, []string{"MBS is 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := request(t, hw.PlatformAMD, "mega", "llama")
			tc.edit(&r)
			_, err := Build(r)
			require.Error(t, err)
			for _, w := range tc.errHas {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestPrimExperimentFromPinnedStock(t *testing.T) {
	r := request(t, hw.PlatformAMD, "prim", "llama")
	l, err := Build(r)
	require.NoError(t, err)
	assert.Equal(t, "/output/amd-prim-llama/primus/llama-exp.yaml", l.Env["EXP"])
	y := string(l.Files[prim.PatchedName("llama")])
	assert.True(t, strings.HasPrefix(y, "# "+prim.StockComment+"llama3.1_8B-BF16-pretrain.yaml\n"), y)
	assert.Contains(t, y, "min_lr: 0.00003")
	assert.Contains(t, y, "adam_eps: 0.00000001")
	assert.Contains(t, y, "fp8: null")
	assert.Equal(t, []string{"bash", prim.Script}, l.Command)

	r.Fair.Precision = "fp8"
	l, err = Build(r)
	require.NoError(t, err)
	assert.Contains(t, string(l.Files[prim.PatchedName("llama")]), prim.StockComment+"llama3.1_8B-FP8-pretrain.yaml")

	// Mistral at a length its window masks: window_size goes into the experiment file.
	r = request(t, hw.PlatformAMD, "prim", "mistral")
	r.Fair.SL = 8192
	l, err = Build(r)
	require.NoError(t, err)
	y = string(l.Files[prim.PatchedName("mistral")])
	assert.Contains(t, y, "window_size: [4096, 0]")
	assert.Contains(t, y, "exp_name: mistral-pretrain")
	assert.Equal(t, "/output/amd-prim-mistral/primus/mistral-exp.yaml", l.Env["EXP"])

	// Profiling: the traces Primus writes under its experiment folder land in OutputDir/profile.
	r.Fair.Profile = true
	l, err = Build(r)
	require.NoError(t, err)
	assert.Equal(t, []string{"bash", "-c", `mkdir -p "$1" "$2" && ln -sfn "$1" "$2/tensorboard" && exec bash "$0"`,
		prim.Script, "/output/amd-prim-mistral/profile", "/output/amd-prim-mistral/primus/rival/rival/mistral-pretrain"}, l.Command)
}

// flags groups argv into flag → values (a value-less flag maps to ""), with "--k=v" split; tokens
// before the first flag are grouped under the empty name.
func flags(argv []string) map[string]string {
	out := map[string]string{}
	cur := ""
	for _, a := range argv {
		if strings.HasPrefix(a, "--") {
			if k, v, ok := strings.Cut(a, "="); ok {
				out[k] = v
				cur = ""
				continue
			}
			cur = a
			out[cur] = ""
			continue
		}
		if out[cur] != "" {
			out[cur] += " "
		}
		out[cur] += a
	}
	return out
}

// changed lists what differs between two launches: argv flags, env keys (as "env:K") and files (as
// "file:N").
func changed(a, b core.Launch) []string {
	var out []string
	fa, fb := flags(a.Command), flags(b.Command)
	for k := range union(fa, fb) {
		va, oka := fa[k]
		vb, okb := fb[k]
		if va != vb || oka != okb {
			out = append(out, k)
		}
	}
	ea, eb := oneHostEnv(a), oneHostEnv(b)
	for k := range union(ea, eb) {
		if ea[k] != eb[k] {
			out = append(out, "env:"+k)
		}
	}
	for k := range union(a.Files, b.Files) {
		if string(a.Files[k]) == string(b.Files[k]) {
			continue
		}
		var ta, tb map[string]string
		switch {
		case strings.HasSuffix(k, ".toml"):
			ta, tb = tomlKeys(a.Files[k]), tomlKeys(b.Files[k])
		case k == nemo.ConfigName:
			ta, tb = sectionKeys(a.Files[k]), sectionKeys(b.Files[k])
		case strings.HasPrefix(k, "primus/") && strings.HasSuffix(k, "-exp.yaml"):
			ta, tb = expKeys(a.Files[k]), expKeys(b.Files[k])
		default:
			out = append(out, "file:"+k)
			continue
		}
		// A job config changes where its keys change: report them as file:section.key.
		for key := range union(ta, tb) {
			if ta[key] != tb[key] {
				out = append(out, k+":"+key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// sectionKeys reads a JSON object of sections (nemo's Bridge configuration) into section.key → value.
func sectionKeys(b []byte) map[string]string {
	var doc map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return map[string]string{"(not a JSON object of sections)": string(b)}
	}
	out := map[string]string{}
	for sec, fields := range doc {
		for k, v := range fields {
			out[sec+"."+k] = string(v)
		}
	}
	return out
}

// oneHostEnv is the environment a launch gets on one host: Env plus the rendezvous variables it
// asks for.
func oneHostEnv(l core.Launch) map[string]string {
	env := maps.Clone(l.Env)
	if env == nil {
		env = map[string]string{}
	}
	if l.Rendezvous.Env {
		for _, v := range core.NodeEnv(l.Rendezvous.LocalNode()) {
			env[v.Name] = v.Value
		}
	}
	return env
}

// expKeys reads a Primus experiment file's root keys and pre_trainer overrides into key → yaml text.
func expKeys(b []byte) map[string]string {
	var v struct {
		Root    map[string]any `yaml:",inline"`
		Modules struct {
			PreTrainer struct {
				Overrides map[string]any `yaml:"overrides"`
			} `yaml:"pre_trainer"`
		} `yaml:"modules"`
	}
	out := map[string]string{}
	if err := yaml.Unmarshal(b, &v); err != nil {
		out["(unparsable)"] = err.Error()
		return out
	}
	for k, x := range v.Root {
		if k != "modules" {
			out[k] = fmt.Sprint(x)
		}
	}
	for k, x := range v.Modules.PreTrainer.Overrides {
		out["overrides."+k] = fmt.Sprint(x)
	}
	return out
}

// tomlKeys reads a flat TOML job config (sections of key = value lines) into section.key → value.
func tomlKeys(b []byte) map[string]string {
	out := map[string]string{}
	sec := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			sec = strings.Trim(line, "[]")
			continue
		}
		if k, v, ok := strings.Cut(line, " = "); ok && !strings.HasPrefix(line, "#") {
			out[sec+"."+k] = v
		}
	}
	return out
}

func union[V any](a, b map[string]V) map[string]bool {
	u := map[string]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}

// TestKnobs changes one config.env key at a time and checks that the launch changes exactly where that
// key is expressed, for every framework that runs on the platform.
func TestKnobs(t *testing.T) {
	type knob struct {
		name string
		edit func(r *core.Request)
		want map[string][]string // framework → changed flags
	}
	profileOn := func(r *core.Request) { r.Fair.Profile = true }
	knobs := []knob{
		{"SEED", func(r *core.Request) { r.Fair.Seed = 7 }, map[string][]string{
			"titan": {"file:rival_titan.json", "rival_titan.toml:debug.seed"},
			"mega":  {"--seed"}, "prim": {"primus/llama-exp.yaml:overrides.seed"}, "nemo": {"rival_nemo.json:dataset.random_seed", "rival_nemo.json:rng.seed"}, "fsdp": {"--seed", "env:PYTHONHASHSEED"}}},
		{"MBS", func(r *core.Request) { r.Fair.MBS = 2 }, map[string][]string{
			"titan": {"file:rival_titan.json", "rival_titan.toml:parallelism.pipeline_parallel_microbatch_size", "rival_titan.toml:training.global_batch_size", "rival_titan.toml:training.local_batch_size"},
			"mega":  {"--global-batch-size", "--micro-batch-size"}, "prim": {"primus/llama-exp.yaml:overrides.global_batch_size", "primus/llama-exp.yaml:overrides.micro_batch_size"},
			"nemo": {"rival_nemo.json:train.global_batch_size", "rival_nemo.json:train.micro_batch_size"}, "fsdp": {"--micro-batch"}}},
		{"SL", func(r *core.Request) { r.Fair.SL = 4096 }, map[string][]string{
			"titan": {"rival_titan.toml:training.seq_len"},
			"mega":  {"--seq-length"}, "prim": {"primus/llama-exp.yaml:overrides.seq_length"}, "nemo": {"rival_nemo.json:dataset.seq_length", "rival_nemo.json:model.seq_length"}, "fsdp": {"--seq-len"}}},
		{"GA", func(r *core.Request) { r.Fair.GA = 4 }, map[string][]string{
			"titan": {"file:rival_titan.json", "rival_titan.toml:training.global_batch_size"},
			"mega":  {"--global-batch-size"}, "prim": {"primus/llama-exp.yaml:overrides.global_batch_size"}, "nemo": {"rival_nemo.json:train.global_batch_size"}, "fsdp": {"--grad-accum"}}},
		{"TP", func(r *core.Request) { r.Fair.TP, r.Fair.DP = 2, 4 }, map[string][]string{
			"titan": {"file:rival_titan.json", "rival_titan.toml:parallelism.data_parallel_shard_degree", "rival_titan.toml:parallelism.tensor_parallel_degree", "rival_titan.toml:training.global_batch_size"},
			"mega":  {"--global-batch-size", "--make-vocab-size-divisible-by", "--sequence-parallel", "--tensor-model-parallel-size"},
			"prim":  {"primus/llama-exp.yaml:overrides.global_batch_size", "primus/llama-exp.yaml:overrides.make_vocab_size_divisible_by", "primus/llama-exp.yaml:overrides.sequence_parallel", "primus/llama-exp.yaml:overrides.tensor_model_parallel_size"},
			"nemo":  {"rival_nemo.json:model.make_vocab_size_divisible_by", "rival_nemo.json:model.sequence_parallel", "rival_nemo.json:model.tensor_model_parallel_size", "rival_nemo.json:train.global_batch_size"}}},
		{"PP", func(r *core.Request) { r.Fair.PP, r.Fair.DP = 2, 4 }, map[string][]string{
			"titan": {"file:rival_titan.json", "rival_titan.toml:parallelism.data_parallel_shard_degree", "rival_titan.toml:parallelism.pipeline_parallel_degree", "rival_titan.toml:training.global_batch_size", "rival_titan.toml:training.local_batch_size"},
			"mega":  {"--global-batch-size", "--pipeline-model-parallel-size"},
			"prim":  {"primus/llama-exp.yaml:overrides.global_batch_size", "primus/llama-exp.yaml:overrides.pipeline_model_parallel_size"}, "nemo": {"rival_nemo.json:model.pipeline_model_parallel_size", "rival_nemo.json:train.global_batch_size"}}},
		{"DP", func(r *core.Request) { r.GPUs, r.Fair.DP = 4, 4 }, map[string][]string{
			"titan": {"--nproc_per_node", "file:rival_titan.json", "rival_titan.toml:parallelism.data_parallel_shard_degree", "rival_titan.toml:training.global_batch_size"},
			"mega":  {"--global-batch-size", "--nproc_per_node"}, "prim": {"env:GPUS_PER_NODE", "primus/llama-exp.yaml:overrides.global_batch_size"},
			"nemo": {"--nproc_per_node", "rival_nemo.json:train.global_batch_size"}, "fsdp": {"--nproc_per_node"}}},
		{"LR", func(r *core.Request) { r.Fair.LR = 1e-4 }, map[string][]string{
			"titan": {"rival_titan.toml:lr_scheduler.min_lr_factor", "rival_titan.toml:optimizer.lr"},
			"mega":  {"--lr"}, "prim": {"primus/llama-exp.yaml:overrides.lr"}, "nemo": {"rival_nemo.json:optimizer.lr"}, "fsdp": {"--lr"}}},
		{"MIN_LR", func(r *core.Request) { r.Fair.MinLR = 1e-5 }, map[string][]string{
			"titan": {"rival_titan.toml:lr_scheduler.min_lr_factor"},
			"mega":  {"--min-lr"}, "prim": {"primus/llama-exp.yaml:overrides.min_lr"}, "nemo": {"rival_nemo.json:optimizer.min_lr"}, "fsdp": {"--min-lr"}}},
		{"WARMUP_STEPS", func(r *core.Request) { r.Fair.WarmupSteps = 10 }, map[string][]string{
			"titan": {"rival_titan.toml:lr_scheduler.warmup_steps"},
			"mega":  {"--lr-warmup-iters"}, "prim": {"primus/llama-exp.yaml:overrides.lr_warmup_iters"}, "nemo": {"rival_nemo.json:scheduler.lr_warmup_iters"}, "fsdp": {"--warmup-steps"}}},
		{"TRAIN_ITERS", func(r *core.Request) { r.Fair.TrainIters = 100 }, map[string][]string{
			"titan": {"file:rival_titan.json", "rival_titan.toml:training.steps"},
			"mega":  {"--eval-interval", "--lr-decay-iters", "--train-iters"},
			"prim":  {"primus/llama-exp.yaml:overrides.eval_interval", "primus/llama-exp.yaml:overrides.lr_decay_iters", "primus/llama-exp.yaml:overrides.train_iters"}, "nemo": {"rival_nemo.json:scheduler.lr_decay_iters", "rival_nemo.json:train.train_iters", "rival_nemo.json:validation.eval_interval"}, "fsdp": {"--train-iters"}}},
		{"WEIGHT_DECAY", func(r *core.Request) { r.Fair.WeightDecay = 0.01 }, map[string][]string{
			"titan": {"rival_titan.toml:optimizer.weight_decay"},
			"mega":  {"--weight-decay"}, "prim": {"primus/llama-exp.yaml:overrides.weight_decay"}, "nemo": {"rival_nemo.json:optimizer.weight_decay", "rival_nemo.json:scheduler.end_weight_decay", "rival_nemo.json:scheduler.start_weight_decay"}, "fsdp": {"--weight-decay"}}},
		{"BETA2", func(r *core.Request) { r.Fair.Beta2 = 0.999 }, map[string][]string{
			"titan": {"rival_titan.toml:optimizer.beta2"},
			"mega":  {"--adam-beta2"}, "prim": {"primus/llama-exp.yaml:overrides.adam_beta2"}, "nemo": {"rival_nemo.json:optimizer.adam_beta2"}, "fsdp": {"--beta2"}}},
		{"PRECISION=fp8", func(r *core.Request) { r.Fair.Precision = "fp8" }, map[string][]string{
			"mega": {"--fp8-amax-compute-algo", "--fp8-amax-history-len", "--fp8-format", "--fp8-recipe"},
			"prim": {"primus/llama-exp.yaml:overrides.fp8", "primus/llama-exp.yaml:overrides.fp8_amax_history_len", "primus/llama-exp.yaml:overrides.fp8_recipe",
				"primus/llama-exp.yaml:overrides.moe_use_legacy_grouped_gemm"}, "nemo": {"rival_nemo.json:mixed_precision.fp8", "rival_nemo.json:mixed_precision.fp8_amax_compute_algo", "rival_nemo.json:mixed_precision.fp8_amax_history_len", "rival_nemo.json:mixed_precision.fp8_margin", "rival_nemo.json:mixed_precision.fp8_param", "rival_nemo.json:mixed_precision.fp8_param_gather", "rival_nemo.json:mixed_precision.fp8_recipe"}}},
		{"PRECISION=fp32", func(r *core.Request) { r.Fair.Precision = "fp32" }, map[string][]string{
			"titan": {"rival_titan.toml:training.mixed_precision_param"},
			"mega":  {"--bf16"}, "prim": {"primus/llama-exp.yaml:overrides.bf16"}, "nemo": {"rival_nemo.json:mixed_precision.bf16", "rival_nemo.json:mixed_precision.fp32", "rival_nemo.json:mixed_precision.params_dtype", "rival_nemo.json:mixed_precision.pipeline_dtype"}, "fsdp": {"--precision"}}},
		{"PROFILE", profileOn, map[string][]string{
			"mega": {"--profile", "--profile-ranks", "--profile-step-end", "--profile-step-start", "--tensorboard-dir", "--use-pytorch-profiler"},
			"prim": {"", // the command: the trace folder is linked to OutputDir/profile before the run
				"primus/llama-exp.yaml:overrides.profile", "primus/llama-exp.yaml:overrides.profile_ranks", "primus/llama-exp.yaml:overrides.profile_step_end", "primus/llama-exp.yaml:overrides.profile_step_start", "primus/llama-exp.yaml:overrides.torch_profiler_use_gzip", "primus/llama-exp.yaml:overrides.use_pytorch_profiler"},
			"nemo": {"rival_nemo.json:logger.tensorboard_dir", "rival_nemo.json:profiling.use_pytorch_profiler"}}},
	}
	// Knobs of the profiler window, with profiling on in both launches.
	for _, k := range []knob{
		{"PROFILE_STEP_START", func(r *core.Request) { r.Fair.ProfileStepStart = 5 }, map[string][]string{
			"mega": {"--profile-step-start"}, "prim": {"primus/llama-exp.yaml:overrides.profile_step_start"}, "nemo": {"rival_nemo.json:profiling.profile_step_start"}}},
		{"PROFILE_STEP_END", func(r *core.Request) { r.Fair.ProfileStepEnd = 20 }, map[string][]string{
			"mega": {"--profile-step-end"}, "prim": {"primus/llama-exp.yaml:overrides.profile_step_end"}, "nemo": {"rival_nemo.json:profiling.profile_step_end"}}},
		{"PROFILE_RANKS", func(r *core.Request) { r.Fair.ProfileRanks = []int{0, 7} }, map[string][]string{
			"mega": {"--profile-ranks"}, "prim": {"primus/llama-exp.yaml:overrides.profile_ranks"}, "nemo": {"rival_nemo.json:profiling.profile_ranks"}}},
	} {
		edit := k.edit
		k.edit = func(r *core.Request) { profileOn(r); edit(r) }
		k.name += " (profiling on)"
		knobs = append(knobs, k)
	}
	for _, k := range knobs {
		for fw, want := range k.want {
			platform := hw.PlatformAMD
			if fw == "nemo" || fw == "titan" {
				platform = hw.PlatformNVIDIA // titan: the TOML job config, compared key by key
			}
			t.Run(k.name+"/"+fw, func(t *testing.T) {
				base := request(t, platform, fw, "llama")
				if strings.HasSuffix(k.name, "(profiling on)") {
					profileOn(&base)
				}
				a, err := Build(base)
				require.NoError(t, err)
				r := base
				r.Fair.ProfileRanks = append([]int(nil), base.Fair.ProfileRanks...)
				k.edit(&r)
				b, err := Build(r)
				require.NoError(t, err)
				assert.Equal(t, want, changed(a, b))
			})
		}
	}
}

func TestEntryScripts(t *testing.T) {
	for _, tc := range []struct{ platform, fw, file string }{
		{hw.PlatformNVIDIA, "nemo", "rival_nemo.py"}, {hw.PlatformCPU, "fsdp", "train.py"},
	} {
		l, err := Build(request(t, tc.platform, tc.fw, "llama-proxy"))
		require.NoError(t, err)
		script := l.Files[tc.file]
		require.NotEmpty(t, script, "%s ships %s", tc.fw, tc.file)
		sum := blake3.Sum256(script)
		assert.Equal(t, hex.EncodeToString(sum[:]), l.EntryScriptDigest)
		assert.Contains(t, l.Command, path.Join(l.WorkDir, tc.file), "the command runs the shipped script")
	}
}

func TestNamesAndPlatforms(t *testing.T) {
	assert.Equal(t, []string{"fsdp", "mega", "nemo", "prim", "titan"}, Names())
	assert.Equal(t, []string{"amd", "nvd"}, Platforms("titan"))
	assert.Equal(t, []string{"amd"}, Platforms("prim"))
	assert.Nil(t, Platforms("nope"))
}

// docsTable checks (or with -update rewrites) the generated table between two markers of
// docs/frameworks.md.
func docsTable(t *testing.T, marker, want string) {
	b, err := os.ReadFile("../docs/frameworks.md")
	require.NoError(t, err)
	s := string(b)
	begin, endMark := "<!-- "+marker+":begin -->\n", "<!-- "+marker+":end -->"
	start, end := strings.Index(s, begin), strings.Index(s, endMark)
	require.True(t, start >= 0 && end > start, "docs/frameworks.md has the %s markers", marker)
	if *update {
		s = s[:start+len(begin)] + want + s[end:]
		require.NoError(t, os.WriteFile("../docs/frameworks.md", []byte(s), 0o644))
	}
	assert.Equal(t, want, s[start+len(begin):end], "docs/frameworks.md's %s table differs from the code: go test ./frameworks -run TestDocs -update", marker)
}

// docs/frameworks.md shows the model registry's facts and the platform environment as the code has them.
func TestDocsModelFacts(t *testing.T)  { docsTable(t, "model-facts", models.FactsMarkdown()) }
func TestDocsPlatformEnv(t *testing.T) { docsTable(t, "platform-env", core.PlatformEnvMarkdown()) }

// Every GPU launch names the pinned image of its stack, the default being the current one; a stack
// Rival does not pin, or one on cpu, is refused naming STACK.
func TestLaunchNamesItsStack(t *testing.T) {
	for _, platform := range []string{hw.PlatformAMD, hw.PlatformNVIDIA} {
		for _, fw := range Names() {
			for _, stack := range append([]string{""}, core.StackNames...) {
				r := request(t, platform, fw, "llama")
				r.Stack = stack
				l, err := Build(r)
				require.NoError(t, err, "%s %s %q", platform, fw, stack)
				pin, err := core.PinFor(platform, stack)
				require.NoError(t, err)
				assert.Equal(t, pin.Name(), l.Stack, "%s %s %q", platform, fw, stack)
				if stack == "" {
					assert.Contains(t, pin.Image, map[string]string{hw.PlatformAMD: "v26.5", hw.PlatformNVIDIA: "26.06"}[platform], "the default is the current stack")
				}
			}
		}
	}
	r := request(t, hw.PlatformNVIDIA, "mega", "llama")
	r.Stack = "newest"
	_, err := Build(r)
	assert.ErrorContains(t, err, `STACK "newest": want current or previous`)
	r = request(t, hw.PlatformCPU, "fsdp", "llama-proxy")
	r.Stack = core.StackPrevious
	_, err = Build(r)
	assert.ErrorContains(t, err, "STACK previous: the cpu platform has one stack")
	r.Stack = ""
	l, err := Build(r)
	require.NoError(t, err)
	assert.Empty(t, l.Stack)
}
