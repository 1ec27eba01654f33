package nemo_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
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

// pin is the NeMo image of a stack.
func pin(t testing.TB, stack string) core.Pin {
	p, err := core.PinFor(hw.PlatformNVIDIA, stack)
	require.NoError(t, err)
	return p
}

// factsFile is the facts of a stack's Bridge, extracted by bridgecheck/extract.py.
func factsFile(t testing.TB, stack string) string {
	return "../facts/bridge_" + pin(t, stack).Bridge + ".json"
}

func loadFacts(t testing.TB, stack string) *nemo.Facts {
	b, err := os.ReadFile(factsFile(t, stack))
	require.NoError(t, err)
	f, err := nemo.LoadFacts(b)
	require.NoError(t, err)
	return f
}

// matrixDir holds a stack's matrix cells, named by its Bridge release (bridgecheck picks the folder
// of the tree it runs on).
func matrixDir(t testing.TB, stack string) string {
	return filepath.Join("testdata", "matrix", "bridge-"+pin(t, stack).Bridge)
}

// forStacks runs f as a subtest for every stack.
func forStacks(t *testing.T, f func(t *testing.T, stack string)) {
	for _, stack := range core.StackNames {
		t.Run(stack, func(t *testing.T) { f(t, stack) })
	}
}

func nvidiaHost(n int) hw.Host {
	h := hw.Host{Platform: hw.PlatformNVIDIA}
	for i := 0; i < n; i++ {
		h.GPUs = append(h.GPUs, hw.GPU{Index: i, Vendor: hw.VendorNVIDIA, Model: "H100 SXM"})
	}
	return h
}

// request is a nemo run of model on a stack with config.env's fair configuration on one 8-GPU node.
func request(stack, model string) core.Request {
	return core.Request{
		Platform: hw.PlatformNVIDIA, Framework: "nemo", Stack: stack, Model: model, Host: nvidiaHost(8),
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

// TestMatrixAgainstBridgeFacts builds every nemo launch of the matrix on every stack through
// frameworks.Build (what train runs) and checks its Bridge configuration against the fields and types
// of that stack's Bridge. Cells the registry refuses (a proxy's heads that TP does not divide, a
// proxy's 4096 positions at SL 8192) must be refused with that reason.
// The configurations are kept under testdata/matrix/bridge-<version>/ for Bridge's own validation
// (bridgecheck).
func TestMatrixAgainstBridgeFacts(t *testing.T) {
	dirs := map[string]bool{}
	for _, stack := range core.StackNames {
		dirs[filepath.Base(matrixDir(t, stack))] = true
	}
	forStacks(t, func(t *testing.T, stack string) {
		facts := loadFacts(t, stack)
		dir := matrixDir(t, stack)
		seen := map[string]bool{}
		for _, model := range models.Names() {
			for _, v := range variants {
				name := model + "-" + v.name
				t.Run(name, func(t *testing.T) {
					r := request(stack, model)
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
					assert.Contains(t, l.FrameworkVersion, "megatron-bridge "+pin(t, stack).Bridge)

					var compact bytes.Buffer
					require.NoError(t, json.Compact(&compact, doc))
					b, err := json.MarshalIndent(cell{WorldSize: world, Seed: r.Fair.Seed, Config: compact.Bytes()}, "", " ")
					require.NoError(t, err)
					checkFile(t, filepath.Join(dir, name+".json"), append(b, '\n'))
					seen[name+".json"] = true
				})
			}
		}
		// No stale cells left for bridgecheck to validate.
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			if !seen[e.Name()] {
				if *update {
					require.NoError(t, os.Remove(filepath.Join(dir, e.Name())))
					continue
				}
				t.Errorf("%s/%s is no matrix cell: go test ./frameworks/nemo -run TestMatrix -update removes it", dir, e.Name())
			}
		}
	})
	// Nothing else under testdata/matrix: a folder per stack's Bridge.
	entries, err := os.ReadDir(filepath.Join("testdata", "matrix"))
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() && dirs[e.Name()] {
			continue
		}
		if *update {
			require.NoError(t, os.RemoveAll(filepath.Join("testdata", "matrix", e.Name())))
			continue
		}
		t.Errorf("testdata/matrix/%s belongs to no stack's Bridge: go test ./frameworks/nemo -run TestMatrix -update removes it", e.Name())
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

func baseConfig(t *testing.T, stack string) map[string]map[string]any {
	return baseConfigOf(t, stack, "llama")
}

// TestNegativeControls: the checker must refuse what each stack's Bridge would refuse.
func TestNegativeControls(t *testing.T) {
	type control struct {
		name   string
		edit   func(c map[string]map[string]any)
		errHas []string
	}
	common := []control{
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
	// What one release reads and the other does not.
	byStack := map[string][]control{
		core.StackCurrent: {
			{"evaluation in train", func(c map[string]map[string]any) { c["train"]["eval_iters"] = 0 }, []string{"train.eval_iters", "deprecated in Megatron-Bridge 0.5.0", "validation.eval_iters"}},
			{"Llama 3.1 provider", func(c map[string]map[string]any) { c["model"]["scale_factor"] = 8.0 }, []string{"model.scale_factor", "has no Llama31ModelProvider"}},
		},
		core.StackPrevious: {
			{"validation section", func(c map[string]map[string]any) { c["validation"] = map[string]any{"eval_iters": 0} }, []string{"validation: not a ConfigContainer section"}},
			{"GPTModelProvider's RoPE scaling", func(c map[string]map[string]any) { c["model"]["rope_scaling"] = true }, []string{"model.rope_scaling", "has no such field"}},
		},
	}
	forStacks(t, func(t *testing.T, stack string) {
		facts := loadFacts(t, stack)
		require.NoError(t, nemo.CheckConfig(facts, mustJSON(t, baseConfig(t, stack)), 8), "the unedited configuration passes")
		for _, tc := range append(common, byStack[stack]...) {
			t.Run(tc.name, func(t *testing.T) {
				c := baseConfig(t, stack)
				tc.edit(c)
				err := nemo.CheckConfig(facts, mustJSON(t, c), 8)
				require.Error(t, err)
				for _, w := range tc.errHas {
					assert.Contains(t, err.Error(), w)
				}
			})
		}
	})
}

// TestConfigsOfTheStacks: each stack's configuration writes the evaluation settings and Llama 3.1's
// RoPE scaling where its Bridge reads them, and the two differ in nothing else.
func TestConfigsOfTheStacks(t *testing.T) {
	for _, model := range models.Names() {
		t.Run(model, func(t *testing.T) {
			cur, prev := baseConfigOf(t, core.StackCurrent, model), baseConfigOf(t, core.StackPrevious, model)
			m, _ := models.Lookup(model)
			// 0.3.0: TrainingConfig's eval fields; 0.5.0: ValidationConfig's.
			assert.Equal(t, map[string]any{"eval_iters": 0.0, "eval_interval": 500.0}, cur["validation"])
			assert.NotContains(t, cur["train"], "eval_iters")
			assert.NotContains(t, cur["train"], "eval_interval")
			assert.NotContains(t, prev, "validation")
			assert.Equal(t, 0.0, prev["train"]["eval_iters"])
			assert.Equal(t, 500.0, prev["train"]["eval_interval"])
			if m.RopeScaling != nil {
				// Llama 3.1: factor 8 with Megatron's fixed bands (low 1, high 4, 8192 positions).
				assert.Equal(t, true, cur["model"]["rope_scaling"])
				assert.Equal(t, m.RopeScaling.Factor, cur["model"]["rope_scaling_factor"])
				assert.Equal(t, m.RopeScaling.Factor, prev["model"]["scale_factor"])
				assert.Equal(t, m.RopeScaling.LowFreqFactor, prev["model"]["low_freq_factor"])
				assert.Equal(t, m.RopeScaling.HighFreqFactor, prev["model"]["high_freq_factor"])
				assert.Equal(t, float64(m.RopeScaling.OriginalPositions), prev["model"]["old_context_len"])
				assert.Equal(t, core.MegatronRopeScaling.LowFreqFactor, m.RopeScaling.LowFreqFactor)
				assert.Equal(t, core.MegatronRopeScaling.HighFreqFactor, m.RopeScaling.HighFreqFactor)
				assert.Equal(t, core.MegatronRopeScaling.OriginalPositions, m.RopeScaling.OriginalPositions)
			} else {
				assert.Equal(t, false, cur["model"]["rope_scaling"])
				assert.NotContains(t, cur["model"], "rope_scaling_factor")
			}
			// Everything else is the same configuration.
			only := map[string]bool{
				"validation.eval_iters": true, "validation.eval_interval": true, "train.eval_iters": true, "train.eval_interval": true,
				"model.rope_scaling": true, "model.rope_scaling_factor": true,
				"model.scale_factor": true, "model.low_freq_factor": true, "model.high_freq_factor": true, "model.old_context_len": true,
			}
			for _, c := range []map[string]map[string]any{cur, prev} {
				for sec, fields := range c {
					for k := range fields {
						if !only[sec+"."+k] {
							assert.Equal(t, cur[sec][k], prev[sec][k], "%s.%s", sec, k)
						}
					}
				}
			}
		})
	}
}

func baseConfigOf(t *testing.T, stack, model string) map[string]map[string]any {
	l, err := frameworks.Build(request(stack, model))
	require.NoError(t, err)
	var cfg map[string]map[string]any
	require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &cfg))
	return cfg
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestFairConfiguration checks where each fair-configuration value lands in each stack's Bridge
// configuration, including SEED reaching model initialisation (rng.seed) and the data order
// (dataset.random_seed).
func TestFairConfiguration(t *testing.T) {
	forStacks(t, func(t *testing.T, stack string) {
		r := request(stack, "mistral")
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
			// Values whose Bridge default moved between 0.3.0 and 0.5.0, written on both.
			"model.position_embedding_type": "rope", "checkpoint.ckpt_format": "torch_dist", "logger.timing_log_level": 0.0,
		}
		// No evaluation, where the stack's Bridge reads it.
		eval := "train"
		if stack == core.StackCurrent {
			eval = "validation"
		}
		want[eval+".eval_iters"], want[eval+".eval_interval"] = 0.0, 500.0
		for k, v := range want {
			s, f, _ := strings.Cut(k, ".")
			assert.Equal(t, v, c[s][f], k)
		}
		assert.Equal(t, "1", l.Env["HF_HUB_OFFLINE"], "no hub access at run time")
		assert.Equal(t, "nemo", l.Framework, "the framework keeps its name")
		assert.Equal(t, pin(t, stack).Name(), l.Stack)
	})
}

// TestDataCacheIsTheRequestsPath: the index cache is exactly the launch request's DataCacheDir (the
// writable cache mount), never a directory derived from the data prefix.
func TestDataCacheIsTheRequestsPath(t *testing.T) {
	forStacks(t, func(t *testing.T, stack string) {
		r := request(stack, "qwen")
		r.DataCacheDir = "/somewhere/writable/3f2a"
		l, err := frameworks.Build(r)
		require.NoError(t, err)
		var c map[string]map[string]any
		require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &c))
		assert.Equal(t, "/somewhere/writable/3f2a", c["dataset"]["path_to_cache"])
		assert.NotContains(t, string(l.Files[nemo.ConfigName]), "/rival/data/\"", "nothing points the cache into the data mount")
	})
}

func TestBuildRefusesWhatBridgeAsserts(t *testing.T) {
	forStacks(t, func(t *testing.T, stack string) {
		for _, tc := range []struct {
			name   string
			edit   func(r *core.Request)
			errHas string
		}{
			{"seed 0", func(r *core.Request) { r.Fair.Seed = 0 }, "SEED is 0"},
			{"warm-up as long as training", func(r *core.Request) { r.Fair.WarmupSteps = r.Fair.TrainIters }, "WARMUP_STEPS 500 must be below TRAIN_ITERS 500"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := request(stack, "llama")
				tc.edit(&r)
				_, err := frameworks.Build(r)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errHas)
			})
		}
	})
}

// TestRopeScalingBridgeCannotBuild: on Bridge 0.5.0 a RoPE scaling reaches the model only through
// Megatron Core's RotaryEmbedding, whose bands are fixed, so a model with other bands is refused there;
// Bridge 0.3.0's Llama31ModelProvider takes all four values.
func TestRopeScalingBridgeCannotBuild(t *testing.T) {
	for stack, refused := range map[string]bool{core.StackCurrent: true, core.StackPrevious: false} {
		p, err := frameworks.Validate(request(stack, "llama"), core.Nemo)
		require.NoError(t, err)
		r := *p.Model.RopeScaling
		r.HighFreqFactor = 2
		p.Model.RopeScaling = &r
		_, err = nemo.Config(p)
		if refused {
			require.Error(t, err, stack)
			assert.Contains(t, err.Error(), "Megatron's --use-rope-scaling takes only the factor")
		} else {
			require.NoError(t, err, stack)
		}
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
	var all []*nemo.Facts
	for _, stack := range core.StackNames {
		all = append(all, loadFacts(f, stack))
		l, err := frameworks.Build(request(stack, "qwen"))
		require.NoError(f, err)
		f.Add(l.Files[nemo.ConfigName], 8)
	}
	f.Add([]byte(`{"model":{"window_size":[1,"x"]},"train":null}`), 0)
	f.Add([]byte(`{"optimizer":{"lr":"a","min_lr":1e400}}`), -3)
	f.Add([]byte(`{"model":{"scale_factor":8},"train":{"eval_iters":null,"skip_train":true}}`), 8)
	f.Fuzz(func(t *testing.T, b []byte, world int) {
		for _, facts := range all {
			_ = nemo.CheckConfig(facts, b, world)
		}
	})
}

func FuzzLoadFacts(f *testing.F) {
	for _, stack := range core.StackNames {
		b, err := os.ReadFile(factsFile(f, stack))
		require.NoError(f, err)
		f.Add(b[:2000])
	}
	f.Add([]byte(`{"sections":{"model":{"fields":{"x":{"type":{"kind":"union"}}}}}}`))
	f.Add([]byte(`{"sections":{"validation":{"fields":{"x":{}}}},"classes":{"Llama31ModelProvider":{"absent":"m.L"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		facts, err := nemo.LoadFacts(b)
		if err == nil {
			_ = nemo.CheckConfig(facts, []byte(`{"model":{"x":1,"scale_factor":8},"train":{"x":1}}`), 8)
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

// stackTrees returns the Megatron-Bridge and Megatron-LM trees of a stack's NeMo image and a Python
// that runs them, or skips (fails under RIVAL_REQUIRE_UPSTREAM=1; docs/frameworks.md, "Running the
// upstream-executing tests").
func stackTrees(t *testing.T, stack string) (py, bridge, megatron string) {
	t.Helper()
	tr := upstreamtest.Get(t)
	p := pin(t, stack)
	bridge = tr.Tree(t, "bridge-v"+p.Bridge)
	megatron = tr.Tree(t, "megatron-"+p.MegatronCommit[:8])
	return pythonFor(t, tr, bridge, megatron), bridge, megatron
}

// pythonFor is RIVAL_PREFLIGHT_PYTHON (else Debian's python3, with PyYAML, packaging and NumPy)
// when it is as recent as the trees' requires-python asks, and otherwise python3 in the torch image
// (Bridge 0.5.0 and Megatron Core 0.18 ask for 3.12).
func pythonFor(t *testing.T, tr upstreamtest.Trees, trees ...string) string {
	t.Helper()
	py := os.Getenv("RIVAL_PREFLIGHT_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	need := [2]int{3, 0}
	for _, d := range trees {
		b, err := os.ReadFile(filepath.Join(d, "pyproject.toml"))
		require.NoError(t, err)
		if m := requiresPython.FindSubmatch(b); m != nil {
			v := [2]int{atoi(t, string(m[1])), atoi(t, string(m[2]))}
			if v[0] > need[0] || v[0] == need[0] && v[1] > need[1] {
				need = v
			}
		}
	}
	out, err := exec.Command(py, "-c", "import sys; print(*sys.version_info[:2])").Output()
	if err == nil {
		var have [2]int
		if _, err := fmt.Sscan(string(out), &have[0], &have[1]); err == nil && (have[0] > need[0] || have[0] == need[0] && have[1] >= need[1]) {
			return py
		}
	}
	return tr.ModernPython(t, filepath.Join("..", ".."))
}

var requiresPython = regexp.MustCompile(`requires-python\s*=\s*">=\s*(\d+)\.(\d+)`)

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// withEnv is a python -c prelude that sets the environment from a JSON object, its first argument:
// the torch image's python3 runs in a container that inherits no environment.
const withEnv = "import json, os, sys; os.environ.update(json.loads(sys.argv.pop(1))); "

// TestEntryScriptPython runs the entry script's Python tests (bridgecheck/test_rival_nemo.py) for every
// stack. Those that need Megatron-Bridge run on the stack's upstream trees (docs/frameworks.md);
// without them only the script's own argument and value handling runs.
func TestEntryScriptPython(t *testing.T) {
	forStacks(t, func(t *testing.T, stack string) {
		env := map[string]string{"PYTHONDONTWRITEBYTECODE": "1"}
		py := "/usr/bin/python3" // Debian's, with PyYAML, packaging and NumPy
		if _, err := os.Stat(py); err != nil {
			py = "python3"
		}
		withTrees := upstreamtest.Required() || os.Getenv("RIVAL_UPSTREAM_DIR") != ""
		if withTrees {
			py, env["RIVAL_BRIDGE_TREE"], env["RIVAL_MEGATRON_TREE"] = stackTrees(t, stack)
		} else {
			env["RIVAL_BRIDGE_TREE"], env["RIVAL_MEGATRON_TREE"] = "", ""
		}
		cmd := exec.Command(py, "-W", "ignore", "-c", withEnv+"import unittest; unittest.main(module=None, argv=['bridgecheck', 'discover', '-s', 'bridgecheck', '-v'])", string(mustJSON(t, env)))
		cmd.Env = os.Environ()
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		if withTrees {
			assert.Contains(t, string(out), fmt.Sprintf("Bridge validated 39 cells from testdata/matrix/bridge-%s", pin(t, stack).Bridge))
			assert.NotContains(t, string(out), "skipped")
		}
	})
}

// Every nemo launch carries its preflight: the entry script's --check on the exact configuration, with
// the run's world size and environment (what train and train:check run before the launch).
func TestEveryLaunchCarriesPreflight(t *testing.T) {
	forStacks(t, func(t *testing.T, stack string) {
		for _, model := range models.Names() {
			t.Run(model, func(t *testing.T) {
				r := request(stack, model)
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
	})
}

// Fairness: every speed- or loss-relevant setting reaches Bridge under each stack's own field name,
// with the value mega and prim use. The expected field names are read from each stack's Bridge
// (bridge_<version>.json), the values from docs/frameworks.md's fairness table; the RMSNorm epsilons
// are config.json's rms_norm_eps of each model (Llama 3.1 8B 1e-5, Qwen 2.5 7B 1e-6, Mistral 7B v0.3 1e-5).
func TestFairnessReachesBridge(t *testing.T) {
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
		{"data loader workers kept", "dataset", "persistent_workers", true},
	}
	eps := map[string]float64{"llama": 1e-5, "qwen": 1e-6, "mistral": 1e-5}
	forStacks(t, func(t *testing.T, stack string) {
		facts := loadFacts(t, stack)
		for _, model := range models.Names() {
			t.Run(model, func(t *testing.T) {
				l, err := frameworks.Build(request(stack, model))
				require.NoError(t, err)
				var cfg map[string]map[string]any
				require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &cfg))
				for _, w := range want {
					sec, ok := facts.Sections[w.section]
					require.True(t, ok, "section %s in the facts", w.section)
					_, known := sec.Fields[w.field]
					assert.True(t, known, "%s: %s.%s is a Bridge %s field", w.setting, w.section, w.field, facts.Source.MegatronBridge.Version)
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
	})
}

// TestMovedDefaultsAreWritten: where the two stacks' Bridges default a field of a section Rival
// writes differently, every launch of both stacks writes it, so the move changes nothing, unless the
// field only acts with a feature Rival leaves off (listed with that feature).
func TestMovedDefaultsAreWritten(t *testing.T) {
	cur, prev := loadFacts(t, core.StackCurrent), loadFacts(t, core.StackPrevious)
	inert := map[string]string{
		"model.cuda_graph_scope":              "CUDA graphs (cuda_graph_impl none)",
		"model.cuda_graph_use_single_mempool": "CUDA graphs (cuda_graph_impl none)",
		"model.moe_hybridep_num_sms":          "mixture of experts (dense models)",
		"dist.high_priority_stream_groups":    "high-priority streams ([] and null both name none)",
		"profiling.memory_snapshot_path":      "memory snapshots (record_memory_history off)",
		// Bridge 0.5.0 reads these from validation (deprecated here, null by default); the launch
		// writes validation's on 0.5.0 and these on 0.3.0 (TestConfigsOfTheStacks).
		"train.eval_iters": "evaluation", "train.eval_interval": "evaluation", "train.skip_train": "evaluation (validation.skip_train false)",
	}
	var moved []string
	for sec, c := range cur.Sections {
		p, ok := prev.Sections[sec]
		if !ok {
			continue
		}
		for name, f := range c.Fields {
			g, ok := p.Fields[name]
			if !ok || !f.Init || !g.Init || fmt.Sprint(f.Default) == fmt.Sprint(g.Default) || inert[sec+"."+name] != "" {
				continue
			}
			moved = append(moved, sec+"."+name)
		}
	}
	sort.Strings(moved)
	assert.Contains(t, moved, "model.gradient_accumulation_fusion")
	assert.Contains(t, moved, "dataset.num_workers")
	forStacks(t, func(t *testing.T, stack string) {
		for _, model := range models.Names() {
			cfg := baseConfigOf(t, stack, model)
			for _, k := range moved {
				s, f, _ := strings.Cut(k, ".")
				_, set := cfg[s][f]
				assert.True(t, set, "%s %s: %s moved its default between Bridge 0.3.0 and 0.5.0 and the launch does not write it", stack, model, k)
			}
		}
	})
}

// TestFactsArePinned: each stack's facts come from the trees its launch is pinned to.
func TestFactsArePinned(t *testing.T) {
	forStacks(t, func(t *testing.T, stack string) {
		f, p := loadFacts(t, stack), pin(t, stack)
		assert.Equal(t, p.Bridge, f.Source.MegatronBridge.Version)
		assert.Equal(t, p.BridgeCommit, f.Source.MegatronBridge.Commit)
		assert.Equal(t, p.MegatronCore, f.Source.MegatronCore.Version)
		assert.Equal(t, p.MegatronCommit, f.Source.MegatronCore.Commit)
		v, err := nemo.Version(core.Plan{Request: core.Request{Platform: hw.PlatformNVIDIA, Stack: stack}})
		require.NoError(t, err)
		assert.Contains(t, v, p.BridgeCommit[:8])
		assert.Contains(t, v, p.MegatronCommit[:8])
		assert.Contains(t, v, p.Image)
		rel, err := nemo.BridgeRelease(core.Plan{Request: core.Request{Platform: hw.PlatformNVIDIA, Stack: stack}})
		require.NoError(t, err)
		assert.Equal(t, p.Bridge, rel)
	})
}

// runPreflight writes the launch's files under OutputDir and runs its preflight command with the
// stack's trees standing in for the image's packages (torch stubbed by frameworks/facts/pystubs.py).
func runPreflight(t *testing.T, l core.Launch, out, py, bridge, megatron string) (string, error) {
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
	env := map[string]string{}
	for k, v := range l.Preflight.Env {
		env[k] = v
	}
	cmd := exec.Command(py, append([]string{"-W", "ignore", "-c", withEnv + upstreamtest.NemoPreflight, string(mustJSON(t, env)), here, bridge, megatron}, l.Preflight.Command[1:]...)...)
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
// A tokenizer outside the repository is copied into tmp, which the torch image's python3 sees.
func tokenizerDir(t *testing.T, model, tmp string) string {
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
	src := filepath.Join(abs, "tokenizer.json")
	if _, err := os.Stat(src); err != nil {
		upstreamtest.Missing(t, "no tokenizer.json in "+abs+" (set RIVAL_SHARED_DIR to the folder holding tokenizers/llama-3.1)")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	if strings.HasPrefix(abs, repo+string(filepath.Separator)) {
		return abs
	}
	dst := filepath.Join(tmp, "tokenizer-"+base)
	if _, err := os.Stat(filepath.Join(dst, "tokenizer.json")); err == nil {
		return dst
	}
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dst, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dst, "tokenizer.json"), b, 0o644))
	return dst
}

// TestPreflightOnUpstreamTrees runs every nemo launch's preflight, as train and train:check run it,
// on each stack's Bridge tree: each cell the registry accepts passes Bridge's own validation, and
// what Bridge built is Rival's workload.
func TestPreflightOnUpstreamTrees(t *testing.T) {
	forStacks(t, func(t *testing.T, stack string) {
		py, bridge, megatron := stackTrees(t, stack)
		tokenizers := t.TempDir()
		n := 0
		for _, model := range models.Names() {
			for _, v := range variants {
				r := request(stack, model)
				v.edit(&r)
				dir := t.TempDir()
				r.OutputDir, r.DataCacheDir, r.TokenizerPath = dir, filepath.Join(dir, "cache"), tokenizerDir(t, model, tokenizers)
				l, err := frameworks.Build(r)
				if err != nil {
					continue // refused by the registry: TestMatrixAgainstBridgeFacts checks why
				}
				n++
				t.Run(model+"-"+v.name, func(t *testing.T) {
					out, err := runPreflight(t, l, dir, py, bridge, megatron)
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
	})
}

// The preflight stops a launch Bridge would reject, quoting Bridge's own error.
func TestPreflightNegativeControlsOnUpstreamTrees(t *testing.T) {
	type control struct {
		name string
		edit func(c map[string]map[string]any)
		want string
	}
	common := []control{
		{"min_lr above lr", func(c map[string]map[string]any) { c["optimizer"]["min_lr"] = 1e-3 }, "preflight failed: megatron-bridge configuration: AssertionError"},
		{"unknown field", func(c map[string]map[string]any) { c["model"]["num_layer"] = 32 }, "ModelProvider rejects the fields: "},
		{"unknown attention backend", func(c map[string]map[string]any) { c["model"]["attention_backend"] = "fastest" }, "model.attention_backend: 'fastest' is not one of"},
	}
	// A configuration written for the other release is refused by name.
	byStack := map[string][]control{
		core.StackCurrent: {
			{"Llama 3.1 provider", func(c map[string]map[string]any) {
				delete(c["model"], "rope_scaling")
				delete(c["model"], "rope_scaling_factor")
				c["model"]["scale_factor"], c["model"]["low_freq_factor"], c["model"]["high_freq_factor"], c["model"]["old_context_len"] = 8.0, 1.0, 4.0, 8192
			}, "has no Llama31ModelProvider; the configuration was written for another release"},
		},
		core.StackPrevious: {
			{"validation section", func(c map[string]map[string]any) { c["validation"] = map[string]any{"eval_iters": 0} }, "has no section validation"},
		},
	}
	forStacks(t, func(t *testing.T, stack string) {
		py, bridge, megatron := stackTrees(t, stack)
		for _, c := range append(common, byStack[stack]...) {
			t.Run(c.name, func(t *testing.T) {
				r := request(stack, "llama")
				dir := t.TempDir()
				r.OutputDir, r.DataCacheDir = dir, filepath.Join(dir, "cache")
				l, err := frameworks.Build(r)
				require.NoError(t, err)
				var cfg map[string]map[string]any
				require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &cfg))
				c.edit(cfg)
				l.Files[nemo.ConfigName] = mustJSON(t, cfg)
				out, err := runPreflight(t, l, dir, py, bridge, megatron)
				require.Error(t, err, out)
				assert.Contains(t, out, c.want)
			})
		}
	})
}

// TestLlama31ProviderChangesNoDefaultRivalLeavesUnset: on Bridge 0.3.0 a Llama 3.1 launch builds its
// model with Llama31ModelProvider (the only 0.3.0 provider with Llama 3.1's RoPE scaling) where the
// others use GPTModelProvider. Every field whose default differs between the two must be one the
// launch sets, so switching class changes nothing but the scaling. Bridge 0.5.0 has no such provider:
// every model is GPTModelProvider's, Llama 3.1 with its rope_scaling fields.
func TestLlama31ProviderChangesNoDefaultRivalLeavesUnset(t *testing.T) {
	forStacks(t, func(t *testing.T, stack string) {
		facts := loadFacts(t, stack)
		gpt, l31 := facts.Sections["model"], facts.Classes["Llama31ModelProvider"]
		l, err := frameworks.Build(request(stack, "llama"))
		require.NoError(t, err)
		var doc map[string]map[string]any
		require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &doc))
		model := doc["model"]
		l31Fields := []string{"scale_factor", "low_freq_factor", "high_freq_factor", "old_context_len"}
		if l31.Absent != "" {
			for _, n := range l31Fields {
				assert.NotContains(t, model, n, "Bridge %s has no Llama31ModelProvider", facts.Source.MegatronBridge.Version)
			}
			for _, n := range []string{"rope_scaling", "rope_scaling_factor"} {
				assert.Contains(t, gpt.Fields, n, "GPTModelProvider has %s", n)
				assert.Contains(t, model, n, "the Llama 3.1 launch sets %s", n)
			}
			return
		}
		require.NotEmpty(t, l31.Fields, "bridge facts record Llama31ModelProvider")
		for _, n := range l31Fields {
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
	})
}
