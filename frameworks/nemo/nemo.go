// Package nemo builds the launches of the `nemo` framework: NVIDIA's NeMo LLM training as the NeMo
// images of core.Pins ship it, Megatron-Bridge (current stack: nvcr.io/nvidia/nemo:26.06, Bridge 0.5.0
// on Megatron Core 0.18.0; previous: nvcr.io/nvidia/nemo:26.02, Bridge 0.3.0 on Megatron Core 0.16.0).
// A launch is torchrun running a small embedded entry script that reads one JSON file, the Bridge
// configuration (ConfigContainer sections: model, train, optimizer, scheduler, dataset, logger,
// tokenizer, checkpoint, rng, ddp, dist, mixed_precision, profiling, and validation from Bridge 0.5.0),
// builds Bridge's config dataclasses from it field by field and calls Bridge's pretrain with its GPT
// forward step. Every field is written by Config from Rival's model registry and the fair
// configuration, so no recipe default, hub download or NeMo 2 (nemo.collections.llm) code is involved.
//
// The field names and types are checked in tests against the facts extracted from each stack's Bridge
// tree (frameworks/facts/bridge_<version>.json, see CheckConfig), and Bridge's own ConfigContainer
// validation runs on every matrix cell by bridgecheck/test_rival_nemo.py when an upstream tree is given.
package nemo

import (
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/hw"
	"github.com/zeebo/blake3"
)

// Version is the pinned framework of the plan's stack that the configuration was checked against
// (core.Pins; the result also records what ran, read inside the container at run time: see RanFile).
func Version(p core.Plan) (string, error) {
	pin, err := core.PinFor(hw.PlatformNVIDIA, p.Stack)
	if err != nil {
		return "", fmt.Errorf("nemo: %w", err)
	}
	return fmt.Sprintf("megatron-bridge %s (NVIDIA-NeMo/Megatron-Bridge@%s, megatron-core %s NVIDIA/Megatron-LM@%s, %s)",
		pin.Bridge, pin.BridgeCommit[:8], pin.MegatronCore, pin.MegatronCommit[:8], pin.Image), nil
}

// release is what the configuration writes differently for one Megatron-Bridge release.
type release struct {
	// validation: the evaluation settings are ConfigContainer.validation's (ValidationConfig, from
	// 0.5.0, where TrainingConfig's eval_iters and eval_interval are deprecated and default to null);
	// before, they are TrainingConfig's.
	validation bool
	// llama31Provider: Llama 3.1's RoPE scaling is Llama31ModelProvider's four fields (0.3.0). 0.5.0
	// has no such provider; GPTModelProvider's rope_scaling and rope_scaling_factor hand the factor to
	// Megatron Core's RotaryEmbedding, which fixes the bands (core.MegatronRopeScaling).
	llama31Provider bool
}

// releases are the Bridge releases of core.Pins' NeMo images, by version.
var releases = map[string]release{
	"0.3.0": {llama31Provider: true},
	"0.5.0": {validation: true},
}

// BridgeRelease returns the Megatron-Bridge version of the plan's stack (core.Pins) and refuses one
// Config does not know how to write for.
func BridgeRelease(p core.Plan) (string, error) {
	pin, err := core.PinFor(hw.PlatformNVIDIA, p.Stack)
	if err != nil {
		return "", fmt.Errorf("nemo: %w", err)
	}
	if _, ok := releases[pin.Bridge]; !ok {
		known := make([]string, 0, len(releases))
		for v := range releases {
			known = append(known, v)
		}
		sort.Strings(known)
		return "", fmt.Errorf("nemo: Megatron-Bridge %s (%s) is no release the launch is written for (known: %s)", pin.Bridge, pin.Image, strings.Join(known, ", "))
	}
	return pin.Bridge, nil
}

// LogFamily is the logparse family of a nemo run's log: Bridge prints Megatron Core's iteration
// lines and its own "Step Time" lines, which the megatron-bridge family reads.
const LogFamily = "megatron-bridge"

// RanFile is the file, relative to the run's OutputDir, where the entry script's rank 0 records what
// actually ran, read inside the container: {"framework": "megatron-bridge", "version": ...,
// "megatron_core": ..., "megatron_core_commit": ..., "transformer_engine": ..., "torch": ..., "cuda": ...}.
const RanFile = "rival_nemo_ran.json"

//go:embed rival_nemo.py
var script []byte

// ScriptName is the entry script's file name, relative to the run's OutputDir.
const ScriptName = "rival_nemo.py"

// ConfigName is the Bridge configuration's file name, relative to the run's OutputDir.
const ConfigName = "rival_nemo.json"

// Script returns a copy of the embedded entry script.
func Script() []byte { return append([]byte(nil), script...) }

// ScriptDigest is the BLAKE3 hex digest of Script().
func ScriptDigest() string {
	sum := blake3.Sum256(script)
	return hex.EncodeToString(sum[:])
}

// Fairness maps every setting of core.Fairness (the one table mega and prim read) onto the Bridge
// field that carries it, by ConfigContainer section, so nemo runs the same overlap, fusions, attention
// backend, init, EOD masking, optimizer sharding, gradient-reduce dtype, recompute and data loader as
// mega and prim. The field names are the same in Megatron-Bridge 0.3.0 and 0.5.0
// (frameworks/facts/bridge_<version>.json; the tests check each against both), and every value is
// written, so a default that moved between the releases (0.5.0: gradient_accumulation_fusion on,
// num_workers 2 and persistent_workers on, where 0.3.0 had off, 8 and off) changes nothing.
// The model's own facts (RMSNorm ε, init, window, biases) come from models.Model in Config.
// core.Fairness.PrimusTurbo has no Bridge field: Primus Turbo kernels exist only in Primus.
// core.Fairness.RerunMode is both releases' default (RerunStateMachineConfig rerun_mode "disabled"),
// so the configuration leaves that section to it.
func Fairness() map[string]Section {
	st := core.Fairness
	var recompute any
	if st.Recompute != "" {
		recompute = st.Recompute
	}
	return map[string]Section{
		"model": {
			"recompute_granularity":        recompute,
			"attention_backend":            st.AttentionBackend,
			"gradient_accumulation_fusion": st.GradAccumFusion, "masked_softmax_fusion": st.MaskedSoftmaxFusion,
			"bias_activation_fusion": st.BiasSwiGLUFusion, "apply_rope_fusion": st.RopeFusion,
			"bias_dropout_fusion": st.BiasDropoutFusion, "cross_entropy_loss_fusion": st.CrossEntropyFusion,
			// Megatron-LM's command line keeps persist_layer_norm on (--no-persist-layer-norm turns it off);
			// Bridge's GPTModelProvider defaults it off.
			"persist_layer_norm":        true,
			"attention_softmax_in_fp32": st.AttentionSoftmaxInFP32,
		},
		"optimizer": {"use_distributed_optimizer": st.DistributedOptimizer},
		"ddp": {
			"overlap_grad_reduce": st.OverlapGradReduce, "overlap_param_gather": st.OverlapParamGather,
			"use_distributed_optimizer": st.DistributedOptimizer, "grad_reduce_in_fp32": !st.GradReduceInBF16,
		},
		"dataset": {
			"eod_mask_loss": st.EODMaskLoss, "dataloader_type": st.DataloaderType, "num_workers": st.NumWorkers,
			// Megatron-LM's loader keeps its workers whenever it has any (data_samplers.py).
			"persistent_workers": st.NumWorkers > 0,
		},
	}
}

// Section is one ConfigContainer section: field name → JSON value.
type Section = map[string]any

// Config returns the Bridge configuration of a plan, by ConfigContainer section.
func Config(p core.Plan) (map[string]Section, error) {
	m, f := p.Model, p.Fair
	version, err := BridgeRelease(p)
	if err != nil {
		return nil, err
	}
	rel := releases[version]
	if f.Seed <= 0 {
		// Bridge's _set_random_seed asserts a positive seed.
		return nil, fmt.Errorf("nemo: SEED is %d: Megatron-Bridge seeds Python, NumPy and torch with it and requires a positive integer; set SEED >= 1", f.Seed)
	}
	if f.WarmupSteps >= f.TrainIters {
		// Megatron Core's OptimizerParamScheduler asserts lr_warmup_steps < lr_decay_steps.
		return nil, fmt.Errorf("nemo: WARMUP_STEPS %d must be below TRAIN_ITERS %d: Megatron Core's scheduler decays over TRAIN_ITERS and asserts warm-up < decay (Bridge 0.5.0 caps the warm-up below it instead)", f.WarmupSteps, f.TrainIters)
	}
	if _, err := mega.RotaryBase(m.RopeTheta); err != nil {
		return nil, fmt.Errorf("nemo: %w", err)
	}
	if err := p.CheckRopeScaling("nemo"); err != nil {
		return nil, err
	}
	div, err := p.VocabDivisor()
	if err != nil {
		return nil, fmt.Errorf("nemo: %w", err)
	}
	var window any
	if p.WindowActive() {
		window = []int{m.SlidingWindow, 0}
	}
	model := Section{
		"num_layers": m.Layers, "hidden_size": m.Hidden, "ffn_hidden_size": m.FFN,
		"num_attention_heads": m.Heads, "num_query_groups": m.KVHeads, "kv_channels": m.HeadDim(),
		"seq_length": f.SL, "position_embedding_type": "rope", "rotary_base": int(m.RopeTheta), "rotary_percent": 1.0,
		"normalization": "RMSNorm", "layernorm_epsilon": m.NormEps, "init_method_std": m.InitStd, "activation_func": "silu", "gated_linear_unit": true,
		"add_bias_linear": false, "add_qkv_bias": m.QKVBias, "share_embeddings_and_output_weights": m.TiedEmbeddings,
		"hidden_dropout": 0.0, "attention_dropout": 0.0, "window_size": window,
		"make_vocab_size_divisible_by": div, "vocab_size": nil, // padded to exactly config.json's vocab_size
		"tensor_model_parallel_size": f.TP, "pipeline_model_parallel_size": f.PP, "context_parallel_size": 1,
		"virtual_pipeline_model_parallel_size": nil, "sequence_parallel": p.SequenceParallel(),
		// GPTModelProvider's default; Llama31ModelProvider (Llama 3.1's scaling) defaults it to None.
		"use_transformer_engine_op_fuser": false,
	}
	if r := m.RopeScaling; r != nil && rel.llama31Provider {
		// Llama31ModelProvider's fields: rival_nemo.py builds the model section with that provider,
		// whose provide() scales the built model's rotary frequencies.
		model["scale_factor"], model["low_freq_factor"], model["high_freq_factor"] = r.Factor, r.LowFreqFactor, r.HighFreqFactor
		model["old_context_len"] = r.OriginalPositions
	} else if !rel.llama31Provider {
		// GPTModelProvider hands the switch and the factor to Megatron Core's RotaryEmbedding, as
		// mega's --use-rope-scaling does; a model whose bands differ from Megatron's is refused.
		factor, on, err := p.MegatronRopeFactor("nemo")
		if err != nil {
			return nil, err
		}
		model["rope_scaling"] = on
		if on {
			model["rope_scaling_factor"] = factor
		}
	}
	cfg := map[string]Section{
		"model": model,
		"train": {"micro_batch_size": f.MBS, "global_batch_size": f.GBS, "train_iters": f.TrainIters},
		"optimizer": {
			"optimizer": "adam", "lr": f.LR, "min_lr": f.MinLR, "weight_decay": f.WeightDecay,
			"adam_beta1": f.Beta1, "adam_beta2": f.Beta2, "adam_eps": p.AdamEpsilon(), "clip_grad": core.ClipGrad,
		},
		// Megatron Core's OptimizerParamScheduler: lr·step/warmup during warm-up (lr_warmup_init 0),
		// then cosine to min_lr at train_iters, the same formula and steps as mega's
		// --lr-warmup-iters/--lr-decay-iters/--lr-decay-style cosine.
		"scheduler": {
			"lr_decay_style": "cosine", "lr_warmup_iters": f.WarmupSteps, "lr_warmup_init": 0.0,
			"lr_decay_iters": f.TrainIters, "start_weight_decay": f.WeightDecay, "end_weight_decay": f.WeightDecay,
			"weight_decay_incr_style": "constant",
		},
		"dataset": {
			"blend": []any{[]string{p.DataPrefix}, nil}, "split": "100,0,0", "seq_length": f.SL,
			"random_seed": f.Seed, "path_to_cache": p.DataCacheDir,
			"reset_position_ids": false, "reset_attention_mask": false, "num_dataset_builder_threads": 1,
		},
		"logger":     {"log_interval": 1, "log_throughput": true, "timing_log_level": 0},
		"tokenizer":  {"tokenizer_type": "HuggingFaceTokenizer", "tokenizer_model": p.TokenizerPath},
		"checkpoint": {"save": nil, "load": nil, "ckpt_format": "torch_dist"},
		"rng":        {"seed": f.Seed},
		"ddp":        {"check_for_nan_in_grad": true},
		"dist":       {"distributed_backend": "nccl"},
		"profiling": {
			"use_pytorch_profiler": f.Profile, "use_nsys_profiler": false,
			"profile_step_start": f.ProfileStepStart, "profile_step_end": f.ProfileStepEnd,
			"profile_ranks": append([]int{}, f.ProfileRanks...), "record_shapes": false,
		},
	}
	// No evaluation, or every held-out sequence once per evaluation, where the release reads it.
	eval := Section{"eval_iters": 0, "eval_interval": f.TrainIters}
	if f.EvalIntervalSamples > 0 {
		iters, interval, err := mega.EvalBatches(f)
		if err != nil {
			return nil, fmt.Errorf("nemo: %w", err)
		}
		eval = Section{"eval_iters": iters, "eval_interval": interval}
	}
	if rel.validation {
		cfg["validation"] = eval
	} else {
		for k, v := range eval {
			cfg["train"][k] = v
		}
	}
	for sec, fields := range Fairness() {
		for k, v := range fields {
			cfg[sec][k] = v
		}
	}
	if f.Profile {
		// Bridge's PyTorch profiler writes its traces through the TensorBoard handler into this directory.
		cfg["logger"]["tensorboard_dir"] = path.Join(p.OutputDir, "profile")
	}
	switch f.Precision {
	case core.BF16, core.FP8:
		cfg["mixed_precision"] = Section{
			"bf16": true, "fp16": false, "params_dtype": "bfloat16", "pipeline_dtype": "bfloat16",
			// Bridge's mixed-precision setup copies this onto ddp.grad_reduce_in_fp32.
			"autocast_enabled": false, "grad_reduce_in_fp32": !core.Fairness.GradReduceInBF16,
		}
		if f.Precision == core.FP8 {
			// Delayed-scaling hybrid FP8 with the amax settings mega uses (Bridge's
			// bf16_with_fp8_delayed_scaling_mixed, but with bf16 parameter all-gathers like mega and prim).
			for k, v := range (Section{
				"fp8": "hybrid", "fp8_recipe": "delayed", "fp8_margin": 0, "fp8_amax_history_len": 1024,
				"fp8_amax_compute_algo": "max", "fp8_param_gather": false, "fp8_param": false,
			}) {
				cfg["mixed_precision"][k] = v
			}
		}
	case core.FP32:
		cfg["mixed_precision"] = Section{
			"fp32": true, "bf16": false, "fp16": false, "params_dtype": "float32", "pipeline_dtype": "float32",
			"autocast_enabled": false, "grad_reduce_in_fp32": true,
		}
	default:
		return nil, fmt.Errorf("nemo: precision %q: want bf16, fp8 or fp32", f.Precision)
	}
	return cfg, nil
}

// PreflightRanFile is where the preflight's --ran argument points, relative to OutputDir. The check
// writes nothing there; it keeps the run's own RanFile untouched.
const PreflightRanFile = PreflightDir + "/" + RanFile

// CheckCommand is the preflight of a launch built for p: the entry script with --check builds the
// configuration and runs Bridge's own validation (runtime_config_update, then Megatron Core's
// scheduler) for the run's world size, in seconds and without GPUs, inside the NeMo image, with the
// launch's files written to OutputDir. It prints "preflight ran: {json}" (what the image holds) and
// ends with "preflight ok: ..." or "preflight failed: <Bridge's error>", exiting 1 on failure.
// WORLD_SIZE and RANK come from the environment (see Preflight).
func CheckCommand(p core.Plan) []string {
	return append(append([]string{"python3", path.Join(p.OutputDir, ScriptName), "--config", path.Join(p.OutputDir, ConfigName),
		"--ran", path.Join(p.OutputDir, PreflightRanFile)}, heldOutArgs(p)...), "--check")
}

// Evaluation is how a nemo launch evaluates the held-out set (core.Launch.Evaluation).
const Evaluation = "Megatron-Bridge's own evaluate() over Megatron's GPTDataset of the held-out set: rival_nemo.py hands Bridge's validation loader rival_megatron.py's view of exactly the held-out sequences, so each evaluation (one epoch of Bridge's cyclic sampler) reads every one once; loss summed over valid tokens and data-parallel ranks"

// heldOutArgs are rival_nemo.py's arguments naming the held-out set when the run evaluates.
func heldOutArgs(p core.Plan) []string {
	if p.Fair.EvalIntervalSamples <= 0 {
		return nil
	}
	return mega.HeldOutArgs(p)
}

// PreflightDir holds, relative to OutputDir, the preflight's helper files: frameworks/facts'
// preflight.py and its stand-ins, whose helpers_cpp compiles Megatron's dataset helpers when the image
// holds no build of them (rival_nemo.py --check imports it to build the dataset it digests).
const PreflightDir = "preflight"

// Preflight is the launch of CheckCommand: the run's environment plus the world size, no GPUs.
func Preflight(p core.Plan, run core.Launch) *core.Launch {
	env := map[string]string{"WORLD_SIZE": core.Int(p.World), "RANK": "0", "LOCAL_RANK": "0", "PYTHONDONTWRITEBYTECODE": "1"}
	for k, v := range run.Env {
		env[k] = v
	}
	return &core.Launch{Framework: core.Nemo, Command: CheckCommand(p), WorkDir: p.OutputDir, Env: env, Devices: true}
}

// Build returns the launch of one nemo run.
func Build(p core.Plan) (core.Launch, error) {
	cfg, err := Config(p)
	if err != nil {
		return core.Launch{}, err
	}
	doc, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return core.Launch{}, fmt.Errorf("nemo: encoding the Bridge configuration: %w", err)
	}
	version, err := Version(p)
	if err != nil {
		return core.Launch{}, err
	}
	cmd := append(append(mega.Torchrun(p), path.Join(p.OutputDir, ScriptName),
		"--config", path.Join(p.OutputDir, ConfigName), "--ran", path.Join(p.OutputDir, RanFile)), heldOutArgs(p)...)
	l := core.Launch{
		Framework: core.Nemo, Command: cmd, WorkDir: p.OutputDir, FrameworkVersion: version,
		Env: map[string]string{
			"PYTHONUNBUFFERED":            "1",
			"CUDA_DEVICE_MAX_CONNECTIONS": "1",
			// No hub access at run time: the tokenizer is a local directory and nothing else is fetched.
			"HF_HUB_OFFLINE":       "1",
			"TRANSFORMERS_OFFLINE": "1",
		},
		Files:             map[string][]byte{ScriptName: Script(), ConfigName: append(doc, '\n')},
		EntryScriptDigest: ScriptDigest(), LogFamily: LogFamily, RanFile: RanFile,
	}
	for n, b := range facts.PreflightFiles() {
		l.Files[path.Join(PreflightDir, n)] = b
	}
	l.Files[path.Join(PreflightDir, core.KnobsFile)] = core.KnobsJSON()
	if len(heldOutArgs(p)) > 0 {
		// rival_nemo.py imports the held-out view from beside itself.
		l.Files[mega.Wrapper], l.Evaluation = mega.WrapperPy(), Evaluation
	}
	l.Preflight = Preflight(p, l)
	return l, nil
}
