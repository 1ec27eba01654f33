package frameworks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/frameworks/nemo"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// Every row of the framework table is complete, and its log family is one the log parser reads.
func TestFrameworkTable(t *testing.T) {
	names := map[string]bool{}
	for _, f := range Table() {
		assert.False(t, names[f.Name], "%s appears twice", f.Name)
		names[f.Name] = true
		assert.NotEmpty(t, f.Label, f.Name)
		assert.NotEmpty(t, f.Platforms, f.Name)
		require.NotNil(t, f.Build, f.Name)
		fam, err := logparse.Canonical(f.LogFamily)
		require.NoError(t, err, "%s's log family %q", f.Name, f.LogFamily)
		assert.NotEmpty(t, fam, f.Name)
		d, err := EntryScriptDigest(f.Name)
		require.NoError(t, err)
		assert.Equal(t, f.ScriptDigest != nil, d != "", f.Name)
	}
	for _, n := range []string{core.Mega, core.Prim, core.Nemo, core.Titan, core.FSDP} {
		assert.True(t, names[n], "%s has a row", n)
	}
	for n := range builders {
		assert.True(t, names[n], "the builder of %s has a row in spec's framework table", n)
	}
	assert.Equal(t, "Megatron-LM", Label(core.Mega))
	assert.Equal(t, "megatron", LogFamily(core.Mega))
	assert.Equal(t, []string{hw.PlatformAMD}, Platforms(core.Prim))
	_, err := EntryScriptDigest("deepspeed")
	assert.ErrorContains(t, err, `unknown framework "deepspeed"`)
}

// Every field of a Request and of its Fair configuration reaches some launch: changing it changes the
// launch (or its refusal) of at least one framework. A field no builder reads is a field callers fill
// in for nothing.
func TestEveryRequestFieldReachesALaunch(t *testing.T) {
	type cell struct{ platform, fw string }
	cells := []cell{{hw.PlatformNVIDIA, "mega"}, {hw.PlatformAMD, "prim"}, {hw.PlatformNVIDIA, "nemo"},
		{hw.PlatformNVIDIA, "titan"}, {hw.PlatformNVIDIA, "fsdp"}, {hw.PlatformAMD, "mega"}}
	outcome := func(r core.Request) string {
		l, err := Build(r)
		if err != nil {
			return "error: " + err.Error()
		}
		b, err := json.Marshal(l)
		require.NoError(t, err)
		return string(b)
	}
	base := func(c cell) core.Request {
		r := request(t, c.platform, c.fw, "mistral")
		r.Fair.Profile, r.Fair.ProfileStepEnd = true, 20
		if c.fw == "titan" || c.fw == "fsdp" {
			r.Fair.Profile = false // both refuse PROFILE=1
		}
		if c.fw != "prim" {
			// All but prim evaluate the held-out set: with evaluation on, its settings reach the launch.
			gbs := r.Fair.GBS
			if gbs == 0 {
				gbs = r.Fair.MBS * r.Fair.DP * r.Fair.GA
			}
			r.Fair.EvalIntervalSamples, r.Fair.EvalSamples = 4*gbs, gbs
		}
		return r
	}
	// perturb changes one field by path (Fair.X or X) to another valid-looking value.
	perturb := func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int:
			v.SetInt(v.Int() + 2)
		case reflect.Float64:
			v.SetFloat(v.Float() * 0.5)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.ValueOf(1)))
		}
	}
	check := func(path []int, name string) {
		for _, c := range cells {
			r := base(c)
			before := outcome(r)
			f := reflect.ValueOf(&r).Elem().FieldByIndex(path)
			if f.Kind() == reflect.Struct {
				return
			}
			perturb(f)
			if outcome(r) != before {
				return
			}
		}
		t.Errorf("%s: no mega, prim, nemo, titan or fsdp launch reads it: use it or remove it", name)
	}
	rt := reflect.TypeOf(core.Request{})
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if f.Name == "Fair" {
			for j := 0; j < f.Type.NumField(); j++ {
				check([]int{i, j}, "Fair."+f.Type.Field(j).Name)
			}
			continue
		}
		if f.Name == "Host" {
			continue // the detected hardware: Validate checks the GPU count against it
		}
		check([]int{i}, "Request."+f.Name)
	}
}

// knob is one thing a run can ask for: a recipe key of config.env (a field of core.Fair or of the
// request) or a model fact (a field of models.Model). Every framework must express it in its launch
// or refuse the cell with a message naming it.
type knob struct {
	name  string   // what the test prints
	field string   // the core.Fair, core.Request or models.Model field it covers
	keys  []string // a refusal must name one of these (case-insensitive)
	req   func(r *core.Request)
	model func(m *models.Model, sl int)
	// Where the Megatron-family frameworks must carry it: Megatron argument destinations (mega's
	// parsed argv; prim's pre_trainer overrides, which Primus's builder turns into Megatron's args),
	// and Bridge ConfigContainer fields (nemo's section.field). A change elsewhere is not enough: a key
	// Megatron never reads trains the default.
	megatron []string
	bridge   []string
}

var knobs = []knob{
	{name: "SEED", field: "Fair.Seed", keys: []string{"SEED"}, req: func(r *core.Request) { r.Fair.Seed = 7 },
		megatron: []string{"seed"}, bridge: []string{"rng.seed"}},
	{name: "MBS", field: "Fair.MBS", keys: []string{"MBS"}, req: func(r *core.Request) { r.Fair.MBS = 2 },
		megatron: []string{"micro_batch_size"}, bridge: []string{"train.micro_batch_size"}},
	{name: "SL", field: "Fair.SL", keys: []string{"SL"}, req: func(r *core.Request) { r.Fair.SL = 1024 },
		megatron: []string{"seq_length"}, bridge: []string{"model.seq_length"}},
	{name: "GA", field: "Fair.GA", keys: []string{"GA"}, req: func(r *core.Request) { r.Fair.GA = 4 },
		megatron: []string{"global_batch_size"}, bridge: []string{"train.global_batch_size"}},
	{name: "GBS", field: "Fair.GBS", keys: []string{"GBS"}, req: func(r *core.Request) { r.Fair.GBS = r.Fair.MBS * r.Fair.DP * r.Fair.GA * 2 }},
	{name: "TP", field: "Fair.TP", keys: []string{"TP"}, req: func(r *core.Request) { r.Fair.TP, r.Fair.DP = 2, r.Fair.DP/2 },
		megatron: []string{"tensor_model_parallel_size"}, bridge: []string{"model.tensor_model_parallel_size"}},
	{name: "PP", field: "Fair.PP", keys: []string{"PP"}, req: func(r *core.Request) { r.Fair.PP, r.Fair.DP = 2, r.Fair.DP/2 },
		megatron: []string{"pipeline_model_parallel_size"}, bridge: []string{"model.pipeline_model_parallel_size"}},
	{name: "DP", field: "Fair.DP", keys: []string{"DP"}, req: func(r *core.Request) {
		if r.Platform == hw.PlatformCPU {
			r.GPUs, r.Fair.DP = 2, 2 // processes on the CPU
			return
		}
		r.GPUs, r.Fair.DP = r.GPUs/2, r.Fair.DP/2
	},
		megatron: []string{"global_batch_size"}, bridge: []string{"train.global_batch_size"}},
	{name: "NNODES", field: "Request.NNodes", keys: []string{"NNodes"}, req: func(r *core.Request) { r.NNodes, r.Fair.DP = 2, r.Fair.DP*2 },
		megatron: []string{"global_batch_size"}, bridge: []string{"train.global_batch_size"}},
	{name: "TRAIN_ITERS", field: "Fair.TrainIters", keys: []string{"TRAIN_ITERS"}, req: func(r *core.Request) { r.Fair.TrainIters = 100 },
		megatron: []string{"train_iters"}, bridge: []string{"train.train_iters"}},
	{name: "WARMUP_STEPS", field: "Fair.WarmupSteps", keys: []string{"WARMUP_STEPS"}, req: func(r *core.Request) { r.Fair.WarmupSteps = 10 },
		megatron: []string{"lr_warmup_iters"}, bridge: []string{"scheduler.lr_warmup_iters"}},
	{name: "LR", field: "Fair.LR", keys: []string{"LR"}, req: func(r *core.Request) { r.Fair.LR = 1e-4 },
		megatron: []string{"lr"}, bridge: []string{"optimizer.lr"}},
	{name: "MIN_LR", field: "Fair.MinLR", keys: []string{"MIN_LR"}, req: func(r *core.Request) { r.Fair.MinLR = 1e-5 },
		megatron: []string{"min_lr"}, bridge: []string{"optimizer.min_lr"}},
	{name: "WEIGHT_DECAY", field: "Fair.WeightDecay", keys: []string{"WEIGHT_DECAY"}, req: func(r *core.Request) { r.Fair.WeightDecay = 0.01 },
		megatron: []string{"weight_decay"}, bridge: []string{"optimizer.weight_decay"}},
	{name: "BETA1", field: "Fair.Beta1", keys: []string{"BETA1"}, req: func(r *core.Request) { r.Fair.Beta1 = 0.8 },
		megatron: []string{"adam_beta1"}, bridge: []string{"optimizer.adam_beta1"}},
	{name: "BETA2", field: "Fair.Beta2", keys: []string{"BETA2"}, req: func(r *core.Request) { r.Fair.Beta2 = 0.999 },
		megatron: []string{"adam_beta2"}, bridge: []string{"optimizer.adam_beta2"}},
	{name: "ADAM_EPS", field: "Fair.AdamEps", keys: []string{"ADAM_EPS"}, req: func(r *core.Request) { r.Fair.AdamEps = 1e-6 },
		megatron: []string{"adam_eps"}, bridge: []string{"optimizer.adam_eps"}},
	{name: "PRECISION=fp8", field: "Fair.Precision", keys: []string{"fp8"}, req: func(r *core.Request) { r.Fair.Precision = core.FP8 },
		megatron: []string{"fp8"}, bridge: []string{"mixed_precision.fp8"}},
	{name: "PRECISION=fp32 (bf16 on cpu)", field: "Fair.Precision", keys: []string{"fp32", "bf16"}, req: func(r *core.Request) {
		r.Fair.Precision = map[string]string{core.FP32: core.BF16}[r.Fair.Precision]
		if r.Fair.Precision == "" {
			r.Fair.Precision = core.FP32
		}
	},
		megatron: []string{"bf16"}, bridge: []string{"mixed_precision.bf16"}},
	{name: "PROFILE", field: "Fair.Profile", keys: []string{"PROFILE"}, req: func(r *core.Request) { r.Fair.Profile = true },
		megatron: []string{"profile"}, bridge: []string{"profiling.use_pytorch_profiler"}},
	{name: "PROFILE_STEP_START", field: "Fair.ProfileStepStart", keys: []string{"PROFILE"}, req: func(r *core.Request) { r.Fair.Profile, r.Fair.ProfileStepStart = true, 5 },
		megatron: []string{"profile_step_start"}, bridge: []string{"profiling.profile_step_start"}},
	{name: "PROFILE_STEP_END", field: "Fair.ProfileStepEnd", keys: []string{"PROFILE"}, req: func(r *core.Request) { r.Fair.Profile, r.Fair.ProfileStepEnd = true, 20 },
		megatron: []string{"profile_step_end"}, bridge: []string{"profiling.profile_step_end"}},
	{name: "PROFILE_RANKS", field: "Fair.ProfileRanks", keys: []string{"PROFILE"}, req: func(r *core.Request) { r.Fair.Profile, r.Fair.ProfileRanks = true, []int{0, 1} },
		megatron: []string{"profile_ranks"}, bridge: []string{"profiling.profile_ranks"}},

	{name: "layers", field: "Model.Layers", keys: []string{"layers"}, model: func(m *models.Model, _ int) { m.Layers += 2 },
		megatron: []string{"num_layers"}, bridge: []string{"model.num_layers"}},
	{name: "hidden", field: "Model.Hidden", keys: []string{"hidden"}, model: func(m *models.Model, _ int) { m.Hidden += 2 * m.Heads },
		megatron: []string{"hidden_size"}, bridge: []string{"model.hidden_size"}},
	{name: "FFN", field: "Model.FFN", keys: []string{"FFN"}, model: func(m *models.Model, _ int) { m.FFN += 256 },
		megatron: []string{"ffn_hidden_size"}, bridge: []string{"model.ffn_hidden_size"}},
	{name: "heads", field: "Model.Heads", keys: []string{"heads"}, model: func(m *models.Model, _ int) { m.Heads *= 2 },
		megatron: []string{"num_attention_heads"}, bridge: []string{"model.num_attention_heads"}},
	{name: "KV heads", field: "Model.KVHeads", keys: []string{"KV heads"}, model: func(m *models.Model, _ int) { m.KVHeads = m.Heads },
		megatron: []string{"num_query_groups"}, bridge: []string{"model.num_query_groups"}},
	{name: "RoPE θ", field: "Model.RopeTheta", keys: []string{"rope"}, model: func(m *models.Model, _ int) { m.RopeTheta *= 2 },
		megatron: []string{"rotary_base"}, bridge: []string{"model.rotary_base"}},
	{name: "RoPE scaling", field: "Model.RopeScaling", keys: []string{"RoPE scaling"}, model: func(m *models.Model, _ int) {
		r := models.Llama3RopeScaling
		r.Factor = 16 // on where it was off (Megatron's default factor is 8), or a new factor
		m.RopeScaling = &r
	},
		megatron: []string{"rope_scaling_factor"}, bridge: []string{"model.rope_scaling_factor"}}, // Bridge 0.5.0's GPTModelProvider (0.3.0: Llama31ModelProvider's scale_factor)
	{name: "RMSNorm ε", field: "Model.NormEps", keys: []string{"epsilon"}, model: func(m *models.Model, _ int) { m.NormEps = 3e-6 },
		megatron: []string{"layernorm_epsilon"}, bridge: []string{"model.layernorm_epsilon"}},
	{name: "init std", field: "Model.InitStd", keys: []string{"init"}, model: func(m *models.Model, _ int) { m.InitStd = 0.01 },
		megatron: []string{"init_method_std"}, bridge: []string{"model.init_method_std"}},
	{name: "QKV bias", field: "Model.QKVBias", keys: []string{"QKV bias"}, model: func(m *models.Model, _ int) { m.QKVBias = !m.QKVBias },
		megatron: []string{"add_qkv_bias"}, bridge: []string{"model.add_qkv_bias"}},
	{name: "sliding window", field: "Model.SlidingWindow", keys: []string{"sliding window"}, model: func(m *models.Model, sl int) { m.SlidingWindow = sl / 2 },
		megatron: []string{"window_size"}, bridge: []string{"model.window_size"}},
	{name: "tied embeddings", field: "Model.TiedEmbeddings", keys: []string{"ties"}, model: func(m *models.Model, _ int) { m.TiedEmbeddings = !m.TiedEmbeddings },
		megatron: []string{"untie_embeddings_and_output_weights"}, bridge: []string{"model.share_embeddings_and_output_weights"}},
}

// notKnobs are the fields of Fair, Request and Model that are not a knob of the trained workload,
// each with the reason; every other field must have a knob above (TestKnobsCoverEveryField).
var notKnobs = map[string]string{
	"Request.Platform":  "the platform: the table's rows say where each framework runs",
	"Request.Stack":     "the pinned image: every launch is pinned on both stacks (TestGoldenMatrix), and fsdp's is the same on both by design; TestLaunchNamesItsStack",
	"Request.Framework": "the framework itself", "Request.Model": "the model: every model is a cell",
	"Request.Host": "the detected hardware, checked against the GPU count", "Request.GPUs": "covered by DP",
	"Request.DataPrefix": "a path", "Request.DataCacheDir": "a path", "Request.TokenizerPath": "a path",
	"Request.OutputDir": "a path", "Model.Name": "the registry key", "Model.DisplayName": "a label",
	"Model.Proxy": "a registry flag", "Model.Base": "the registry key of a proxy's base",
	"Model.HFRepo": "where the tokenizer comes from", "Model.TokenizerKey": "which tokenizer encodes the data",
	"Model.HFRevision": "the commit the tokenizer is fetched from", "Model.Gated": "whether fetching the tokenizer needs HF_TOKEN",
	"Model.PrimusStock": "the Primus experiment prim starts from; every model fact is set over it (the knobs above)",
	"Model.BOS":         "a tokenizer fact, applied when the data is encoded", "Model.EOD": "a tokenizer fact, applied when the data is encoded",
	"Model.MaxPositions": "a bound: the registry refuses SL above it (Validate); RoPE keeps no position table",
	// Megatron, Primus and Bridge size the embedding from the tokenizer (padded to a multiple of
	// 128 × TP) and take no vocabulary size; docs/frameworks.md records the difference.
	"Model.Vocab": "Megatron-family frameworks derive it from the tokenizer (docs/frameworks.md, Model facts)",
	// Held-out evaluation runs beside training and changes no training number; fsdp, mega, nemo and
	// titan evaluate the set (TestTrainEvaluatesHeldOut, TestPreflightDigestsMegatronsHeldOut,
	// TestNemoPreflightDigestsTheHeldOut, TestPreflightDigestsTheValidatorsHeldOut), prim does not
	// yet and its results say so.
	"Fair.EvalIntervalSamples": "held-out evaluation: every launch but prim's carries it; prim's results record held_out_not_evaluated",
	"Fair.EvalSamples":         "held-out evaluation: every launch but prim's carries it; prim's results record held_out_not_evaluated",
}

// Every field a run can ask for has a knob in TestEveryKnobReachesEveryFramework, or a reason here.
func TestKnobsCoverEveryField(t *testing.T) {
	covered := map[string]bool{}
	for _, k := range knobs {
		covered[k.field] = true
	}
	check := func(prefix string, rt reflect.Type) {
		for i := 0; i < rt.NumField(); i++ {
			name := prefix + "." + rt.Field(i).Name
			if name == "Request.Fair" {
				continue
			}
			_, excused := notKnobs[name]
			assert.True(t, covered[name] != excused, "%s: give it a knob in knobs (table_test.go) or a reason in notKnobs, not both", name)
		}
	}
	check("Fair", reflect.TypeOf(core.Fair{}))
	check("Request", reflect.TypeOf(core.Request{}))
	check("Model", reflect.TypeOf(models.Model{}))
}

// TestEveryKnobReachesEveryFramework builds, for every framework of the table on every platform it
// runs on, every model and every knob, the launch before and after the knob changes. The launch must
// change (for mega, prim and nemo: where Megatron or Bridge reads it), or the framework must refuse
// the changed cell with a message that names the knob.
func TestEveryKnobReachesEveryFramework(t *testing.T) {
	for _, fw := range Table() {
		for _, platform := range fw.Platforms {
			for _, model := range models.Names() {
				t.Run(fw.Name+"/"+platform+"/"+model, func(t *testing.T) {
					t.Parallel()
					base := request(t, platform, fw.Name, model)
					if platform != hw.PlatformCPU {
						base.GPUs = 8
					}
					a, err := buildCell(base, nil, fw)
					if err != nil {
						t.Logf("the cell is refused before any knob: %v", err)
						require.NotEmpty(t, err.Error())
						return
					}
					for _, k := range knobs {
						r := base
						r.Fair.ProfileRanks = append([]int(nil), base.Fair.ProfileRanks...)
						var edit func(*models.Model)
						if k.req != nil {
							k.req(&r)
						} else {
							edit = func(m *models.Model) { k.model(m, r.Fair.SL) }
						}
						b, err := buildCell(r, edit, fw)
						if err != nil {
							named := false
							for _, key := range k.keys {
								named = named || strings.Contains(strings.ToLower(err.Error()), strings.ToLower(key))
							}
							assert.True(t, named, "%s: refused without naming the knob (%s): %v", k.name, strings.Join(k.keys, " or "), err)
							continue
						}
						before, after := a, b
						if k.name == "PROFILE_STEP_START" || k.name == "PROFILE_STEP_END" || k.name == "PROFILE_RANKS" {
							// Compare with profiling on in both, so the window itself must show.
							pr := base
							pr.Fair.Profile = true
							before, err = buildCell(pr, nil, fw)
							require.NoError(t, err)
						}
						assert.True(t, launchJSON(t, before) != launchJSON(t, after), "%s: the launch does not change", k.name)
						reaches(t, k, r.Platform, before, after)
					}
				})
			}
		}
	}
}

// buildCell validates r for framework fw, applies a model edit to the plan, and builds the launch.
func buildCell(r core.Request, edit func(*models.Model), fw Framework) (core.Launch, error) {
	p, err := Validate(r, fw.Name)
	if err != nil {
		return core.Launch{}, err
	}
	if edit != nil {
		edit(&p.Model)
		if err := p.Model.Validate(); err != nil {
			return core.Launch{}, fmt.Errorf("knob edit made an invalid model: %w", err)
		}
	}
	return fw.Build(p)
}

func launchJSON(t *testing.T, l core.Launch) string {
	b, err := json.Marshal(l)
	require.NoError(t, err)
	return string(b)
}

// reaches checks that a knob's change lands where the Megatron-family framework reads it.
func reaches(t *testing.T, k knob, platform string, a, b core.Launch) {
	t.Helper()
	switch a.Framework {
	case core.Mega:
		pin, err := core.PinFor(platform, "") // the knob tables build on the default stack
		require.NoError(t, err)
		mg, err := facts.MegatronAt(pin.MegatronCommit)
		require.NoError(t, err)
		va, err := mg.Parse(megatronArgs(t, a))
		require.NoError(t, err)
		vb, err := mg.Parse(megatronArgs(t, b))
		require.NoError(t, err)
		for _, d := range k.megatron {
			assert.NotEqual(t, fmt.Sprint(mg.Value(va, d)), fmt.Sprint(mg.Value(vb, d)), "%s: Megatron's args.%s does not change", k.name, d)
		}
	case core.Prim:
		oa, _, _ := primOverrides(t, a)
		ob, _, _ := primOverrides(t, b)
		for _, d := range k.megatron {
			assert.NotEqual(t, fmt.Sprint(oa[d]), fmt.Sprint(ob[d]), "%s: Primus's override %s (Megatron's args.%s) does not change", k.name, d, d)
		}
	case core.Nemo:
		sa, sb := sectionKeys(a.Files[nemo.ConfigName]), sectionKeys(b.Files[nemo.ConfigName])
		for _, f := range k.bridge {
			assert.NotEqual(t, sa[f], sb[f], "%s: Bridge's %s does not change", k.name, f)
		}
	}
}

// Every framework on a platform runs with the platform's one communication environment, in the run
// and in its preflight, and records it.
func TestPlatformEnvIsEveryFrameworks(t *testing.T) {
	for _, platform := range []string{hw.PlatformAMD, hw.PlatformNVIDIA, hw.PlatformCPU} {
		stacks := core.StackNames
		if platform == hw.PlatformCPU {
			stacks = []string{""}
		}
		for _, stack := range stacks {
			want := core.PlatformEnv(platform, stack)
			for _, fw := range Table() {
				if !slices.Contains(fw.Platforms, platform) {
					continue
				}
				for _, model := range []string{"llama", "mistral-proxy"} {
					r := request(t, platform, fw.Name, model)
					r.Stack = stack
					l, err := Build(r)
					require.NoError(t, err)
					for k, v := range want {
						assert.Equal(t, v, l.Env[k], "%s %s %s: %s", platform, fw.Name, model, k)
						if l.Preflight != nil {
							assert.Equal(t, v, l.Preflight.Env[k], "%s %s preflight: %s", platform, fw.Name, k)
						}
					}
					if len(want) > 0 {
						assert.Equal(t, want, l.PlatformEnv, "%s %s records the platform's environment", platform, fw.Name)
					} else {
						assert.Empty(t, l.PlatformEnv)
					}
				}
			}
		}
	}
	assert.NotEmpty(t, core.PlatformEnv(hw.PlatformAMD, "")["RCCL_MSCCL_ENABLE"])
	assert.Equal(t, "1", core.PlatformEnv(hw.PlatformAMD, core.StackPrevious)["NCCL_PXN_DISABLE"], "Primus v26.2 forced PXN off")

	// A builder that sets one of them to another value is refused, naming the table.
	l := core.Launch{Framework: "mega", Env: map[string]string{"HSA_ENABLE_SDMA": "0"}}
	assert.ErrorContains(t, core.ApplyPlatformEnv(hw.PlatformAMD, "", &l), "HSA_ENABLE_SDMA=0")
}

// runPretrainExports reads the variables Primus's examples/run_pretrain.sh exports on every run of
// its Megatron and TorchTitan backends: `export NAME=value` and `export NAME=${NAME:-value}` lines
// in the script's body or in a branch taken for those runs (BACKEND is not MaxText, USING_AINIC is
// not 1; other conditions are taken as unknown, their branches left out), with $((a*b)) products
// evaluated; values built from other variables are left out.
func runPretrainExports(t *testing.T, script string) map[string]string {
	out := map[string]string{}
	type block struct{ known, taken bool }
	var stack []block
	live := func() bool {
		for _, b := range stack {
			if !b.taken {
				return false
			}
		}
		return true
	}
	def := regexp.MustCompile(`^\$\{(\w+):-([^}$]*)\}$`)
	arith := regexp.MustCompile(`^\$\(\(([0-9*]+)\)\)$`)
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, " #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		switch {
		case strings.HasPrefix(line, "if ") && (strings.HasSuffix(line, "; fi") || strings.HasSuffix(line, " fi")):
			continue // a conditional on one line (v26.5.1's logging helpers) exports nothing
		case strings.HasPrefix(line, "if "):
			b := block{}
			switch {
			case strings.Contains(line, `"${BACKEND:-}" != "MaxText"`):
				b = block{known: true, taken: true}
			case strings.Contains(line, `"${BACKEND:-}" = "MaxText"`), strings.Contains(line, `"${BACKEND:-}" == "MaxText"`),
				strings.Contains(line, `"$USING_AINIC" == "1"`):
				b = block{known: true, taken: false}
			}
			stack = append(stack, b)
			continue
		case strings.HasPrefix(line, "elif "):
			stack[len(stack)-1] = block{}
			continue
		case line == "else":
			b := &stack[len(stack)-1]
			b.taken = b.known && !b.taken
			continue
		case line == "fi":
			stack = stack[:len(stack)-1]
			continue
		}
		rest, ok := strings.CutPrefix(line, "export ")
		if !ok || !live() {
			continue
		}
		name, v, ok := strings.Cut(rest, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"`)
		if m := def.FindStringSubmatch(v); m != nil && m[1] == name {
			v = m[2]
		} else if m := arith.FindStringSubmatch(v); m != nil {
			n := 1
			for _, f := range strings.Split(m[1], "*") {
				x, err := strconv.Atoi(f)
				require.NoError(t, err)
				n *= x
			}
			v = strconv.Itoa(n)
		}
		if strings.Contains(v, "$") {
			continue
		}
		out[name] = v
	}
	require.Empty(t, stack, "run_pretrain.sh's if/fi nest")
	return out
}

// The AMD table of each stack is what that stack's Primus run_pretrain.sh exports for the collective,
// runtime and kernel variables, so mega and fsdp on AMD run with what prim and titan always get.
func TestPlatformEnvIsRunPretrains(t *testing.T) {
	dir := upstreamDir(t)
	for _, stack := range core.StackNames {
		pin, err := core.PinFor(hw.PlatformAMD, stack)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dir, "primus-"+pin.Primus, "examples", "run_pretrain.sh"))
		require.NoError(t, err)
		exports := runPretrainExports(t, string(b))
		tuning := regexp.MustCompile(`^(NCCL_|RCCL_|MSCCLPP_|HSA_|GPU_MAX_|TORCH_NCCL_|NVTE_|CUDA_DEVICE_)`)
		want := map[string]string{}
		for k, v := range exports {
			if tuning.MatchString(k) && v != "" {
				want[k] = v
			}
		}
		require.Contains(t, want, "NCCL_CHECKS_DISABLE", "the reader found Primus %s's run_pretrain.sh's exports", pin.Primus)
		assert.Equal(t, want, core.PlatformEnv(hw.PlatformAMD, stack), "Primus %s", pin.Primus)
	}
}
