// Package prim builds Primus launches (AMD): examples/run_pretrain.sh with EXP set to an experiment
// file Rival writes next to the run. That file is the stock experiment Primus ships for the model's
// family and precision (read from the pinned Primus release's facts, frameworks/facts) with every key
// the run sets written under modules.pre_trainer.overrides as typed yaml values, so no value goes
// through the command line's string typing.
package prim

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// Version names the pinned Primus tree the launches of a stack are built for ("" is current).
func Version(stack string) string {
	pin, err := core.PinFor(hw.PlatformAMD, stack)
	if err != nil {
		return ""
	}
	return pin.PrimusVersion()
}

// StockComment starts the first line of every experiment file Rival writes, followed by the name of
// the stock experiment it was made from.
const StockComment = "Rival experiment from Primus's stock "

// StockEXP returns the name, under the pinned release's examples/megatron/configs/MI300X, of the stock
// experiment a model starts from (models.Model.PrimusStock): Primus ships one per precision
// (*-BF16-pretrain.yaml and *-FP8-pretrain.yaml since Primus ca4ef23d); an fp32 run starts from the
// BF16 one.
func StockEXP(m models.Model, precision string) (string, error) {
	if m.PrimusStock == "" {
		return "", fmt.Errorf("prim: model %s names no Primus experiment to start from (models.Model.PrimusStock)", m.Name)
	}
	p := "BF16"
	if precision == core.FP8 {
		p = "FP8"
	}
	return m.PrimusStock + "-" + p + "-pretrain.yaml", nil
}

// Overrides returns every key the run sets, in a fixed order, named as the stack's Primus names them.
func Overrides(p core.Plan) ([]Override, error) {
	m, f := p.Model, p.Fair
	pf, err := primusOf(p.Stack)
	if err != nil {
		return nil, err
	}
	i, fl := core.Int, pyFloat
	scale, scaled, err := p.MegatronRopeFactor("prim")
	if err != nil {
		return nil, err
	}
	div, err := p.VocabDivisor()
	if err != nil {
		return nil, fmt.Errorf("prim: %w", err)
	}
	st := core.Fairness
	if m.RopeTheta <= 0 || m.RopeTheta != float64(int64(m.RopeTheta)) {
		return nil, fmt.Errorf("prim: rope theta %g is not a positive integer, which Megatron's rotary_base requires", m.RopeTheta)
	}
	o := []Override{
		{"num_layers", i(m.Layers)}, {"hidden_size", i(m.Hidden)}, {"ffn_hidden_size", i(m.FFN)},
		{"num_attention_heads", i(m.Heads)}, {"group_query_attention", "True"}, {"num_query_groups", i(m.KVHeads)},
		{"position_embedding_type", "rope"}, {"rotary_base", fmt.Sprintf("%d", int64(m.RopeTheta))},
		// Set either way: Primus's model yamls differ on it (language_model.yaml off, llama4 on).
		{"use_rope_scaling", pyBool(scaled)},
		{"max_position_embeddings", i(m.MaxPositions)}, {"normalization", "RMSNorm"}, {"swiglu", "True"},
		{"untie_embeddings_and_output_weights", pyBool(!m.TiedEmbeddings)}, {"add_bias_linear", "False"},
		{"add_qkv_bias", pyBool(m.QKVBias)}, {"attention_dropout", "0.0"}, {"hidden_dropout", "0.0"},
		// Megatron's --norm-epsilon stores into args.layernorm_epsilon, which TransformerConfig reads
		// (megatron_3bec9aa9.json). Primus's model yamls carry a norm_epsilon key that nothing reads;
		// it gets the same value so the file does not show a stale one.
		{"layernorm_epsilon", fl(m.NormEps)}, {"norm_epsilon", fl(m.NormEps)}, {"init_method_std", fl(m.InitStd)},
	}
	if scaled {
		o = append(o, Override{"rope_scaling_factor", fl(scale)})
	}
	if p.WindowActive() {
		// Not a key of Primus's configs: it reaches Megatron through the patched yaml.
		o = append(o, Override{"window_size", fmt.Sprintf("[%d, 0]", m.SlidingWindow)})
	}
	o = append(o,
		Override{"tokenizer_type", "HuggingFaceTokenizer"}, Override{"tokenizer_model", p.TokenizerPath},
		Override{"make_vocab_size_divisible_by", i(div)}, // the embedding is config.json's vocab_size
		Override{"mock_data", "False"}, Override{"train_data_path", p.DataPrefix},
		Override{"data_cache_path", p.DataCacheDir}, Override{"seq_length", i(f.SL)},
		Override{"seed", i(f.Seed)}, Override{"micro_batch_size", i(f.MBS)}, Override{"global_batch_size", i(f.GBS)},
		Override{"train_iters", i(f.TrainIters)}, Override{"lr", fl(f.LR)}, Override{"min_lr", fl(f.MinLR)},
		Override{"lr_decay_style", "cosine"}, Override{"lr_warmup_iters", i(f.WarmupSteps)},
		Override{"lr_decay_iters", i(f.TrainIters)}, Override{"weight_decay", fl(f.WeightDecay)},
		Override{"adam_beta1", fl(f.Beta1)}, Override{"adam_beta2", fl(f.Beta2)},
		Override{"adam_eps", fl(p.AdamEpsilon())}, Override{"clip_grad", fl(core.ClipGrad)},
		Override{"tensor_model_parallel_size", i(f.TP)}, Override{"pipeline_model_parallel_size", i(f.PP)},
		Override{"sequence_parallel", pyBool(p.SequenceParallel())},
		// The fairness settings (core.Fairness), in place of the stock experiment's choices.
		Override{"use_distributed_optimizer", pyBool(st.DistributedOptimizer)},
		Override{"overlap_grad_reduce", pyBool(st.OverlapGradReduce)},
		Override{"overlap_param_gather", pyBool(st.OverlapParamGather)},
		Override{"grad_reduce_in_bf16", pyBool(st.GradReduceInBF16)},
		Override{"recompute_granularity", pyStrOrNone(st.Recompute)},
		Override{"eod_mask_loss", pyBool(st.EODMaskLoss)},
		Override{"attention_backend", st.AttentionBackend},
		Override{"gradient_accumulation_fusion", pyBool(st.GradAccumFusion)},
		Override{"masked_softmax_fusion", pyBool(st.MaskedSoftmaxFusion)},
		Override{"bias_swiglu_fusion", pyBool(st.BiasSwiGLUFusion)},
		Override{"apply_rope_fusion", pyBool(st.RopeFusion)},
		Override{"bias_dropout_fusion", pyBool(st.BiasDropoutFusion)},
		Override{"cross_entropy_loss_fusion", pyBool(st.CrossEntropyFusion)},
		Override{"dataloader_type", st.DataloaderType},
		Override{"num_workers", i(st.NumWorkers)},
		Override{"enable_primus_turbo", pyBool(st.PrimusTurbo)},
	)
	turbo, err := turboOverrides(pf, st.PrimusTurbo)
	if err != nil {
		return nil, err
	}
	o = append(o, turbo...)
	o = append(o,
		Override{"rerun_mode", st.RerunMode},
		Override{"attention_softmax_in_fp32", pyBool(st.AttentionSoftmaxInFP32)},
	)
	switch f.Precision {
	case core.BF16:
		o = append(o, Override{"bf16", "True"}, Override{"fp8", "None"})
	case core.FP8:
		// trainer_base.yaml already sets fp8_amax_compute_algo "max", the value every framework uses.
		o = append(o, Override{"bf16", "True"}, Override{"fp8", "hybrid"}, Override{"fp8_recipe", "delayed"},
			Override{"fp8_amax_history_len", "1024"})
	case core.FP32:
		o = append(o, Override{"bf16", "False"}, Override{"fp8", "None"})
	default:
		return nil, fmt.Errorf("prim: precision %q: want bf16, fp8 or fp32", f.Precision)
	}
	// No checkpoints: a run never resumes or saves.
	o = append(o, Override{"auto_continue_train", "False"}, Override{"finetune", "False"},
		Override{"save", "None"}, Override{"load", "None"}, Override{"disable_last_saving", "True"})
	o = append(o, Override{"eval_iters", "0"}, Override{"eval_interval", i(f.TrainIters)},
		Override{"log_interval", "1"}, Override{"log_throughput", "True"})
	if f.Profile {
		ranks := make([]string, len(f.ProfileRanks))
		for k, r := range f.ProfileRanks {
			ranks[k] = i(r)
		}
		// Primus points tensorboard_dir (where the profiler writes its traces) at the experiment's
		// own folder whatever is set; Build links that folder to OutputDir/profile.
		o = append(o, Override{"profile", "True"}, Override{"use_pytorch_profiler", "True"},
			Override{"profile_step_start", i(f.ProfileStepStart)}, Override{"profile_step_end", i(f.ProfileStepEnd)},
			Override{"profile_ranks", "[" + strings.Join(ranks, ",") + "]"})
		// Plain JSON traces on every stack: v26.5.1 gzips them by default, v26.2 did not.
		if d, ok := pf.Module["torch_profiler_use_gzip"]; ok && d != false {
			o = append(o, Override{"torch_profiler_use_gzip", "False"})
		}
	} else {
		o = append(o, Override{"profile", "False"})
	}
	return o, nil
}

// primusOf returns the facts of the Primus release a stack pins.
func primusOf(stack string) (*facts.Primus, error) {
	pin, err := core.PinFor(hw.PlatformAMD, stack)
	if err != nil {
		return nil, err
	}
	if pin.Primus == "" {
		return nil, fmt.Errorf("prim: the AMD image %s (%s stack) pins no Primus release", pin.Image, pin.Stack)
	}
	return facts.PrimusAt(pin.Primus)
}

// knownKeys refuses an experiment with a pre_trainer key that the stack's Primus (module or model
// config) and Megatron-LM do not define: a name an earlier release had, which a later one ignores or,
// for Turbo's renamed switches, stops on.
func knownKeys(p core.Plan, pf *facts.Primus, stock facts.EXP, set []Override) error {
	pin, err := p.Pin()
	if err != nil {
		return err
	}
	mg, err := facts.MegatronAt(pin.MegatronCommit)
	if err != nil {
		return err
	}
	model := stock.PreTrainer["model"]
	var unknown []string
	check := func(k string) {
		if !pf.KnownKey(k, model, mg) && !slices.Contains(unknown, k) {
			unknown = append(unknown, k)
		}
	}
	for _, kv := range stock.Overrides {
		k, _ := kv[0].(string)
		check(k)
	}
	for _, o := range set {
		check(o.Key)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("prim: Primus %s (model %s) and Megatron-LM %s define no pre_trainer key %s: renamed or removed in this release?",
			pf.Tag, model, pin.MegatronCommit[:8], strings.Join(unknown, ", "))
	}
	return nil
}

// turboSwitch is one of Primus Turbo's per-kernel switches, by every name Primus releases gave it,
// newest first.
type turboSwitch struct {
	names []string
	// follow: set to core.Fairness.PrimusTurbo; otherwise always off.
	follow bool
	// optional: written only where the release defines one of the names.
	optional bool
}

// turboSwitches are the switches Rival's Turbo setting decides (docs/frameworks.md, "Moving to a new
// release"): Turbo attention and the grouped (MoE) GEMM follow it; the dense GEMM stays off. Primus
// v26.4 renamed use_turbo_grouped_mlp and use_turbo_parallel_linear, and v26.5.1 stops a run that
// sets an old name, so each switch is written under the name the pinned release's module config
// defines. v26.2's dense switch (use_turbo_parallel_linear) was never written, and stays unwritten.
var turboSwitches = []turboSwitch{
	{names: []string{"use_turbo_attention"}, follow: true},
	{names: []string{"use_turbo_grouped_gemm", "use_turbo_grouped_mlp"}, follow: true},
	{names: []string{"use_turbo_gemm"}, optional: true},
}

// turboOverrides names the Turbo switches as the release pf defines them.
func turboOverrides(pf *facts.Primus, on bool) ([]Override, error) {
	var o []Override
	for _, s := range turboSwitches {
		name := ""
		for _, n := range s.names {
			if _, ok := pf.Module[n]; ok {
				name = n
				break
			}
		}
		if name == "" {
			if s.optional {
				continue
			}
			return nil, fmt.Errorf("prim: Primus %s's module config defines none of %s: name its Turbo switch in prim.turboSwitches",
				pf.Tag, strings.Join(s.names, ", "))
		}
		o = append(o, Override{name, pyBool(s.follow && on)})
	}
	return o, nil
}

// PatchedName is where the run's experiment file is written, relative to the run's OutputDir.
func PatchedName(family string) string { return "primus/" + family + "-exp.yaml" }

// Experiment root keys Rival sets: Primus keeps its outputs under workspace/work_group/user_name/
// exp_name, and points tensorboard_dir at tensorboard/ there.
const (
	workGroup = "rival"
	userName  = "rival"
)

// Build returns the launch of one Primus run.
func Build(p core.Plan) (core.Launch, error) {
	family := p.Model.Name
	if p.Model.Proxy {
		family = p.Model.Base
	}
	stockName, err := StockEXP(p.Model, p.Fair.Precision)
	if err != nil {
		return core.Launch{}, err
	}
	pf, err := primusOf(p.Stack)
	if err != nil {
		return core.Launch{}, err
	}
	if !pf.HasEXP(stockName) {
		return core.Launch{}, fmt.Errorf("prim: Primus %s ships no %s under %s", pf.Tag, stockName, pf.EXPDir)
	}
	stock, err := pf.Stock(stockName)
	if err != nil {
		return core.Launch{}, err
	}
	stockPath := path.Join(Dir, pf.EXPDir, stockName)
	src, err := StockYAML(stockName, stock)
	if err != nil {
		return core.Launch{}, err
	}
	all, err := Overrides(p)
	if err != nil {
		return core.Launch{}, err
	}
	if err := knownKeys(p, pf, stock, all); err != nil {
		return core.Launch{}, err
	}
	expName := family + "-pretrain"
	workspace := path.Join(p.OutputDir, "primus")
	root := map[string]string{"work_group": workGroup, "user_name": userName, "exp_name": expName, "workspace": workspace}
	patched, err := Patch(stockPath, src, root, all)
	if err != nil {
		return core.Launch{}, err
	}
	name := PatchedName(family)
	env := map[string]string{
		"EXP":       path.Join(p.OutputDir, name),
		"TRAIN_LOG": path.Join(p.OutputDir, "primus-train.log"),
		// run_pretrain.sh and prepare.py pip-install on every run; the image has installed all of it
		// (amd.Dockerfile), so pip must find everything installed and never reach for an index.
		"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
		"HF_HUB_OFFLINE": "1",
	}
	// Primus hands Megatron attention_backend as the YAML string, which matches no AttnBackend member,
	// so Megatron sets none of Transformer Engine's backend switches and the environment decides;
	// they are set here as Megatron sets them for core.Fairness.AttentionBackend.
	nv, err := NVTEBackend(core.Fairness.AttentionBackend)
	if err != nil {
		return core.Launch{}, err
	}
	maps.Copy(env, nv)
	// run_pretrain.sh reads NNODES, GPUS_PER_NODE, NODE_RANK, MASTER_ADDR and MASTER_PORT from its
	// environment; the executor sets them for each node (Rendezvous).
	cmd := []string{"bash", Script}
	if p.Fair.Profile {
		// Primus sets tensorboard_dir to <workspace>/<work_group>/<user_name>/<exp_name>/tensorboard,
		// where the profiler writes its traces: link it to OutputDir/profile before the run starts.
		expRoot := path.Join(workspace, workGroup, userName, expName)
		cmd = []string{"bash", "-c", `mkdir -p "$1" "$2" && ln -sfn "$1" "$2/tensorboard" && exec bash "$0"`,
			Script, path.Join(p.OutputDir, "profile"), expRoot}
	}
	l := core.Launch{
		Framework: core.Prim, Command: cmd, Env: env, WorkDir: Dir, FrameworkVersion: Version(p.Stack),
		Files: map[string][]byte{name: patched}, Rendezvous: Rendezvous(p),
	}
	if p.Fair.EvalIntervalSamples > 0 {
		l.NoEvaluation = NoEvaluation
	}
	return l, nil
}

// NoEvaluation is why a prim launch does not evaluate the held-out set (core.Launch.NoEvaluation).
const NoEvaluation = "not evaluated: prim launches run Primus's primus/cli/main.py through run_pretrain.sh, where Rival has no runner to hand Megatron's validation the held-out set, and Primus v26.2's primus_evaluate neither reduces the loss over data-parallel ranks nor reads Megatron's two-element loss; this run's held-out loss is not comparable and none is recorded"

// StockYAML writes a stock experiment from the facts as the yaml Primus reads, headed by a comment
// naming it (StockComment). Floats are written with a dot, strings quoted, so SafeLoader reads back
// the values the stock file has.
func StockYAML(name string, e facts.EXP) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode, HeadComment: StockComment + name + "\nwith the run's settings under modules.pre_trainer.overrides"}
	add := func(m *yaml.Node, k string, v *yaml.Node) {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, v)
	}
	for _, k := range []string{"work_group", "user_name", "exp_name", "workspace"} {
		v, ok := e.Root[k]
		if !ok {
			return nil, fmt.Errorf("prim: stock experiment %s has no root key %s", name, k)
		}
		n, err := valueNode(v)
		if err != nil {
			return nil, fmt.Errorf("prim: stock experiment %s, %s: %w", name, k, err)
		}
		add(doc, k, n)
	}
	pt := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range []string{"framework", "config", "model"} {
		v, ok := e.PreTrainer[k]
		if !ok {
			return nil, fmt.Errorf("prim: stock experiment %s has no modules.pre_trainer.%s", name, k)
		}
		add(pt, k, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v})
	}
	ov := &yaml.Node{Kind: yaml.MappingNode}
	for _, kv := range e.Overrides {
		k, _ := kv[0].(string)
		n, err := valueNode(kv[1])
		if err != nil {
			return nil, fmt.Errorf("prim: stock experiment %s, override %s: %w", name, k, err)
		}
		add(ov, k, n)
	}
	add(pt, "overrides", ov)
	mods := &yaml.Node{Kind: yaml.MappingNode}
	add(mods, "pre_trainer", pt)
	add(doc, "modules", mods)
	out, err := yaml.Marshal(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{doc}})
	if err != nil {
		return nil, fmt.Errorf("prim: write stock experiment %s: %w", name, err)
	}
	return out, nil
}

func valueNode(v any) (*yaml.Node, error) {
	sc := func(tag, s string, style yaml.Style) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: s, Style: style}
	}
	switch x := v.(type) {
	case nil:
		return sc("!!null", "null", 0), nil
	case bool:
		return sc("!!bool", strconv.FormatBool(x), 0), nil
	case int64:
		return sc("!!int", strconv.FormatInt(x, 10), 0), nil
	case float64:
		return sc("!!float", pyFloat(x), 0), nil
	case string:
		return sc("!!str", x, yaml.DoubleQuotedStyle), nil
	case []any:
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, e := range x {
			n, err := valueNode(e)
			if err != nil {
				return nil, err
			}
			seq.Content = append(seq.Content, n)
		}
		return seq, nil
	}
	return nil, fmt.Errorf("value %v of type %T", v, v)
}

// Rendezvous is what examples/run_pretrain.sh needs to know about the nodes: the layout, read from
// its environment.
func Rendezvous(p core.Plan) core.Rendezvous {
	return core.Rendezvous{NNodes: p.NNodes, GPUsPerNode: p.GPUsPerNode, Env: true}
}

// NVTEBackend is what Megatron's LanguageModule._set_attention_backend sets in the environment for
// an attention backend: Transformer Engine's flash, fused and unfused switches.
func NVTEBackend(backend string) (map[string]string, error) {
	bits, ok := map[string][3]string{"auto": {"1", "1", "1"}, "flash": {"1", "0", "0"}, "fused": {"0", "1", "0"},
		"unfused": {"0", "0", "1"}, "local": {"0", "0", "0"}}[backend]
	if !ok {
		return nil, fmt.Errorf("prim: attention backend %q is not one of auto, flash, fused, unfused, local", backend)
	}
	return map[string]string{"NVTE_FLASH_ATTN": bits[0], "NVTE_FUSED_ATTN": bits[1], "NVTE_UNFUSED_ATTN": bits[2]}, nil
}
