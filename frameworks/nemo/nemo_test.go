package nemo_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/frameworks/nemo"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

var update = flag.Bool("update", false, "rewrite testdata/matrix/ (the configurations bridgecheck validates)")

// factsFile is the pinned Bridge's facts, extracted by bridgecheck/extract.py.
const factsFile = "../facts/bridge_" + nemo.BridgeVersion + ".json"

func loadFacts(t testing.TB) *nemo.Facts {
	b, err := os.ReadFile(factsFile)
	require.NoError(t, err)
	f, err := nemo.LoadFacts(b)
	require.NoError(t, err)
	return f
}

func nvidiaHost(n int) hw.Host {
	h := hw.Host{Platform: hw.PlatformNVIDIA}
	for i := 0; i < n; i++ {
		h.GPUs = append(h.GPUs, hw.GPU{Index: i, Vendor: hw.VendorNVIDIA, Model: "H100 SXM"})
	}
	return h
}

// request is a nemo run of model with config.env's fair configuration on one 8-GPU node.
func request(model string) core.Request {
	return core.Request{
		Platform: hw.PlatformNVIDIA, Framework: "nemo", Model: model, Host: nvidiaHost(8),
		Fair: core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, TP: 1, PP: 1, TrainIters: 500, WarmupSteps: 50,
			LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: "bf16",
			ProfileStepStart: 10, ProfileStepEnd: 12, ProfileRanks: []int{0}},
		DataPrefix: "/rival/data/bc-train_text_document", DataCacheDir: "/rival/cache",
		TokenizerPath: "/rival/tokenizer", OutputDir: "/rival/run",
	}
}

// variants are the matrix columns: each edits the base request.
var variants = []struct {
	name string
	edit func(r *core.Request)
}{
	{"base", func(r *core.Request) {}},
	{"tp2", func(r *core.Request) { r.Fair.TP = 2 }},
	{"tp4pp2", func(r *core.Request) { r.Fair.TP, r.Fair.PP = 4, 2 }},
	{"fp8", func(r *core.Request) { r.Fair.Precision = "fp8" }},
	{"fp32", func(r *core.Request) { r.Fair.Precision = "fp32" }},
	{"profile", func(r *core.Request) { r.Fair.Profile, r.Fair.ProfileRanks = true, []int{0, 3} }},
	{"sl8192", func(r *core.Request) { r.Fair.SL = 8192 }},
	{"2nodes", func(r *core.Request) { r.NNodes = 2 }},
}

// cell is one matrix configuration as bridgecheck/test_rival_nemo.py reads it.
type cell struct {
	WorldSize int             `json:"world_size"`
	Seed      int             `json:"seed"`
	Config    json.RawMessage `json:"config"`
}

// TestMatrixAgainstBridgeFacts builds every nemo launch of the matrix through frameworks.Build (what
// train runs) and checks its Bridge configuration against the pinned Bridge's fields and types. Cells
// the registry refuses (a proxy's heads that TP does not divide, a proxy's 4096 positions at SL 8192)
// must be refused with that reason.
// The configurations are kept under testdata/matrix/ for Bridge's own validation (bridgecheck).
func TestMatrixAgainstBridgeFacts(t *testing.T) {
	facts := loadFacts(t)
	seen := map[string]bool{}
	for _, model := range models.Names() {
		for _, v := range variants {
			name := model + "-" + v.name
			t.Run(name, func(t *testing.T) {
				r := request(model)
				v.edit(&r)
				l, err := frameworks.Build(r)
				m, _ := models.Lookup(model)
				if r.Fair.TP > 1 && (m.KVHeads%r.Fair.TP != 0 || m.Heads%r.Fair.TP != 0) {
					require.Error(t, err)
					assert.Contains(t, err.Error(), fmt.Sprintf("TP %d does not divide", r.Fair.TP))
					return
				}
				if r.Fair.SL > m.MaxPositions {
					require.Error(t, err)
					assert.Contains(t, err.Error(), fmt.Sprintf("exceeds the %d positions", m.MaxPositions))
					return
				}
				require.NoError(t, err)
				doc := l.Files[nemo.ConfigName]
				require.NotEmpty(t, doc)
				world := 8 * max(r.NNodes, 1)
				require.NoError(t, nemo.CheckConfig(facts, doc, world))
				assert.Contains(t, l.Command, "/rival/run/"+nemo.ScriptName)
				assert.Contains(t, l.Command, "/rival/run/"+nemo.ConfigName)

				var compact bytes.Buffer
				require.NoError(t, json.Compact(&compact, doc))
				b, err := json.MarshalIndent(cell{WorldSize: world, Seed: r.Fair.Seed, Config: compact.Bytes()}, "", " ")
				require.NoError(t, err)
				checkFile(t, filepath.Join("testdata", "matrix", name+".json"), append(b, '\n'))
				seen[name+".json"] = true
			})
		}
	}
	// No stale cells left for bridgecheck to validate.
	entries, err := os.ReadDir(filepath.Join("testdata", "matrix"))
	require.NoError(t, err)
	for _, e := range entries {
		if !seen[e.Name()] {
			if *update {
				require.NoError(t, os.Remove(filepath.Join("testdata", "matrix", e.Name())))
				continue
			}
			t.Errorf("testdata/matrix/%s is no matrix cell: go test ./frameworks/nemo -run TestMatrix -update removes it", e.Name())
		}
	}
}

func checkFile(t *testing.T, p string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "go test ./frameworks/nemo -run TestMatrix -update creates %s", p)
	assert.Equal(t, string(want), string(got), "%s differs: review, then go test ./frameworks/nemo -run TestMatrix -update", p)
}

func baseConfig(t *testing.T) map[string]map[string]any {
	l, err := frameworks.Build(request("llama"))
	require.NoError(t, err)
	var cfg map[string]map[string]any
	require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &cfg))
	return cfg
}

// TestNegativeControls: the checker must refuse what Bridge would refuse.
func TestNegativeControls(t *testing.T) {
	facts := loadFacts(t)
	tests := []struct {
		name   string
		edit   func(c map[string]map[string]any)
		errHas []string
	}{
		{"unknown field", func(c map[string]map[string]any) { c["model"]["num_layer"] = 32 }, []string{"model.num_layer", "ModelProvider has no such field"}},
		{"unknown section", func(c map[string]map[string]any) { c["trainer"] = map[string]any{} }, []string{"trainer: not a ConfigContainer section"}},
		{"computed field", func(c map[string]map[string]any) { c["scheduler"]["lr_warmup_steps"] = 50 }, []string{"scheduler.lr_warmup_steps", "computes this field"}},
		{"int as string", func(c map[string]map[string]any) { c["train"]["train_iters"] = "500" }, []string{"train.train_iters", `"500" is not a int`}},
		{"float where int", func(c map[string]map[string]any) { c["train"]["micro_batch_size"] = 1.5 }, []string{"train.micro_batch_size"}},
		{"lr as string", func(c map[string]map[string]any) { c["optimizer"]["lr"] = "3e-05" }, []string{"optimizer.lr", "want Optional[float]"}},
		{"bool as string", func(c map[string]map[string]any) { c["ddp"]["overlap_grad_reduce"] = "true" }, []string{"ddp.overlap_grad_reduce"}},
		{"literal", func(c map[string]map[string]any) { c["scheduler"]["lr_decay_style"] = "cosine-annealing" }, []string{"scheduler.lr_decay_style", "not one of"}},
		{"window of three", func(c map[string]map[string]any) { c["model"]["window_size"] = []int{4096, 0, 1} }, []string{"model.window_size", "3 elements"}},
		{"dtype", func(c map[string]map[string]any) { c["mixed_precision"]["params_dtype"] = "bf16" }, []string{"mixed_precision.params_dtype", "bfloat16"}},
		{"min_lr above lr", func(c map[string]map[string]any) { c["optimizer"]["min_lr"] = 1e-3 }, []string{"optimizer.min_lr", "min_lr <= lr"}},
		{"warm-up as long as decay", func(c map[string]map[string]any) { c["scheduler"]["lr_warmup_iters"] = 500 }, []string{"scheduler.lr_warmup_iters", "warm-up < decay"}},
		{"seed zero", func(c map[string]map[string]any) { c["rng"]["seed"] = 0 }, []string{"rng.seed", "positive"}},
		{"seq length mismatch", func(c map[string]map[string]any) { c["dataset"]["seq_length"] = 4096 }, []string{"dataset.seq_length"}},
		{"required section", func(c map[string]map[string]any) { delete(c, "tokenizer") }, []string{"tokenizer: ConfigContainer has no default"}},
		{"required field", func(c map[string]map[string]any) { delete(c["dataset"], "random_seed") }, []string{"dataset.random_seed", "no default"}},
		{"gbs", func(c map[string]map[string]any) { c["train"]["global_batch_size"] = 60 }, []string{"train.global_batch_size 60"}},
		{"sequence parallel at TP 1", func(c map[string]map[string]any) { c["model"]["sequence_parallel"] = true }, []string{"model.sequence_parallel", "without tensor parallelism"}},
	}
	require.NoError(t, nemo.CheckConfig(facts, mustJSON(t, baseConfig(t)), 8), "the unedited configuration passes")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := baseConfig(t)
			tc.edit(c)
			err := nemo.CheckConfig(facts, mustJSON(t, c), 8)
			require.Error(t, err)
			for _, w := range tc.errHas {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestFairConfiguration checks where each fair-configuration value lands in Bridge's configuration,
// including SEED reaching model initialisation (rng.seed) and the data order (dataset.random_seed).
func TestFairConfiguration(t *testing.T) {
	r := request("mistral")
	r.Fair.Seed, r.Fair.SL, r.Fair.TP, r.Fair.PP, r.Fair.Precision = 7, 8192, 2, 2, "fp8"
	r.Fair.WarmupSteps, r.Fair.LR, r.Fair.MinLR, r.Fair.WeightDecay, r.Fair.Beta1, r.Fair.Beta2 = 20, 2e-4, 2e-5, 0.05, 0.8, 0.99
	r.Fair.Profile, r.Fair.ProfileRanks = true, []int{0, 1}
	l, err := frameworks.Build(r)
	require.NoError(t, err)
	var c map[string]map[string]any
	require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &c))
	want := map[string]any{
		"rng.seed": 7.0, "dataset.random_seed": 7.0,
		"model.seq_length": 8192.0, "dataset.seq_length": 8192.0, "model.window_size": []any{4096.0, 0.0},
		"model.tensor_model_parallel_size": 2.0, "model.pipeline_model_parallel_size": 2.0, "model.sequence_parallel": true,
		"train.micro_batch_size": 1.0, "train.global_batch_size": 16.0, "train.train_iters": 500.0,
		"optimizer.lr": 2e-4, "optimizer.min_lr": 2e-5, "optimizer.weight_decay": 0.05,
		"optimizer.adam_beta1": 0.8, "optimizer.adam_beta2": 0.99, "optimizer.adam_eps": 1e-8, "optimizer.clip_grad": 1.0,
		"scheduler.lr_warmup_iters": 20.0, "scheduler.lr_warmup_init": 0.0, "scheduler.lr_decay_iters": 500.0,
		"scheduler.lr_decay_style": "cosine",
		"mixed_precision.fp8":      "hybrid", "mixed_precision.fp8_recipe": "delayed", "mixed_precision.bf16": true,
		"mixed_precision.fp8_amax_history_len": 1024.0, "mixed_precision.fp8_param_gather": false,
		"profiling.use_pytorch_profiler": true, "profiling.profile_ranks": []any{0.0, 1.0},
		"profiling.profile_step_start": 10.0, "profiling.profile_step_end": 12.0,
		"logger.tensorboard_dir": "/rival/run/profile",
		"dataset.path_to_cache":  "/rival/cache", "dataset.blend": []any{[]any{"/rival/data/bc-train_text_document"}, nil},
		"tokenizer.tokenizer_model": "/rival/tokenizer", "tokenizer.tokenizer_type": "HuggingFaceTokenizer",
		"model.num_layers": 32.0, "model.hidden_size": 4096.0, "model.ffn_hidden_size": 14336.0,
		"model.num_attention_heads": 32.0, "model.num_query_groups": 8.0, "model.rotary_base": 10000.0,
		"model.add_qkv_bias": false, "model.vocab_size": nil,
	}
	for k, v := range want {
		s, f, _ := strings.Cut(k, ".")
		assert.Equal(t, v, c[s][f], k)
	}
	assert.Equal(t, "1", l.Env["HF_HUB_OFFLINE"], "no hub access at run time")
	assert.Equal(t, "nemo", l.Framework, "the framework keeps its name")
}

// TestDataCacheIsTheRequestsPath: the index cache is exactly the launch request's DataCacheDir (the
// writable cache mount), never a directory derived from the data prefix.
func TestDataCacheIsTheRequestsPath(t *testing.T) {
	r := request("qwen")
	r.DataCacheDir = "/somewhere/writable/3f2a"
	l, err := frameworks.Build(r)
	require.NoError(t, err)
	var c map[string]map[string]any
	require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &c))
	assert.Equal(t, "/somewhere/writable/3f2a", c["dataset"]["path_to_cache"])
	assert.NotContains(t, string(l.Files[nemo.ConfigName]), "/rival/data/\"", "nothing points the cache into the data mount")
}

func TestBuildRefusesWhatBridgeAsserts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(r *core.Request)
		errHas string
	}{
		{"seed 0", func(r *core.Request) { r.Fair.Seed = 0 }, "SEED is 0"},
		{"warm-up as long as training", func(r *core.Request) { r.Fair.WarmupSteps = r.Fair.TrainIters }, "WARMUP_STEPS 500 must be below TRAIN_ITERS 500"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request("llama")
			tc.edit(&r)
			_, err := frameworks.Build(r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.errHas)
		})
	}
}

// TestLogFamilyReadsBridgeLogs: a nemo run's log is read as Megatron-Bridge's (a real Bridge log from
// the logparse fixtures), and NeMo 2 logs stay readable under the nemo family.
func TestLogFamilyReadsBridgeLogs(t *testing.T) {
	fam, err := logparse.Canonical(nemo.LogFamily)
	require.NoError(t, err)
	assert.Equal(t, logparse.MegatronBridge, fam)
	logs, err := filepath.Glob("../logparse/testdata/real/megatron-bridge-*.log")
	require.NoError(t, err)
	require.NotEmpty(t, logs, "logparse keeps real Megatron-Bridge logs under testdata")
	sort.Strings(logs)
	lg, err := logparse.ParseFile(logs[0], nemo.LogFamily)
	require.NoError(t, err, logs[0])
	assert.NotEmpty(t, lg.Steps)
}

// TestNeMo2LogsStillParse: logs of earlier nemo runs (NeMo 2) keep their family.
func TestNeMo2LogsStillParse(t *testing.T) {
	lg, err := logparse.ParseFile("../logparse/testdata/real/nemo2-bionemo.log", "nemo")
	require.NoError(t, err)
	assert.NotEmpty(t, lg.Steps)
}

// FuzzCheckConfig: any bytes as a configuration give an error or nil, never a panic.
func FuzzCheckConfig(f *testing.F) {
	facts := loadFacts(f)
	l, err := frameworks.Build(request("qwen"))
	require.NoError(f, err)
	f.Add(l.Files[nemo.ConfigName], 8)
	f.Add([]byte(`{"model":{"window_size":[1,"x"]},"train":null}`), 0)
	f.Add([]byte(`{"optimizer":{"lr":"a","min_lr":1e400}}`), -3)
	f.Fuzz(func(t *testing.T, b []byte, world int) {
		_ = nemo.CheckConfig(facts, b, world)
	})
}

func FuzzLoadFacts(f *testing.F) {
	b, err := os.ReadFile(factsFile)
	require.NoError(f, err)
	f.Add(b[:2000])
	f.Add([]byte(`{"sections":{"model":{"fields":{"x":{"type":{"kind":"union"}}}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		facts, err := nemo.LoadFacts(b)
		if err == nil {
			_ = nemo.CheckConfig(facts, []byte(`{"model":{"x":1}}`), 8)
		}
	})
}

func TestFactsWithoutElementTypes(t *testing.T) {
	f, err := nemo.LoadFacts([]byte(`{"sections":{"model":{"class":"M","fields":{"l":{"type":{"kind":"list"},"init":true,"text":"list"},"t":{"type":{"kind":"tuple","variadic":true},"init":true,"text":"tuple"}}}}}`))
	require.NoError(t, err)
	err = nemo.CheckConfig(f, []byte(`{"model":{"l":[1],"t":[1]}}`), 8)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "model.t")
	assert.NotContains(t, err.Error(), "model.l")
}

// TestEntryScriptPython runs the entry script's Python tests (bridgecheck/test_rival_nemo.py). Those
// that need Megatron-Bridge run when RIVAL_BRIDGE_TREE and RIVAL_MEGATRON_TREE name upstream
// checkouts (docs/frameworks.md); without them only the script's own argument and value handling runs.
func TestEntryScriptPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		py = "/usr/bin/python3" // Debian's, with PyYAML, packaging and NumPy
	}
	cmd := exec.Command(py, "-W", "ignore", "-m", "unittest", "discover", "-s", "bridgecheck", "-v")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	if upstreamtest.Required() || (os.Getenv("RIVAL_BRIDGE_TREE") != "" && os.Getenv("RIVAL_MEGATRON_TREE") != "") {
		assert.Contains(t, string(out), "Bridge validated 39 cells")
		assert.NotContains(t, string(out), "skipped")
	}
}

// Every nemo launch carries its preflight: the entry script's --check on the exact configuration, with
// the run's world size and environment (what train and train:check run before the launch).
func TestEveryLaunchCarriesPreflight(t *testing.T) {
	for _, model := range models.Names() {
		t.Run(model, func(t *testing.T) {
			r := request(model)
			r.NNodes = 2
			l, err := frameworks.Build(r)
			require.NoError(t, err)
			require.NotNil(t, l.Preflight, "a nemo launch carries Bridge's own validation as its preflight")
			assert.Equal(t, []string{"python3", "/rival/run/rival_nemo.py", "--config", "/rival/run/rival_nemo.json",
				"--ran", "/rival/run/preflight/rival_nemo_ran.json", "--check"}, l.Preflight.Command)
			assert.Equal(t, "16", l.Preflight.Env["WORLD_SIZE"])
			assert.Equal(t, "0", l.Preflight.Env["RANK"])
			assert.Equal(t, "1", l.Preflight.Env["HF_HUB_OFFLINE"], "the run's own environment")
			assert.Equal(t, "/rival/run", l.Preflight.WorkDir)
			assert.NotContains(t, l.Preflight.Command, "/rival/run/"+nemo.RanFile, "the check leaves the run's record alone")
			for n, b := range facts.PreflightFiles() {
				assert.Equal(t, b, l.Files[nemo.PreflightDir+"/"+n], "the check imports facts' %s (helpers_cpp)", n)
			}
		})
	}
}

// Fairness: every speed- or loss-relevant setting reaches Bridge under Bridge 0.3.0's own field name,
// with the value mega and prim use. The expected field names are read from Megatron-Bridge v0.3.0
// (bridge_0.3.0.json), the values from docs/frameworks.md's fairness table; the RMSNorm epsilons are
// config.json's rms_norm_eps of each model (Llama 3.1 8B 1e-5, Qwen 2.5 7B 1e-6, Mistral 7B v0.3 1e-5).
func TestFairnessReachesBridge(t *testing.T) {
	facts := loadFacts(t)
	want := []struct {
		setting, section, field string
		value                   any
	}{
		{"overlap grad reduce", "ddp", "overlap_grad_reduce", true},
		{"overlap param gather", "ddp", "overlap_param_gather", true},
		{"distributed optimizer", "ddp", "use_distributed_optimizer", true},
		{"distributed optimizer", "optimizer", "use_distributed_optimizer", true},
		{"gradient reduce dtype fp32", "ddp", "grad_reduce_in_fp32", true},
		{"gradient reduce dtype fp32", "mixed_precision", "grad_reduce_in_fp32", true},
		{"recompute none", "model", "recompute_granularity", nil},
		{"EOD loss masking off", "dataset", "eod_mask_loss", false},
		{"init method std", "model", "init_method_std", 0.02},
		{"attention backend", "model", "attention_backend", "auto"},
		{"gradient-accumulation fusion off", "model", "gradient_accumulation_fusion", false},
		{"masked-softmax fusion", "model", "masked_softmax_fusion", true},
		{"bias-SwiGLU fusion", "model", "bias_activation_fusion", true},
		{"RoPE fusion", "model", "apply_rope_fusion", true},
		{"bias-dropout fusion", "model", "bias_dropout_fusion", true},
		{"cross-entropy fusion off", "model", "cross_entropy_loss_fusion", false},
		{"data loader", "dataset", "dataloader_type", "single"},
		{"data loader workers", "dataset", "num_workers", 2.0},
	}
	eps := map[string]float64{"llama": 1e-5, "qwen": 1e-6, "mistral": 1e-5}
	for _, model := range models.Names() {
		t.Run(model, func(t *testing.T) {
			l, err := frameworks.Build(request(model))
			require.NoError(t, err)
			var cfg map[string]map[string]any
			require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &cfg))
			for _, w := range want {
				sec, ok := facts.Sections[w.section]
				require.True(t, ok, "section %s in the facts", w.section)
				_, known := sec.Fields[w.field]
				assert.True(t, known, "%s: %s.%s is a Bridge 0.3.0 field", w.setting, w.section, w.field)
				got, set := cfg[w.section][w.field]
				assert.True(t, set, "%s: %s.%s is written explicitly", w.setting, w.section, w.field)
				assert.Equal(t, w.value, got, "%s: %s.%s", w.setting, w.section, w.field)
			}
			m, _ := models.Lookup(model)
			base := model
			if m.Proxy {
				base = m.Base
			}
			assert.Equal(t, eps[base], cfg["model"]["layernorm_epsilon"], "RMSNorm epsilon of %s", base)
		})
	}
}

// TestFactsArePinned: the facts come from the trees the launch is pinned to.
func TestFactsArePinned(t *testing.T) {
	f := loadFacts(t)
	assert.Equal(t, nemo.BridgeVersion, f.Source.MegatronBridge.Version)
	assert.Equal(t, nemo.BridgeCommit, f.Source.MegatronBridge.Commit)
	assert.Equal(t, nemo.MegatronCoreVer, f.Source.MegatronCore.Version)
	assert.Equal(t, nemo.MegatronCoreCommit, f.Source.MegatronCore.Commit)
	assert.Contains(t, nemo.Version, nemo.BridgeCommit[:8])
	assert.Contains(t, nemo.Version, nemo.MegatronCoreCommit[:8])
}

// bridgeTrees returns the fetched Megatron-Bridge and Megatron-LM trees the preflight runs against,
// or skips (docs/frameworks.md, "NeMo": RIVAL_BRIDGE_TREE at v0.3.0, RIVAL_MEGATRON_TREE at b0cc2706).
func bridgeTrees(t *testing.T) (bridge, megatron string) {
	tr := upstreamtest.Get(t)
	return tr.Bridge, tr.Megatron
}

// runPreflight writes the launch's files under OutputDir and runs its preflight command with the
// fetched trees standing in for the image's packages (torch stubbed by frameworks/facts/pystubs.py).
func runPreflight(t *testing.T, l core.Launch, out, bridge, megatron string) (string, error) {
	t.Helper()
	require.NotNil(t, l.Preflight)
	for name, b := range l.Files {
		p := filepath.Join(out, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	require.Equal(t, "python3", l.Preflight.Command[0])
	here, err := filepath.Abs(filepath.Join("..", "facts"))
	require.NoError(t, err)
	py := os.Getenv("RIVAL_PREFLIGHT_PYTHON")
	if py == "" {
		py = "/usr/bin/python3" // Debian's, with PyYAML, packaging and NumPy
	}
	cmd := exec.Command(py, append([]string{"-W", "ignore", "-c", upstreamtest.NemoPreflight, here, bridge, megatron}, l.Preflight.Command[1:]...)...)
	cmd.Dir = out
	cmd.Env = os.Environ()
	for k, v := range l.Preflight.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// tokenizerDir is a folder holding the model's real tokenizer.json, so the preflight reads the
// vocabulary Bridge pads as the run would (Llama 3.1's from ../shared/tokenizers, RIVAL_SHARED_DIR).
func tokenizerDir(t *testing.T, model string) string {
	base := strings.TrimSuffix(model, "-proxy")
	d := map[string]string{"qwen": "../../tokenizer/testdata/qwen-2.5", "mistral": "../../tokenizer/testdata/mistral-7b-v0.1"}[base]
	if d == "" {
		shared := os.Getenv("RIVAL_SHARED_DIR")
		if shared == "" {
			shared = filepath.Join("..", "..", "..", "shared")
		}
		d = filepath.Join(shared, "tokenizers", "llama-3.1")
	}
	abs, err := filepath.Abs(d)
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(abs, "tokenizer.json")); err != nil {
		upstreamtest.Missing(t, "no tokenizer.json in "+abs+" (set RIVAL_SHARED_DIR to the folder holding tokenizers/llama-3.1)")
	}
	return abs
}

// TestPreflightOnUpstreamTrees runs every nemo launch's preflight, as train and train:check run it,
// on the fetched Bridge tree: each cell the registry accepts passes Bridge's own validation.
func TestPreflightOnUpstreamTrees(t *testing.T) {
	bridge, megatron := bridgeTrees(t)
	n := 0
	for _, model := range models.Names() {
		for _, v := range variants {
			r := request(model)
			v.edit(&r)
			dir := t.TempDir()
			r.OutputDir, r.DataCacheDir, r.TokenizerPath = dir, filepath.Join(dir, "cache"), tokenizerDir(t, model)
			l, err := frameworks.Build(r)
			if err != nil {
				continue // refused by the registry: TestMatrixAgainstBridgeFacts checks why
			}
			n++
			t.Run(model+"-"+v.name, func(t *testing.T) {
				out, err := runPreflight(t, l, dir, bridge, megatron)
				require.NoError(t, err, out)
				assert.Contains(t, out, "preflight ok: megatron-bridge configuration valid for")
				// What Bridge built is Rival's workload, field by field.
				got, found, err := effective.FromLines(strings.Split(out, "\n"))
				require.NoError(t, err, out)
				require.True(t, found, out)
				want, err := effective.Parse(l.Workload)
				require.NoError(t, err)
				assert.NoError(t, effective.CheckAgainst(l.Framework, got, want))
			})
		}
	}
	assert.Equal(t, 39, n)
}

// The preflight stops a launch Bridge would reject, quoting Bridge's own error.
func TestPreflightNegativeControlsOnUpstreamTrees(t *testing.T) {
	bridge, megatron := bridgeTrees(t)
	for _, c := range []struct {
		name string
		edit func(c map[string]map[string]any)
		want string
	}{
		{"min_lr above lr", func(c map[string]map[string]any) { c["optimizer"]["min_lr"] = 1e-3 }, "preflight failed: megatron-bridge configuration: AssertionError"},
		{"unknown field", func(c map[string]map[string]any) { c["model"]["num_layer"] = 32 }, "ModelProvider rejects the fields: "},
		{"unknown attention backend", func(c map[string]map[string]any) { c["model"]["attention_backend"] = "fastest" }, "model.attention_backend: 'fastest' is not one of"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := request("llama")
			dir := t.TempDir()
			r.OutputDir, r.DataCacheDir = dir, filepath.Join(dir, "cache")
			l, err := frameworks.Build(r)
			require.NoError(t, err)
			var cfg map[string]map[string]any
			require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &cfg))
			c.edit(cfg)
			l.Files[nemo.ConfigName] = mustJSON(t, cfg)
			out, err := runPreflight(t, l, dir, bridge, megatron)
			require.Error(t, err, out)
			assert.Contains(t, out, c.want)
		})
	}
}

// TestLlama31ProviderChangesNoDefaultRivalLeavesUnset: a Llama 3.1 launch builds its model with
// Llama31ModelProvider (the only Bridge 0.3.0 provider with Llama 3.1's RoPE scaling) where the others
// use GPTModelProvider. Every field whose default differs between the two must be one the launch sets,
// so switching class changes nothing but the scaling.
func TestLlama31ProviderChangesNoDefaultRivalLeavesUnset(t *testing.T) {
	facts := loadFacts(t)
	gpt, l31 := facts.Sections["model"], facts.Classes["Llama31ModelProvider"]
	require.NotEmpty(t, l31.Fields, "bridge facts record Llama31ModelProvider")
	l, err := frameworks.Build(request("llama"))
	require.NoError(t, err)
	var doc map[string]map[string]any
	require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &doc))
	model := doc["model"]
	for _, n := range []string{"scale_factor", "low_freq_factor", "high_freq_factor", "old_context_len"} {
		assert.Contains(t, model, n, "the Llama 3.1 launch sets %s", n)
	}
	var differ []string
	for name, f := range l31.Fields {
		g, ok := gpt.Fields[name]
		if !f.Init || ok && fmt.Sprint(g.Default) == fmt.Sprint(f.Default) {
			continue
		}
		differ = append(differ, name)
		_, set := model[name]
		assert.True(t, set, "model.%s: Llama31ModelProvider's default %v differs from GPTModelProvider's %v and the launch does not set it", name, f.Default, g.Default)
	}
	assert.NotEmpty(t, differ, "the providers differ in some defaults (the test reads them)")
}
