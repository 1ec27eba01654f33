// Package titan builds TorchTitan launches: upstream TorchTitan's trainer under torchrun on NVIDIA,
// Primus's torchtitan backend (examples/run_pretrain.sh with a generated experiment yaml) on AMD. Both
// import the embedded extension rival_titan.py through TorchTitan's experimental.custom_import; it
// registers a train spec whose one flavour is the registry's exact model shape and whose dataloader
// reads Rival's Megatron .bin/.idx dataset, so TorchTitan trains what the other frameworks train on
// the same tokens.
package titan

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/prim"
	"github.com/rivalbench/rival/hw"
	"github.com/zeebo/blake3"
)

// Pin is the TorchTitan one platform image runs.
type Pin struct {
	Version string // release tag or commit prefix; names frameworks/facts/torchtitan_<Version>.json
	Commit  string // pytorch/torchtitan commit
	Where   string // how it gets into the image
	Primus  bool   // run through Primus's torchtitan backend, which adds options of its own
	// PrimusTag and PrimusCommit name the Primus release whose backend runs it (amd).
	PrimusTag, PrimusCommit string
	// Loss is how the version's trainer normalises a step's loss (LossPerMicroBatch, LossPerToken);
	// Version, and so every launch and result, names it.
	Loss string
}

// How a TorchTitan step normalises its loss. TorchTitan #2206 (in v0.2.2) moved from the first to the
// second. Rival's batches have no padding and no ignored labels, and a step's micro-batches are all
// MBS × SL tokens, so a mean of the micro-batch means is the mean over every token: both give the same
// loss for the same batch. A launch that masked labels or varied micro-batch sizes would tell them apart.
const (
	LossPerMicroBatch = "mean per micro-batch, averaged over micro-batches and ranks"
	LossPerToken      = "sum over micro-batches and ranks / all valid tokens (#2206)"
)

// PinnedFor returns the TorchTitan a platform image of a stack runs, taken from the one
// pinned-versions table (core.Pins). NVIDIA: the release nvd.Dockerfile installs (the NeMo images ship
// none): v0.2.2 on the current stack, v0.2.0 on the previous one. AMD: the commit Primus pins as its
// third_party/torchtitan submodule, as the image ships it, run through Primus's backend: v0.2.2 in
// Primus v26.5.1, 5fb7cc2e (whose JobConfig v0.2.0 shares) in Primus v26.2.
func PinnedFor(platform, stack string) (Pin, error) {
	p, err := core.PinFor(platform, stack)
	if err != nil {
		return Pin{}, fmt.Errorf("titan: no TorchTitan is pinned: %w", err)
	}
	v := p.TorchTitan
	if v == "" {
		v = p.TorchTitanCommit[:8]
	}
	pin := Pin{Version: v, Commit: p.TorchTitanCommit, Where: p.TorchTitanWhere, Primus: p.Primus != "",
		PrimusTag: p.Primus, PrimusCommit: p.PrimusCommit}
	if jc, ok := jobConfigs[v]; ok {
		pin.Loss = jc.loss
	}
	return pin, nil
}

// jobConfig is what one pinned TorchTitan version changes against v0.2.0's job config, whose options
// sectionsV020 writes. Option names and sections move between versions (training.compile became
// [compile] on 2025-08-20, checkpoint.enable_checkpoint and validation.enabled became enable on
// 2025-08-22, seed and deterministic moved to [debug] by v0.2.2); each version's launch is checked
// against its own extracted JobConfig.
type jobConfig struct {
	// moved maps "section.key" of v0.2.0 to where this version reads the option; writing the old
	// name is refused even where Primus's pre_trainer.yaml still sets it (its backend keeps unknown
	// keys as plain attributes that TorchTitan never reads).
	moved map[string]string
	loss  string // Pin.Loss
}

// jobConfigs lists every TorchTitan version a launch can be written for.
var jobConfigs = map[string]jobConfig{
	"5fb7cc2e": {loss: LossPerMicroBatch}, // v0.2.0's JobConfig is 5fb7cc2e's (frameworks/facts/torchtitan_*.json)
	"v0.2.0":   {loss: LossPerMicroBatch},
	"v0.2.2": {loss: LossPerToken, moved: map[string]string{
		"training.seed": "debug.seed", "training.deterministic": "debug.deterministic"}},
}

// Version names the sources every option name, class and function was checked against (see
// docs/frameworks.md).
func Version(p core.Plan) (string, error) {
	pin, err := PinnedFor(p.Platform, p.Stack)
	if err != nil {
		return "", err
	}
	v := fmt.Sprintf("pytorch/torchtitan %s (%s; config/job_config.py, protocols/train_spec.py, components/dataloader.py, models/llama3/model/args.py)", pin.Version, pin.Commit[:8])
	if pin.Primus {
		v += fmt.Sprintf("; AMD-AGI/Primus %s (%s: configs/modules/torchtitan/pre_trainer.yaml, backends/torchtitan/config_utils.py)", pin.PrimusTag, pin.PrimusCommit[:8])
	}
	if pin.Loss != "" {
		v += "; loss: " + pin.Loss
	}
	return v, nil
}

//go:embed rival_titan.py
var script []byte

//go:embed rival_titan_check.py
var checkScript []byte

// File names, relative to the run's OutputDir.
const (
	ScriptName = "rival_titan.py"   // the extension module TorchTitan imports
	ConfigName = "rival_titan.json" // the model shape and data settings the module reads
	TOMLName   = "rival_titan.toml" // NVIDIA: TorchTitan's job config
	EXPName    = "primus/titan-exp.yaml"
)

// SpecName is the train spec the extension registers; Module is what custom_import imports.
const (
	SpecName = "rival_llama"
	Module   = "rival_titan"
)

// Script returns a copy of the embedded extension module.
func Script() []byte { return append([]byte(nil), script...) }

// ScriptDigest is the BLAKE3 hex digest of Script().
func ScriptDigest() string {
	sum := blake3.Sum256(script)
	return hex.EncodeToString(sum[:])
}

// Config is rival_titan.json: what the extension module needs besides TorchTitan's job config.
type Config struct {
	Flavor     string      `json:"flavor"`
	Model      ModelConfig `json:"model"`
	DataPrefix string      `json:"data_prefix"`
	Seed       int         `json:"seed"`
	// OrderDir holds the sample order Rival writes before training (gptorder: Megatron's
	// GPTDataset indices for Seed, SL and NumSamples = TRAIN_ITERS × GBS).
	OrderDir   string `json:"order_dir"`
	NumSamples int64  `json:"num_samples"`
	// HeldOut is the held-out set the validator reads (EVAL_INTERVAL_SAMPLES); nil: no evaluation.
	HeldOut *HeldOutConfig `json:"held_out,omitempty"`
}

// HeldOutConfig names Rival's held-out set (core.HeldOutName) and its number of sequences.
type HeldOutConfig struct {
	Prefix  string `json:"prefix"`
	Samples int    `json:"samples"`
}

// Evaluation is how a titan launch evaluates the held-out set (core.Launch.Evaluation).
const Evaluation = "TorchTitan's own validator (components/validate.py) built through rival_titan.py's build_validator_fn, its loader reading the held-out set from the first sequence at every evaluation, each rank its share as Megatron's sampler hands it out; loss averaged over equal batches of full sequences, which is the mean over tokens"

// NoEvaluationPP is why a titan launch with pipeline parallelism does not evaluate the held-out set.
const NoEvaluationPP = "not evaluated: with pipeline parallelism TorchTitan's validator runs the pipeline schedule's own micro-batches, which Rival's held-out loader does not follow; run titan with PP 1 to evaluate"

// evaluates reports whether a titan launch of p evaluates the held-out set: when evaluation is
// asked for, without pipeline parallelism (TorchTitan's validator then runs its own pipeline
// schedule, whose micro-batching Rival's held-out loader does not follow).
func evaluates(p core.Plan) bool { return p.Fair.EvalIntervalSamples > 0 && p.Fair.PP <= 1 }

// RopeScalingArgs are TorchTitan's RoPEScalingArgs fields (models/llama3/model/args.py).
type RopeScalingArgs struct {
	ScalingFactor                 float64 `json:"scaling_factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
}

// ModelConfig is the model's shape as the extension module turns it into TorchTitan model args.
type ModelConfig struct {
	Layers       int     `json:"layers"`
	Hidden       int     `json:"hidden"`
	FFN          int     `json:"ffn"`
	Heads        int     `json:"heads"`
	KVHeads      int     `json:"kv_heads"`
	Vocab        int     `json:"vocab"`
	RopeTheta    float64 `json:"rope_theta"`
	MaxPositions int     `json:"max_positions"`
	NormEps      float64 `json:"norm_eps"` // RMSNorm ε (TorchTitan's norm_eps)
	// RopeScaling is TorchTitan's RoPEScalingArgs for Llama 3 scaling; nil is plain RoPE.
	RopeScaling *RopeScalingArgs `json:"rope_scaling"`
	// InitStd is the model's weight-init standard deviation (models.Model.InitStd), for the
	// extension's model initialisation.
	InitStd float64 `json:"init_std"`
	// QKVBias gives the attention's q, k and v projections biases (Qwen 2.5); the extension's
	// model builds them, as TorchTitan's Llama attention has none.
	QKVBias bool `json:"qkv_bias"`
	// Window is the sliding window the attention applies at the run's SL (a query sees itself and
	// Window keys before it, Megatron's window_size (Window, 0)); 0 is full causal attention. The
	// extension's model masks it with FlexAttention, as TorchTitan's Llama attention has no window.
	Window int `json:"window"`
}

// check rejects what the pinned TorchTitan cannot train the way the other frameworks do. Each error
// says why and what to change.
func check(p core.Plan) error {
	m, f := p.Model, p.Fair
	if m.TiedEmbeddings {
		return fmt.Errorf("titan: model %s ties its input embedding and output layer, which TorchTitan's Llama model cannot (tok_embeddings and output are separate parameters); run %s with mega, prim, nemo or fsdp", m.Name, m.Name)
	}
	if err := p.CheckRopeScaling("titan"); err != nil {
		return err
	}
	if f.Precision == core.FP8 {
		return fmt.Errorf("titan: PRECISION fp8: TorchTitan's float8 converter scales dynamically (tensorwise or rowwise) and has no delayed-scaling hybrid recipe, which every other framework runs; use bf16 or fp32 for titan")
	}
	if f.Precision == core.BF16 && f.DP == 1 && (f.TP > 1 || f.PP > 1) {
		return fmt.Errorf("titan: PRECISION bf16 with DP 1 and TP %d × PP %d: TorchTitan applies bf16 mixed precision through FSDP (data_parallel_shard_degree > 1), or through autocast only without TP and PP (distributed/utils.py maybe_enable_amp), so this cell would train in float32; use a DP of 2 or more (a smaller TP × PP) or PRECISION=fp32 for titan", f.TP, f.PP)
	}
	if f.Profile {
		return fmt.Errorf("titan: PROFILE=1: TorchTitan's profiler traces every profiling.profile_freq steps and cannot be set to PROFILE_STEP_START..PROFILE_STEP_END; set PROFILE=0 for titan runs")
	}
	return nil
}

// Build returns the launch of one TorchTitan run.
func Build(p core.Plan) (core.Launch, error) {
	if err := check(p); err != nil {
		return core.Launch{}, err
	}
	cfg, err := configJSON(p)
	if err != nil {
		return core.Launch{}, err
	}
	files := map[string][]byte{ScriptName: Script(), ConfigName: cfg}
	if p.Platform != hw.PlatformNVIDIA && p.Platform != hw.PlatformAMD {
		return core.Launch{}, fmt.Errorf("titan: platform %q: TorchTitan runs on amd (through Primus) and nvd", p.Platform)
	}
	version, err := Version(p)
	if err != nil {
		return core.Launch{}, err
	}
	l := core.Launch{Framework: core.Titan, EntryScriptDigest: ScriptDigest(), FrameworkVersion: version, Files: files}
	if evaluates(p) {
		l.Evaluation = Evaluation
	} else if p.Fair.EvalIntervalSamples > 0 {
		l.NoEvaluation = NoEvaluationPP
	}
	secs, err := Sections(p, p.Platform)
	if err != nil {
		return core.Launch{}, err
	}
	if err := CheckSections(p, p.Platform, secs); err != nil {
		return core.Launch{}, err
	}
	switch p.Platform {
	case hw.PlatformNVIDIA:
		files[TOMLName] = []byte(TOML(secs))
		// torchrun -m runs the module with the working directory first on sys.path, which is how
		// custom_import finds rival_titan.py.
		l.Command = append(mega.Torchrun(p), "-m", "torchtitan.train", "--job.config_file", path.Join(p.OutputDir, TOMLName))
		l.WorkDir = p.OutputDir
		l.Env = map[string]string{"PYTHONUNBUFFERED": "1"}
		l.Rendezvous = core.Rendezvous{NNodes: p.NNodes, GPUsPerNode: p.GPUsPerNode}
	case hw.PlatformAMD:
		files[EXPName] = []byte(renderEXP(p, secs))
		l.Command = []string{"bash", prim.Script}
		l.WorkDir = prim.Dir
		l.Rendezvous = prim.Rendezvous(p)
		l.Env = map[string]string{
			"EXP":       path.Join(p.OutputDir, EXPName),
			"TRAIN_LOG": path.Join(p.OutputDir, "primus-train.log"),
			// Primus runs primus/cli/main.py from its own directory; custom_import finds the
			// extension through PYTHONPATH.
			"PYTHONPATH":       p.OutputDir,
			"PYTHONUNBUFFERED": "1",
		}
	}
	l.Preflight = Preflight(p, l)
	return l, nil
}

// Preflight file names, relative to OutputDir.
const (
	CheckName   = "preflight/rival_titan_check.py" // the read-back (frameworks/titan/rival_titan_check.py)
	StubsName   = "preflight/pystubs.py"           // stand-ins for packages an image lacks (frameworks/facts)
	TreeEnv     = "RIVAL_TORCHTITAN_DIR"           // names a TorchTitan tree the preflight reads instead of the image's
	PrimusEnv   = "RIVAL_PRIMUS_DIR"               // names a Primus tree the amd preflight reads instead of the image's
	primusTitan = prim.Dir + "/third_party/torchtitan"
)

// CheckScript returns a copy of the embedded read-back.
func CheckScript() []byte { return append([]byte(nil), checkScript...) }

// Preflight is titan's preflight: rival_titan_check.py runs the launcher's own config path on the
// exact job config the launch writes (TorchTitan's ConfigManager on nvd; on amd PrimusRuntime's steps
// up to the trainer's init, Primus's TorchTitan patches included), then TorchTitan's train spec with
// Rival's extension, the model
// on the meta device, its init, the optimizers and the LR schedule, and prints what they are
// (frameworks/effective), without GPUs; then, when the dataset and order are there, the SHA-256 of the
// first samples the train spec's dataloaders hand the data-parallel ranks (core.SampleDigest). It
// adds its files to run.
func Preflight(p core.Plan, run core.Launch) *core.Launch {
	run.Files[CheckName] = CheckScript()
	run.Files[StubsName] = facts.PreflightFiles()["pystubs.py"]
	args := []string{"python3", path.Join(p.OutputDir, CheckName), p.Platform, "$" + TreeEnv, p.OutputDir, core.Int(p.World)}
	if p.Platform == hw.PlatformAMD {
		args[3] += ":" + primusTitan
		args = append(args, run.Env["EXP"], "$"+PrimusEnv+":"+prim.Dir)
	} else {
		args = append(args, path.Join(p.OutputDir, TOMLName))
	}
	// Whatever the run's command line adds after the job config (nvd) or run_pretrain.sh (amd) is
	// what the launcher parses as overrides: the check parses it the same way.
	if extra := RunOverrides(run.Command); len(extra) > 0 {
		args = append(append(args, "--"), extra...)
	}
	env := map[string]string{"PYTHONDONTWRITEBYTECODE": "1"}
	for k, v := range run.Env {
		env[k] = v
	}
	env["WORLD_SIZE"], env["RANK"], env["LOCAL_RANK"] = core.Int(p.World), "0", "0"
	return &core.Launch{Framework: core.Titan, Command: args, WorkDir: p.OutputDir, Env: env}
}

// RunOverrides are the arguments a titan run's command passes after its job config: those after
// --job.config_file's value (TorchTitan's ConfigManager reads them as overrides), or after Primus's
// run_pretrain.sh (passed on to primus/cli/main.py as overrides).
func RunOverrides(cmd []string) []string {
	if i := slices.Index(cmd, "--job.config_file"); i >= 0 && i+1 < len(cmd) {
		return cmd[i+2:]
	}
	if i := slices.Index(cmd, prim.Script); i >= 0 {
		return cmd[i+1:]
	}
	return nil
}

func configJSON(p core.Plan) ([]byte, error) {
	m := p.Model
	c := Config{
		Flavor: m.Name, DataPrefix: p.DataPrefix, Seed: p.Fair.Seed,
		OrderDir: p.DataCacheDir, NumSamples: int64(p.Fair.TrainIters) * int64(p.Fair.GBS),
		Model: ModelConfig{Layers: m.Layers, Hidden: m.Hidden, FFN: m.FFN, Heads: m.Heads, KVHeads: m.KVHeads,
			Vocab: m.Vocab, RopeTheta: m.RopeTheta, MaxPositions: m.MaxPositions, NormEps: m.NormEps, InitStd: m.InitStd,
			QKVBias: m.QKVBias},
	}
	if p.WindowActive() {
		c.Model.Window = m.SlidingWindow
	}
	if evaluates(p) {
		c.HeldOut = &HeldOutConfig{Prefix: p.HeldOutPath(), Samples: p.Fair.EvalSamples}
	}
	if r := m.RopeScaling; r != nil {
		c.Model.RopeScaling = &RopeScalingArgs{ScalingFactor: r.Factor, LowFreqFactor: r.LowFreqFactor,
			HighFreqFactor: r.HighFreqFactor, OriginalMaxPositionEmbeddings: r.OriginalPositions}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("titan: encode %s: %w", ConfigName, err)
	}
	return append(b, '\n'), nil
}

// KV is one option of a job-config section; Value is already in TOML/YAML literal form.
type KV struct{ Key, Value string }

// Section is one job-config section ([training], [parallelism], ...).
type Section struct {
	Name string
	KVs  []KV
}

// Sections returns every job-config option the run sets on platform, in a fixed order, as the
// TorchTitan pinned for that platform names them.
func Sections(p core.Plan, platform string) ([]Section, error) {
	pin, err := PinnedFor(platform, p.Stack)
	if err != nil {
		return nil, err
	}
	jc, ok := jobConfigs[pin.Version]
	if !ok {
		return nil, fmt.Errorf("titan: no job-config generator for TorchTitan %s: add it to jobConfigs in frameworks/titan/titan.go", pin.Version)
	}
	val, err := validation(p)
	if err != nil {
		return nil, err
	}
	return jc.apply(sectionsV020(p, pin.Primus, val)), nil
}

// apply moves the options of v0.2.0's job config to where the version reads them: to the end of the
// new section, which is added right after the old one when the job config has none yet.
func (jc jobConfig) apply(secs []Section) []Section {
	var out []Section
	for _, s := range secs {
		var kept, moved []KV
		var to []string
		for _, kv := range s.KVs {
			if dst, ok := jc.moved[s.Name+"."+kv.Key]; ok {
				sec, key, _ := strings.Cut(dst, ".")
				to, moved = append(to, sec), append(moved, KV{key, kv.Value})
				continue
			}
			kept = append(kept, kv)
		}
		if i := slices.IndexFunc(out, func(o Section) bool { return o.Name == s.Name }); i >= 0 {
			out[i].KVs = append(out[i].KVs, kept...) // a section an earlier move added
		} else if len(kept) > 0 {
			out = append(out, Section{s.Name, kept})
		}
		for n, kv := range moved {
			i := slices.IndexFunc(out, func(o Section) bool { return o.Name == to[n] })
			if i < 0 {
				i, out = len(out), append(out, Section{Name: to[n]})
			}
			out[i].KVs = append(out[i].KVs, kv)
		}
	}
	return out
}

// CheckSections checks every option against the JobConfig facts of the TorchTitan pinned for
// platform (frameworks/facts/torchtitan_<version>.json, plus Primus's own options on AMD): an
// option the pinned version does not have, or a value of the wrong type, fails here rather than in
// the trainer's config loader on the GPU host.
func CheckSections(p core.Plan, platform string, secs []Section) error {
	pin, err := PinnedFor(platform, p.Stack)
	if err != nil {
		return err
	}
	f, err := facts.TorchTitan(pin.Version, pin.Primus)
	if err != nil {
		return fmt.Errorf("titan: %w", err)
	}
	moved := jobConfigs[pin.Version].moved
	for _, s := range secs {
		for _, kv := range s.KVs {
			if to, ok := moved[s.Name+"."+kv.Key]; ok {
				return fmt.Errorf("titan: %s job config: %s.%s moved to %s in TorchTitan %s, which does not read the old name", platform, s.Name, kv.Key, to, pin.Version)
			}
			if err := f.Check(s.Name, kv.Key, kv.Value); err != nil {
				return fmt.Errorf("titan: %s job config: %w", platform, err)
			}
		}
	}
	return nil
}

// sectionsV020 is the job config of TorchTitan v0.2.0 and of 5fb7cc2e (the same JobConfig); later
// versions move its options (jobConfig.apply).
func sectionsV020(p core.Plan, primus bool, validation Section) []Section {
	m, f := p.Model, p.Fair
	i := core.Int
	param := "bfloat16"
	if f.Precision == core.FP32 {
		param = "float32"
	}
	// TorchTitan accumulates global_batch_size / (local_batch_size × DP) micro-batches per step.
	// With pipeline parallelism the GA micro-batches of MBS go through the pipeline in one step,
	// as in Megatron, instead of GA pipeline flushes.
	local := f.MBS
	if f.PP > 1 {
		local = f.MBS * f.GA
	}
	training := Section{"training", []KV{
		{"dataset", q("rival_megatron")}, {"dataset_path", q(p.DataPrefix)},
		{"local_batch_size", i(local)}, {"global_batch_size", i(f.GBS)}, {"seq_len", i(f.SL)},
		{"max_norm", fl(core.ClipGrad)}, {"steps", i(f.TrainIters)},
		{"mixed_precision_param", q(param)}, {"mixed_precision_reduce", q("float32")},
		{"seed", i(f.Seed)}, {"deterministic", "false"},
	}}
	if primus {
		// Primus's pre_trainer.yaml turns its synthetic data on by default.
		training.KVs = append(training.KVs, KV{"mock_data", "false"})
	}
	// hf_assets_path is the folder holding tokenizer.json (tokenizer_path is its deprecated alias).
	model := Section{"model", []KV{{"name", q(SpecName)}, {"flavor", q(m.Name)}, {"hf_assets_path", q(p.TokenizerPath)}}}
	var turbo []Section
	if primus {
		// One framework, one software stack on both platforms: Primus v26.2 and v26.5.1 turn Primus Turbo on
		// (pre_trainer.yaml's primus_turbo section, and the llama3.1 model yaml's converters list),
		// which TorchTitan on NVIDIA and prim (core.Fairness.PrimusTurbo) run without.
		model.KVs = append(model.KVs, KV{"converters", "[]"})
		turbo = []Section{{"primus_turbo", []KV{{"enable_primus_turbo", "false"}, {"use_turbo_attention", "false"},
			{"use_turbo_async_tp", "false"}, {"use_turbo_mx_linear", "false"}, {"use_turbo_float8_linear", "false"},
			{"use_turbo_grouped_mm", "false"}, {"enable_attention_float8", "false"}, {"use_moe_fp8", "false"},
			// On by default: its setup patch makes every nn.Embedding cast its output to the autocast
			// dtype, which changes the numerics wherever TorchTitan autocasts (no FSDP sharding).
			{"enable_embedding_autocast", "false"}}}}
	}
	return append([]Section{
		{"job", []KV{{"dump_folder", q(path.Join(p.OutputDir, "titan"))}, {"description", q("rival " + m.Name)}}},
		model,
		{"optimizer", []KV{{"name", q("AdamW")}, {"lr", fl(f.LR)}, {"beta1", fl(f.Beta1)}, {"beta2", fl(f.Beta2)},
			{"eps", fl(p.AdamEpsilon())}, {"weight_decay", fl(f.WeightDecay)}, {"implementation", q("fused")}}},
		{"lr_scheduler", []KV{{"warmup_steps", i(f.WarmupSteps)}, {"decay_type", q("cosine")},
			{"min_lr_factor", fl(f.MinLR / f.LR)}}},
		training,
		{"parallelism", []KV{{"data_parallel_replicate_degree", "1"}, {"data_parallel_shard_degree", i(f.DP)},
			{"tensor_parallel_degree", i(f.TP)}, {"pipeline_parallel_degree", i(f.PP)},
			{"pipeline_parallel_microbatch_size", i(f.MBS)}, {"pipeline_parallel_schedule", q("1F1B")},
			{"context_parallel_degree", "1"}}},
		{"activation_checkpoint", []KV{{"mode", q("none")}}},
		{"checkpoint", []KV{{"enable", "false"}}},
		{"compile", []KV{{"enable", "false"}}},
		{"metrics", []KV{{"log_freq", "1"}, {"enable_tensorboard", "false"}, {"disable_color_printing", "true"}}},
		validation,
		{"experimental", []KV{{"custom_import", q(Module)}}},
	}, turbo...)
}

// validation is the [validation] section: off, or every held-out sequence once (steps of MBS per
// data-parallel rank) every EVAL_INTERVAL_SAMPLES (freq in steps).
func validation(p core.Plan) (Section, error) {
	f := p.Fair
	if !evaluates(p) {
		return Section{"validation", []KV{{"enable", "false"}}}, nil
	}
	if f.GBS <= 0 || f.MBS*f.DP <= 0 || f.EvalIntervalSamples%f.GBS != 0 || f.EvalSamples%(f.MBS*f.DP) != 0 {
		return Section{}, fmt.Errorf("titan: EVAL_INTERVAL_SAMPLES %d must be a multiple of the global batch %d and EVAL_SAMPLES %d of MBS × DP = %d: TorchTitan validates after whole steps, each rank reading whole batches",
			f.EvalIntervalSamples, f.GBS, f.EvalSamples, f.MBS*f.DP)
	}
	i := core.Int
	return Section{"validation", []KV{{"enable", "true"}, {"freq", i(f.EvalIntervalSamples / f.GBS)},
		{"steps", i(f.EvalSamples / (f.MBS * f.DP))}, {"local_batch_size", i(f.MBS)}, {"seq_len", i(f.SL)}}}, nil
}

// TOML renders sections as TorchTitan's --job.config_file.
func TOML(secs []Section) string {
	var b strings.Builder
	b.WriteString("# Generated by Rival: one fair benchmark run on TorchTitan.\n")
	for _, s := range secs {
		fmt.Fprintf(&b, "\n[%s]\n", s.Name)
		for _, kv := range s.KVs {
			fmt.Fprintf(&b, "%s = %s\n", kv.Key, kv.Value)
		}
	}
	return b.String()
}

// EXP renders the Primus experiment yaml of an AMD run: Primus's torchtitan module config and stock
// Llama 3.1 8B model yaml, with every option the run sets as an override.
func EXP(p core.Plan) (string, error) {
	secs, err := Sections(p, hw.PlatformAMD)
	if err != nil {
		return "", err
	}
	return renderEXP(p, secs), nil
}

func renderEXP(p core.Plan, secs []Section) string {
	var b strings.Builder
	b.WriteString("# Generated by Rival: one fair benchmark run on Primus's torchtitan backend.\n")
	b.WriteString("work_group: ${PRIMUS_TEAM:amd}\nuser_name: ${PRIMUS_USER:root}\n")
	fmt.Fprintf(&b, "exp_name: %s\nworkspace: %s\n", q("rival-titan-"+p.Model.Name), q(path.Join(p.OutputDir, "primus")))
	b.WriteString("\nmodules:\n  pre_trainer:\n    framework: torchtitan\n    config: pre_trainer.yaml\n    model: llama3.1_8B.yaml\n    overrides:\n")
	for _, s := range secs {
		fmt.Fprintf(&b, "      %s:\n", s.Name)
		for _, kv := range s.KVs {
			fmt.Fprintf(&b, "        %s: %s\n", kv.Key, kv.Value)
		}
	}
	return b.String()
}

// fl formats a float so both TOML and PyYAML (YAML 1.1, which reads 1e-08 as a string) read a
// float: the mantissa always has a decimal point.
func fl(v float64) string {
	s := core.Float(v)
	if strings.ContainsAny(s, ".nN") {
		return s
	}
	if m, e, ok := strings.Cut(s, "e"); ok {
		return m + ".0e" + e
	}
	return s + ".0"
}

// q quotes s as a TOML basic string, which YAML reads as the same double-quoted string.
func q(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\u` + fmt.Sprintf("%04X", r))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
