package fsdp

import (
	"fmt"
	"path"
	"slices"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
)

// Version names the trainer fsdp launches run: Rival's own, embedded in the binary.
func Version() string { return "rival frameworks/fsdp train.py blake3:" + ScriptDigest() }

// Build returns the launch of one fsdp run from a validated plan, as every framework's builder
// does: the model's facts (models.Model: shape, RoPE base, RMSNorm ε, init, QKV bias, sliding window,
// tied embeddings) and the recipe (core.Fair) become train.py's arguments.
func Build(p core.Plan) (core.Launch, error) {
	f, m := p.Fair, p.Model
	if f.Precision == core.FP8 {
		return core.Launch{}, fmt.Errorf("fsdp: PRECISION fp8: the fsdp trainer knows bf16 and fp32")
	}
	if f.Profile {
		return core.Launch{}, fmt.Errorf("fsdp: PROFILE=1: the fsdp trainer has no profiler hooks; set PROFILE=0 for fsdp runs")
	}
	if err := p.CheckRopeScaling("fsdp"); err != nil {
		return core.Launch{}, err
	}
	cfg := Config{
		ScriptPath: path.Join(p.OutputDir, ScriptName), WorkDir: p.OutputDir, DataPrefix: p.DataPrefix,
		OrderDir: p.DataCacheDir, // tasks writes the sample order there (gptorder)
		Layers:   m.Layers, Hidden: m.Hidden, FFN: m.FFN, Heads: m.Heads, KVHeads: m.KVHeads, Vocab: m.Vocab,
		RopeTheta: m.RopeTheta, RopeScaling: m.RopeScaling, QKVBias: m.QKVBias, NormEps: m.NormEps, InitStd: m.InitStd,
		TieEmbeddings: m.TiedEmbeddings, MaxPositions: m.MaxPositions,
		SeqLen: f.SL, MicroBatch: f.MBS, GradAccum: f.GA, TrainIters: f.TrainIters,
		LR: f.LR, MinLR: f.MinLR, WarmupSteps: f.WarmupSteps, WeightDecay: f.WeightDecay,
		Beta1: f.Beta1, Beta2: f.Beta2, AdamEps: p.AdamEpsilon(), Seed: int64(f.Seed), Precision: f.Precision,
		LogInterval: 1, NNodes: p.NNodes, TP: f.TP, PP: f.PP, DP: f.DP,
	}
	if f.EvalIntervalSamples > 0 {
		gbs := f.GBS
		if gbs == 0 && f.TP*f.PP > 0 {
			gbs = f.MBS * f.GA * p.World / (f.TP * f.PP)
		}
		if gbs <= 0 || f.EvalIntervalSamples%gbs != 0 {
			return core.Launch{}, fmt.Errorf("fsdp: EVAL_INTERVAL_SAMPLES %d is not a multiple of the global batch %d", f.EvalIntervalSamples, gbs)
		}
		// tasks writes the held-out set there (training.WriteHeldOut).
		cfg.EvalPrefix = p.HeldOutPath()
		cfg.EvalSamples, cfg.EvalInterval = f.EvalSamples, f.EvalIntervalSamples/gbs
	}
	if p.WindowActive() {
		// At SL ≤ window the window masks nothing, and the trainer keeps the causal kernel.
		cfg.Window = m.SlidingWindow
	}
	if p.NNodes > 1 {
		// The scheduler fills in the rendezvous host per node (slurm.PerNodeArgs
		// rewrites --master_addr); this value only satisfies the launch builder.
		cfg.MasterAddr = "localhost"
	}
	if p.Platform == hw.PlatformCPU {
		cfg.NProcPerNode = p.GPUsPerNode
	} else {
		// The GPU images put their own Python and torchrun first on PATH.
		cfg.Python, cfg.Torchrun, cfg.GPUsPerNode = "python3", "torchrun", p.GPUsPerNode
	}
	fl, err := BuildLaunch(cfg)
	if err != nil {
		return core.Launch{}, err
	}
	check, err := CheckLaunch(cfg)
	if err != nil {
		return core.Launch{}, err
	}
	l := core.Launch{
		Framework: core.FSDP, Command: fl.Command, Env: fl.Env, WorkDir: fl.WorkDir,
		Files:             map[string][]byte{ScriptName: Script()},
		EntryScriptDigest: ScriptDigest(), FrameworkVersion: Version(),
	}
	if cfg.EvalInterval > 0 {
		l.Evaluation = Evaluation
	}
	// The trainer's own read-back of what it builds, compared field by field with the workload.
	l.Preflight, err = Preflight(l, check)
	return l, err
}

// Evaluation is how an fsdp launch evaluates the held-out set (core.Launch.Evaluation).
const Evaluation = "fsdp train.py's own evaluation: the same sequences every time, loss summed over tokens and ranks"

// Preflight is the run's own command line and environment as one process that stops after the
// model, optimizer and schedule are built (--check): the script's arguments are taken from the run's
// command after the script, whatever launcher stands before it, so anything the run's command adds
// reaches the check. check supplies the interpreter and the check's own environment (the world
// size, the hash seed).
func Preflight(run core.Launch, check Launch) (*core.Launch, error) {
	script := check.Command[1]
	at := slices.Index(run.Command, script)
	if at < 0 {
		return nil, fmt.Errorf("fsdp: the run's command does not run %s: %v", script, run.Command)
	}
	cmd := append(append([]string{check.Command[0], script}, run.Command[at+1:]...), "--check")
	env := map[string]string{}
	for k, v := range run.Env {
		env[k] = v
	}
	for k, v := range check.Env {
		env[k] = v
	}
	return &core.Launch{Framework: core.FSDP, Command: cmd, Env: env, WorkDir: check.WorkDir}, nil
}
