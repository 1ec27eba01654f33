// Package mega builds Megatron-LM launches: torchrun running pretrain_gpt.py with the model's
// architecture, the fair configuration, the dataset and the logging and profiling knobs as
// arguments. Every argument is checked against the options of the pinned trees' megatron/training/
// arguments.py (frameworks/facts).
package mega

import (
	_ "embed"
	"fmt"
	"math"
	"path"
	"strconv"

	"github.com/rivalbench/rival/frameworks/core"
)

// Script is Megatron-LM's GPT pretraining entry point, at the top of its tree.
const Script = "pretrain_gpt.py"

// Wrapper is Rival's runner of pretrain_gpt.py that evaluates the held-out set (rival_megatron.py's
// doc), written next to the run when the run evaluates.
const Wrapper = "rival_megatron.py"

//go:embed rival_megatron.py
var wrapperPy []byte

// WrapperPy returns rival_megatron.py.
func WrapperPy() []byte { return append([]byte(nil), wrapperPy...) }

// Evaluation is how a mega launch evaluates the held-out set (core.Launch.Evaluation).
const Evaluation = "Megatron-LM's own evaluate() over its GPTDataset of the held-out set, read by rival_megatron.py in order from the first sequence at every evaluation; loss summed over valid tokens and data-parallel ranks"

// DirEnv names the environment variable that, when set in the container, names the Megatron-LM tree to
// run instead of the pinned location.
const DirEnv = "MEGATRON_LM_DIR"

// Dir returns where the plan's pinned image keeps Megatron-LM (core.Pins).
func Dir(p core.Plan) (string, error) {
	pin, err := p.Pin()
	if err != nil {
		return "", fmt.Errorf("mega: no Megatron-LM location known: %w", err)
	}
	return pin.MegatronDir, nil
}

// Version names the pinned Megatron-LM tree of the plan's image.
func Version(p core.Plan) string {
	pin, err := p.Pin()
	if err != nil {
		return ""
	}
	return pin.MegatronVersion()
}

// locate is the shell prologue of every mega launch: it finds pretrain_gpt.py inside the container at
// run time, changes into its tree and runs "$@" with the script inserted after the first $1 launcher
// words. $0 is the pinned directory. When no candidate has the script it names every place it looked
// and exits 2 before torchrun starts.
const locate = `n=$1; shift; pinned=$0; looked=""
for d in "${` + DirEnv + `:-}" "$pinned" "$(python3 -c 'import os, megatron; print(os.path.dirname(os.path.dirname(megatron.__file__)))' 2>/dev/null)"; do
  [ -n "$d" ] || continue
  if [ -f "$d/` + Script + `" ]; then
    cd "$d" || exit 2
    exec "${@:1:$n}" "$d/` + Script + `" "${@:$((n+1))}"
  fi
  looked="$looked $d/` + Script + `"
done
echo "mega: Megatron-LM's ` + Script + ` not found; looked for:${looked:- nothing} (\$` + DirEnv + ` unset or without it, pinned tree $pinned, the imported megatron package's tree); set ` + DirEnv + ` to the Megatron-LM tree in this image" >&2
exit 2`

// Build returns the launch of one Megatron-LM run.
func Build(p core.Plan) (core.Launch, error) {
	dir, err := Dir(p)
	if err != nil {
		return core.Launch{}, err
	}
	args, err := Args(p)
	if err != nil {
		return core.Launch{}, err
	}
	tr := Torchrun(p)
	var files map[string][]byte
	evaluation := ""
	if p.Fair.EvalIntervalSamples > 0 {
		// torchrun runs the wrapper, which runs pretrain_gpt.py (inserted after it by locate).
		tr = append(append(tr, path.Join(p.OutputDir, Wrapper)), HeldOutArgs(p)...)
		files, evaluation = map[string][]byte{Wrapper: WrapperPy()}, Evaluation
	}
	cmd := append([]string{"bash", "-c", locate, dir, core.Int(len(tr))}, tr...)
	cmd = append(cmd, args...)
	return core.Launch{
		Framework: core.Mega, Command: cmd, WorkDir: p.OutputDir, FrameworkVersion: Version(p),
		Files: files, Evaluation: evaluation,
		Env: map[string]string{
			"PYTHONUNBUFFERED": "1",
			// Megatron asserts this when tensor or sequence parallel communication overlaps compute.
			"CUDA_DEVICE_MAX_CONNECTIONS": "1",
		},
	}, nil
}

// evalArgs are Megatron's evaluation settings: none, or every held-out sequence once per evaluation
// (eval_iters global batches) every EVAL_INTERVAL_SAMPLES.
func evalArgs(f core.Fair) ([]string, error) {
	if f.EvalIntervalSamples == 0 {
		// No evaluation, no checkpoints: the benchmark measures training steps only.
		return []string{"--eval-iters", "0", "--eval-interval", core.Int(f.TrainIters)}, nil
	}
	iters, interval, err := EvalBatches(f)
	if err != nil {
		return nil, fmt.Errorf("mega: %w", err)
	}
	return []string{"--eval-iters", core.Int(iters), "--eval-interval", core.Int(interval)}, nil
}

// EvalBatches are Megatron's eval_iters and eval_interval for f's held-out evaluation: every
// held-out sequence once (EVAL_SAMPLES / GBS global batches) every EVAL_INTERVAL_SAMPLES / GBS
// iterations. Megatron's evaluation (and Megatron-Bridge's) reads whole global batches, so both
// must be multiples of GBS.
func EvalBatches(f core.Fair) (iters, interval int, err error) {
	if f.GBS <= 0 || f.EvalSamples%f.GBS != 0 || f.EvalIntervalSamples%f.GBS != 0 {
		return 0, 0, fmt.Errorf("EVAL_SAMPLES %d and EVAL_INTERVAL_SAMPLES %d must be multiples of the global batch %d: Megatron's evaluation reads whole global batches, so it reads every held-out sequence exactly once only when EVAL_SAMPLES is one (try EVAL_SAMPLES %d)",
			f.EvalSamples, f.EvalIntervalSamples, f.GBS, max(f.GBS, f.EvalSamples/max(f.GBS, 1)*f.GBS))
	}
	return f.EvalSamples / f.GBS, f.EvalIntervalSamples / f.GBS, nil
}

// HeldOutArgs are rival_megatron.py's arguments naming the plan's held-out set.
func HeldOutArgs(p core.Plan) []string {
	return []string{"--held-out", p.HeldOutPath(), "--held-out-samples", core.Int(p.Fair.EvalSamples)}
}

// Torchrun returns the launcher prefix: a standalone rendezvous on one node; on several nodes torchrun
// reads the node rank and master address from PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT,
// which the scheduler sets per node.
func Torchrun(p core.Plan) []string {
	cmd := []string{"torchrun"}
	if p.NNodes == 1 {
		cmd = append(cmd, "--standalone", "--nnodes=1")
	} else {
		cmd = append(cmd, "--nnodes="+core.Int(p.NNodes))
	}
	return append(cmd, "--nproc_per_node="+core.Int(p.GPUsPerNode))
}

// RotaryBase returns the rope base as the integer Megatron's --rotary-base (type=int) accepts.
func RotaryBase(theta float64) (string, error) {
	if theta <= 0 || theta != math.Trunc(theta) || theta > math.MaxInt32 {
		return "", fmt.Errorf("mega: rope theta %g is not a positive integer, which Megatron's --rotary-base requires", theta)
	}
	return strconv.FormatInt(int64(theta), 10), nil
}

// Args returns pretrain_gpt.py's arguments for the plan.
func Args(p core.Plan) ([]string, error) {
	m, f := p.Model, p.Fair
	rope, err := RotaryBase(m.RopeTheta)
	if err != nil {
		return nil, err
	}
	scale, scaled, err := p.MegatronRopeFactor("mega")
	if err != nil {
		return nil, err
	}
	div, err := p.VocabDivisor()
	if err != nil {
		return nil, fmt.Errorf("mega: %w", err)
	}
	i, fl := core.Int, core.Float
	a := []string{
		// Architecture: every fact of the model registry's entry (models.Model).
		"--num-layers", i(m.Layers), "--hidden-size", i(m.Hidden), "--ffn-hidden-size", i(m.FFN),
		"--num-attention-heads", i(m.Heads),
		"--group-query-attention", "--num-query-groups", i(m.KVHeads),
		"--position-embedding-type", "rope", "--rotary-base", rope,
		"--max-position-embeddings", i(m.MaxPositions),
		"--normalization", "RMSNorm", "--swiglu",
		"--disable-bias-linear", "--norm-epsilon", core.Float(m.NormEps), "--init-method-std", core.Float(m.InitStd),
	}
	if scaled {
		// gpt_builders.py hands both to GPTModel, whose RotaryEmbedding scales inv_freq.
		a = append(a, "--use-rope-scaling", "--rope-scaling-factor", fl(scale))
	}
	if !m.TiedEmbeddings {
		a = append(a, "--untie-embeddings-and-output-weights")
	}
	if m.QKVBias {
		a = append(a, "--add-qkv-bias")
	}
	if p.WindowActive() {
		a = append(a, "--window-size", fmt.Sprintf("%d,0", m.SlidingWindow))
	}
	// Llama-family models train without dropout; Megatron's default is 0.1 for both.
	a = append(a, "--attention-dropout", "0", "--hidden-dropout", "0")

	// Tokenizer and data.
	a = append(a,
		"--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", p.TokenizerPath,
		"--make-vocab-size-divisible-by", i(div), // the embedding is config.json's vocab_size
		"--data-path", p.DataPrefix, "--split", "100,0,0", "--data-cache-path", p.DataCacheDir,
		"--seq-length", i(f.SL),
	)

	// Fair configuration.
	a = append(a,
		"--seed", i(f.Seed),
		"--micro-batch-size", i(f.MBS), "--global-batch-size", i(f.GBS),
		"--train-iters", i(f.TrainIters),
		"--lr", fl(f.LR), "--min-lr", fl(f.MinLR), "--lr-decay-style", "cosine",
		"--lr-warmup-iters", i(f.WarmupSteps), "--lr-decay-iters", i(f.TrainIters),
		"--weight-decay", fl(f.WeightDecay), "--adam-beta1", fl(f.Beta1), "--adam-beta2", fl(f.Beta2),
		"--adam-eps", fl(p.AdamEpsilon()), "--clip-grad", fl(core.ClipGrad),
		"--tensor-model-parallel-size", i(f.TP), "--pipeline-model-parallel-size", i(f.PP),
	)
	a = append(a, FairnessArgs()...)
	if p.SequenceParallel() {
		a = append(a, "--sequence-parallel")
	}
	switch f.Precision {
	case core.BF16:
		a = append(a, "--bf16")
	case core.FP8:
		// Delayed-scaling hybrid FP8 with the amax settings NeMo's bf16_with_fp8_mixed uses.
		a = append(a, "--bf16", "--fp8-format", "hybrid", "--fp8-recipe", "delayed",
			"--fp8-amax-history-len", "1024", "--fp8-amax-compute-algo", "max")
	case core.FP32:
		// Megatron trains in fp32 unless --bf16 or --fp16 is given.
	default:
		return nil, fmt.Errorf("mega: precision %q: want bf16, fp8 or fp32", f.Precision)
	}

	ev, err := evalArgs(f)
	if err != nil {
		return nil, err
	}
	a = append(a, ev...)

	// Logging: one line per iteration with throughput.
	a = append(a, "--log-interval", "1", "--log-throughput")

	if f.Profile {
		a = append(a, "--profile", "--use-pytorch-profiler",
			"--profile-step-start", i(f.ProfileStepStart), "--profile-step-end", i(f.ProfileStepEnd),
			"--profile-ranks")
		for _, r := range f.ProfileRanks {
			a = append(a, i(r))
		}
		// The PyTorch profiler writes its traces through the TensorBoard handler into this directory.
		a = append(a, "--tensorboard-dir", path.Join(p.OutputDir, "profile"))
	}
	return a, nil
}

// FairnessArgs sets every speed- or loss-relevant setting of core.Fairness explicitly, so Megatron's
// defaults do not decide them.
func FairnessArgs() []string {
	st := core.Fairness
	var a []string
	on := func(b bool, flag string) {
		if b {
			a = append(a, flag)
		}
	}
	off := func(b bool, flag string) {
		if !b {
			a = append(a, flag)
		}
	}
	on(st.DistributedOptimizer, "--use-distributed-optimizer")
	on(st.OverlapGradReduce, "--overlap-grad-reduce")
	on(st.OverlapParamGather, "--overlap-param-gather")
	on(st.GradReduceInBF16, "--grad-reduce-in-bf16")
	if st.Recompute != "" {
		a = append(a, "--recompute-granularity", st.Recompute)
	}
	on(st.EODMaskLoss, "--eod-mask-loss")
	a = append(a, "--attention-backend", st.AttentionBackend)
	off(st.GradAccumFusion, "--no-gradient-accumulation-fusion")
	off(st.MaskedSoftmaxFusion, "--no-masked-softmax-fusion")
	off(st.BiasSwiGLUFusion, "--no-bias-swiglu-fusion")
	off(st.RopeFusion, "--no-rope-fusion")
	off(st.BiasDropoutFusion, "--no-bias-dropout-fusion")
	on(st.CrossEntropyFusion, "--cross-entropy-loss-fusion")
	a = append(a, "--dataloader-type", st.DataloaderType, "--num-workers", core.Int(st.NumWorkers))
	a = append(a, "--rerun-mode", st.RerunMode)
	on(st.AttentionSoftmaxInFP32, "--attention-softmax-in-fp32")
	return a
}
