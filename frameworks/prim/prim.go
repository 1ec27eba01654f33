// Package prim builds Primus launches (AMD): examples/run_pretrain.sh with EXP set to the model's
// experiment yaml shipped in the Primus image and every fair-configuration key as a `--key value`
// override, which Primus applies on top of the yaml. Keys the command line cannot carry are written
// into a patched copy of the EXP yaml (see Patch), which keeps the file's layout and comments.
package prim

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/rivalbench/rival/frameworks/spec"
)

// Version is the Primus source the keys and paths were checked against (see docs/frameworks.md).
const Version = "AMD-AGI/Primus (run_pretrain.sh@0121ab7d, core/launcher/parser.py@0158a866, modules/megatron/trainer_base.yaml@05b350b3, models/megatron/language_model.yaml@0158a866)"

// Dir is where the Primus image keeps Primus; run_pretrain.sh runs from there.
const Dir = "/workspace/Primus"

// Script is Primus's launcher, relative to Dir.
const Script = "examples/run_pretrain.sh"

// exp is the experiment yaml a model family starts from, relative to Dir. Mistral 7B has no Megatron
// experiment in Primus; it shares Llama 3.1 8B's layer shapes, so its launch patches Llama's
// experiment (renamed) and sets the differences (tokenizer, rope base, positions, window) as overrides.
var exp = map[string]struct {
	path    string
	patched string // non-empty: the experiment name of the patched copy
}{
	"llama":   {path: "examples/megatron/configs/MI300X/llama3.1_8B-pretrain.yaml"},
	"qwen":    {path: "examples/megatron/configs/MI300X/qwen2.5_7B-pretrain.yaml"},
	"mistral": {path: "examples/megatron/configs/MI300X/llama3.1_8B-pretrain.yaml", patched: "mistral_7B-pretrain"},
}

// EXP returns the path, relative to Dir, of the experiment yaml the model's launch starts from.
func EXP(family string) (string, error) {
	e, ok := exp[family]
	if !ok {
		return "", fmt.Errorf("prim: no Primus experiment yaml known for model family %q (known: llama, qwen, mistral)", family)
	}
	return e.path, nil
}

// cliKeys are the pre_trainer keys Primus accepts on the command line in Version: parser.py's
// _check_keys_exist rejects any override key the merged module, model and experiment configs do not
// define. Each was found in trainer_base.yaml or language_model.yaml.
var cliKeys = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`
		num_layers hidden_size ffn_hidden_size num_attention_heads group_query_attention num_query_groups
		position_embedding_type rotary_base use_rope_scaling max_position_embeddings normalization swiglu
		untie_embeddings_and_output_weights add_bias_linear add_qkv_bias attention_dropout hidden_dropout
		tokenizer_type tokenizer_model mock_data train_data_path data_cache_path seq_length
		seed micro_batch_size global_batch_size train_iters lr min_lr lr_decay_style lr_warmup_iters
		lr_decay_iters weight_decay adam_beta1 adam_beta2 adam_eps clip_grad
		tensor_model_parallel_size pipeline_model_parallel_size sequence_parallel use_distributed_optimizer
		bf16 fp8 fp8_recipe fp8_amax_history_len eval_iters eval_interval log_interval log_throughput
		profile use_pytorch_profiler profile_step_start profile_step_end profile_ranks tensorboard_dir`) {
		cliKeys[k] = true
	}
}

// Override is one pre_trainer key with its value as the Python literal Primus evaluates.
type Override struct {
	Key   string
	Value string
}

// shellSafe are values that pass run_pretrain.sh's `eval "$CMD"` unchanged.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:,+=-]+$`)

// pyString are string values Primus's override parser keeps as strings: it eval()s every value and
// keeps the text only when eval fails, so a string is safe only if it is not a Python expression. An
// absolute path fails to parse; the identifiers listed are not Python names.
var pyString = regexp.MustCompile(`^/[A-Za-z0-9_./+-]*$`)

var safeIdents = map[string]bool{
	"HuggingFaceTokenizer": true, "cosine": true, "hybrid": true, "delayed": true, "RMSNorm": true, "rope": true,
}

// onCommandLine reports whether the override can be passed as `--key value`: the key must be one
// Primus knows, the value must survive the shell and evaluate to what we mean.
func onCommandLine(o Override) bool {
	if !cliKeys[o.Key] {
		return false
	}
	v := o.Value
	switch {
	case isPyLiteral(v):
		return true
	case strings.HasPrefix(v, "'"):
		return false // a quoted Python string: only the yaml carries it unambiguously
	case safeIdents[v]:
		return true
	default:
		return pyString.MatchString(v) && shellSafe.MatchString(v)
	}
}

var (
	pyNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$`)
	pyList   = regexp.MustCompile(`^\[[0-9]+(,[0-9]+)*\]$`)
)

func isPyLiteral(v string) bool {
	return v == "True" || v == "False" || v == "None" || pyNumber.MatchString(v) || pyList.MatchString(v)
}

// shellWord quotes v for one pass of bash's eval.
func shellWord(v string) string {
	if shellSafe.MatchString(v) {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Overrides returns every key the run sets, in a fixed order.
func Overrides(p spec.Plan) ([]Override, error) {
	m, f := p.Model, p.Fair
	i, fl := spec.Int, spec.Float
	if m.RopeTheta <= 0 || m.RopeTheta != float64(int64(m.RopeTheta)) {
		return nil, fmt.Errorf("prim: rope theta %g is not a positive integer, which Megatron's rotary_base requires", m.RopeTheta)
	}
	o := []Override{
		{"num_layers", i(m.Layers)}, {"hidden_size", i(m.Hidden)}, {"ffn_hidden_size", i(m.FFN)},
		{"num_attention_heads", i(m.Heads)}, {"group_query_attention", "True"}, {"num_query_groups", i(m.KVHeads)},
		{"position_embedding_type", "rope"}, {"rotary_base", fmt.Sprintf("%d", int64(m.RopeTheta))},
		// Rival does not apply Llama 3.1's rope scaling in any framework; Primus's llama3.1 model yaml may.
		{"use_rope_scaling", "False"},
		{"max_position_embeddings", i(m.MaxPositions)}, {"normalization", "RMSNorm"}, {"swiglu", "True"},
		{"untie_embeddings_and_output_weights", "True"}, {"add_bias_linear", "False"},
		{"add_qkv_bias", pyBool(m.QKVBias)}, {"attention_dropout", "0.0"}, {"hidden_dropout", "0.0"},
	}
	if p.WindowActive() {
		// Not a key of Primus's configs: it reaches Megatron through the patched yaml.
		o = append(o, Override{"window_size", fmt.Sprintf("[%d, 0]", m.SlidingWindow)})
	}
	o = append(o,
		Override{"tokenizer_type", "HuggingFaceTokenizer"}, Override{"tokenizer_model", p.TokenizerPath},
		Override{"mock_data", "False"}, Override{"train_data_path", p.DataPrefix},
		Override{"data_cache_path", p.DataCacheDir}, Override{"seq_length", i(f.SL)},
		Override{"seed", i(f.Seed)}, Override{"micro_batch_size", i(f.MBS)}, Override{"global_batch_size", i(f.GBS)},
		Override{"train_iters", i(f.TrainIters)}, Override{"lr", fl(f.LR)}, Override{"min_lr", fl(f.MinLR)},
		Override{"lr_decay_style", "cosine"}, Override{"lr_warmup_iters", i(f.WarmupSteps)},
		Override{"lr_decay_iters", i(f.TrainIters)}, Override{"weight_decay", fl(f.WeightDecay)},
		Override{"adam_beta1", fl(f.Beta1)}, Override{"adam_beta2", fl(f.Beta2)},
		Override{"adam_eps", fl(spec.AdamEps)}, Override{"clip_grad", fl(spec.ClipGrad)},
		Override{"tensor_model_parallel_size", i(f.TP)}, Override{"pipeline_model_parallel_size", i(f.PP)},
		Override{"sequence_parallel", pyBool(p.SequenceParallel())}, Override{"use_distributed_optimizer", "True"},
	)
	switch f.Precision {
	case spec.BF16:
		o = append(o, Override{"bf16", "True"}, Override{"fp8", "None"})
	case spec.FP8:
		// trainer_base.yaml already sets fp8_amax_compute_algo "max", the value every framework uses.
		o = append(o, Override{"bf16", "True"}, Override{"fp8", "hybrid"}, Override{"fp8_recipe", "delayed"},
			Override{"fp8_amax_history_len", "1024"})
	case spec.FP32:
		o = append(o, Override{"bf16", "False"}, Override{"fp8", "None"})
	default:
		return nil, fmt.Errorf("prim: precision %q: want bf16, fp8 or fp32", f.Precision)
	}
	o = append(o, Override{"eval_iters", "0"}, Override{"eval_interval", i(f.TrainIters)},
		Override{"log_interval", "1"}, Override{"log_throughput", "True"})
	if f.Profile {
		ranks := make([]string, len(f.ProfileRanks))
		for k, r := range f.ProfileRanks {
			ranks[k] = i(r)
		}
		o = append(o, Override{"profile", "True"}, Override{"use_pytorch_profiler", "True"},
			Override{"profile_step_start", i(f.ProfileStepStart)}, Override{"profile_step_end", i(f.ProfileStepEnd)},
			Override{"profile_ranks", "[" + strings.Join(ranks, ",") + "]"},
			Override{"tensorboard_dir", path.Join(p.OutputDir, "profile")})
	} else {
		o = append(o, Override{"profile", "False"})
	}
	return o, nil
}

// PatchedName is where the patched EXP yaml is written, relative to the run's OutputDir.
func PatchedName(family string) string { return "primus/" + family + "-exp.yaml" }

// Build returns the launch of one Primus run. stock is the EXP yaml as shipped in the image, read by
// the caller; it is needed only when the launch must patch it (Mistral, a sliding window that masks,
// or a value the command line cannot carry) and an error says so when it is missing.
func Build(p spec.Plan, stock []byte) (spec.Launch, error) {
	family := p.Model.Name
	if p.Model.Proxy {
		family = p.Model.Base
	}
	e, ok := exp[family]
	if !ok {
		return spec.Launch{}, fmt.Errorf("prim: no Primus experiment yaml known for model family %q (known: llama, qwen, mistral)", family)
	}
	all, err := Overrides(p)
	if err != nil {
		return spec.Launch{}, err
	}
	var cli []string
	var toYAML []Override
	for _, o := range all {
		if onCommandLine(o) {
			cli = append(cli, "--"+o.Key, shellWord(o.Value))
		} else {
			toYAML = append(toYAML, o)
		}
	}
	expPath := path.Join(Dir, e.path)
	files := map[string][]byte{}
	if e.patched != "" || len(toYAML) > 0 {
		if len(stock) == 0 {
			keys := make([]string, 0, len(toYAML)+1)
			if e.patched != "" {
				keys = append(keys, "exp_name")
			}
			for _, o := range toYAML {
				keys = append(keys, o.Key)
			}
			return spec.Launch{}, fmt.Errorf("prim: this launch must patch %s (keys %s cannot be passed on run_pretrain.sh's command line): read that file from the Primus image and pass it as Request.StockConfig",
				expPath, strings.Join(keys, ", "))
		}
		root := map[string]string{}
		if e.patched != "" {
			root["exp_name"] = e.patched
		}
		patched, err := Patch(expPath, stock, root, toYAML)
		if err != nil {
			return spec.Launch{}, err
		}
		name := PatchedName(family)
		files[name] = patched
		expPath = path.Join(p.OutputDir, name)
	}
	cmd := append([]string{"bash", Script}, cli...)
	env := map[string]string{
		"EXP":              expPath,
		"TRAIN_LOG":        path.Join(p.OutputDir, "primus-train.log"),
		"PRIMUS_WORKSPACE": path.Join(p.OutputDir, "primus"),
	}
	// run_pretrain.sh reads NNODES, GPUS_PER_NODE, NODE_RANK, MASTER_ADDR and MASTER_PORT from its
	// environment; the executor sets them for each node.
	l := spec.Launch{Framework: spec.Prim, Command: cmd, Env: env, WorkDir: Dir, FrameworkVersion: Version,
		Rendezvous: Rendezvous(p)}
	if len(files) > 0 {
		l.Files = files
	}
	return l, nil
}

// Rendezvous is what examples/run_pretrain.sh needs to know about the nodes: the layout, read from
// its environment.
func Rendezvous(p spec.Plan) spec.Rendezvous {
	return spec.Rendezvous{NNodes: p.NNodes, GPUsPerNode: p.GPUsPerNode, Env: true}
}
