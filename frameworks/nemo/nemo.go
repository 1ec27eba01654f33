// Package nemo builds NeMo 2.0 launches (NVIDIA): torchrun running a small embedded entry script that
// takes the model's NeMo recipe (llama31_8b, qwen25_7b, mistral_7b) and sets every parallelism, batch,
// schedule, precision and data field from its arguments, with NeMo's timing and FLOPs callbacks.
package nemo

import (
	_ "embed"
	"encoding/hex"
	"fmt"
	"path"

	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/spec"
	"github.com/zeebo/blake3"
)

// Version is the NeMo source the recipe, data module, callback and plugin names were checked against
// (see docs/frameworks.md).
const Version = "NVIDIA/NeMo (recipes/llama31_8b.py@0a8b017a, recipes/qwen25_7b.py@0e3eb38e, recipes/optim/adam.py@06cca550, recipes/precision/mixed_precision.py@0a07447c, gpt/data/pre_training.py@020a5088, callbacks/flops_callback.py@0240b890, callbacks/pytorch_profiler.py@251add6d)"

//go:embed rival_nemo.py
var script []byte

// ScriptName is the entry script's file name, relative to the run's OutputDir.
const ScriptName = "rival_nemo.py"

// Script returns a copy of the embedded entry script.
func Script() []byte { return append([]byte(nil), script...) }

// ScriptDigest is the BLAKE3 hex digest of Script().
func ScriptDigest() string {
	sum := blake3.Sum256(script)
	return hex.EncodeToString(sum[:])
}

var recipe = map[string]string{"llama": "llama31_8b", "qwen": "qwen25_7b", "mistral": "mistral_7b"}

// Build returns the launch of one NeMo run.
func Build(p spec.Plan) (spec.Launch, error) {
	family := p.Model.Name
	if p.Model.Proxy {
		family = p.Model.Base
	}
	rec, ok := recipe[family]
	if !ok {
		return spec.Launch{}, fmt.Errorf("nemo: no NeMo recipe known for model family %q (known: llama, qwen, mistral)", family)
	}
	rope, err := mega.RotaryBase(p.Model.RopeTheta)
	if err != nil {
		return spec.Launch{}, fmt.Errorf("nemo: %w", err)
	}
	m, f := p.Model, p.Fair
	i, fl := spec.Int, spec.Float
	window := 0
	if p.WindowActive() {
		window = m.SlidingWindow
	}
	qkv, prof := "0", "0"
	if m.QKVBias {
		qkv = "1"
	}
	if f.Profile {
		prof = "1"
	}
	entry := path.Join(p.OutputDir, ScriptName)
	cmd := append(mega.Torchrun(p), entry,
		"--recipe", rec, "--name", "rival-"+m.Name, "--log-dir", path.Join(p.OutputDir, "nemo"),
		"--nodes", i(p.NNodes), "--gpus-per-node", i(p.GPUsPerNode),
		"--layers", i(m.Layers), "--hidden", i(m.Hidden), "--ffn", i(m.FFN), "--heads", i(m.Heads),
		"--kv-heads", i(m.KVHeads), "--rope-base", rope, "--window", i(window), "--qkv-bias", qkv,
		"--data-prefix", p.DataPrefix, "--data-cache", p.DataCacheDir, "--tokenizer", p.TokenizerPath,
		"--seed", i(f.Seed), "--mbs", i(f.MBS), "--gbs", i(f.GBS), "--seq-length", i(f.SL),
		"--tp", i(f.TP), "--pp", i(f.PP), "--train-iters", i(f.TrainIters), "--warmup", i(f.WarmupSteps),
		"--lr", fl(f.LR), "--min-lr", fl(f.MinLR), "--weight-decay", fl(f.WeightDecay),
		"--beta1", fl(f.Beta1), "--beta2", fl(f.Beta2), "--adam-eps", fl(spec.AdamEps), "--clip-grad", fl(spec.ClipGrad),
		"--precision", f.Precision, "--profile", prof,
		"--profile-start", i(f.ProfileStepStart), "--profile-end", i(f.ProfileStepEnd), "--profile-ranks",
	)
	for _, r := range f.ProfileRanks {
		cmd = append(cmd, i(r))
	}
	cmd = append(cmd, "--trace-dir", path.Join(p.OutputDir, "profile"))
	return spec.Launch{
		Framework: spec.Nemo, Command: cmd, WorkDir: p.OutputDir, FrameworkVersion: Version,
		Env: map[string]string{
			"PYTHONUNBUFFERED":            "1",
			"CUDA_DEVICE_MAX_CONNECTIONS": "1",
		},
		Files:             map[string][]byte{ScriptName: Script()},
		EntryScriptDigest: ScriptDigest(),
	}, nil
}
