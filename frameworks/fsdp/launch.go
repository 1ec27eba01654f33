package fsdp

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strconv"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/models"
)

// Launchers for runs of more than one process.
const (
	LauncherTorchrun = "torchrun" // torchrun (or Python -m torch.distributed.run), one node or many
	LauncherSpawn    = "spawn"    // the script starts its own workers: one node only, any torch version
)

// Rendezvous stores for one-node torchrun launches (Config.Rendezvous).
const (
	// RendezvousStandalone is torchrun --standalone: a c10d rendezvous on a TCPStore at a free local port.
	RendezvousStandalone = "standalone"
	// RendezvousFile is torchrun's c10d rendezvous on a FileStore, the file RendezvousStoreName in
	// the run's working directory, with the libuv TCPStore turned off (USE_LIBUV=0,
	// TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1) and the workers' store on 127.0.0.1. It needs no
	// resolvable hostname and no libuv, so it starts where --standalone cannot: torch builds without
	// libuv (Debian's torch 2.6) and containers without a network.
	RendezvousFile = "file"
)

// RendezvousStoreName is the FileStore's file in the working directory for RendezvousFile; torch
// removes it when the last process closes it.
const RendezvousStoreName = "torchrun-rdzv.store"

// fileStoreWrapper runs "$@" (torchrun) and removes the store file $1 when it ends.
const fileStoreWrapper = `store="$1"; shift; "$@" & pid=$!; trap 'kill -TERM $pid 2>/dev/null' INT TERM; ` +
	`while :; do wait $pid; rc=$?; kill -0 $pid 2>/dev/null || break; done; rm -f "$store"; exit $rc`

// TorchrunLogDir is the folder in the working directory where RendezvousFile launches have torchrun
// keep its per-attempt folders, which it otherwise makes in the temporary directory and never removes.
const TorchrunLogDir = "torchrun-logs"

// DefaultPython is the interpreter used when Config.Python is empty: Debian's, which python3-torch serves.
const DefaultPython = "/usr/bin/python3"

// Config is one fsdp run: the model shape, the fair training configuration and the process layout.
// Field comments give the config.env key where there is one.
type Config struct {
	Python   string // interpreter; empty: DefaultPython
	Torchrun string // torchrun executable for multi-process runs; empty: Python -m torch.distributed.run
	// Launcher for more than one process: LauncherTorchrun or LauncherSpawn; empty: torchrun on GPUs or
	// several nodes, spawn for CPU runs on one node (their torch is Debian's 1.13, whose torchrun
	// cannot start under Python 3.11).
	Launcher string
	// Rendezvous for one-node torchrun launches: RendezvousStandalone or RendezvousFile; empty:
	// standalone. Several nodes always meet at MasterAddr:MasterPort.
	Rendezvous string
	ScriptPath string // where the caller wrote Script(); required
	WorkDir    string // working directory; empty: the script's directory
	DataPrefix string // Megatron dataset path without .bin/.idx; required
	// OrderDir is the folder holding the run's sample order (gptorder's .npy files for the dataset,
	// SEED, SL and TRAIN_ITERS × GBS samples), which Rival writes before training; required.
	OrderDir string
	// EvalPrefix is the held-out set Rival writes (core.HeldOutName), EvalSamples its sequences and
	// EvalInterval the iterations between evaluations; EvalInterval 0: no evaluation.
	EvalPrefix                string
	EvalSamples, EvalInterval int

	// Model shape (the model registry's values).
	Layers, Hidden, FFN, Heads, KVHeads, Vocab int
	RopeTheta                                  float64
	RopeScaling                                *models.RopeScaling // Llama 3 scaling; nil: plain RoPE
	QKVBias                                    bool                // Qwen 2.5
	NormEps                                    float64             // 0: the script's default 1e-5
	InitStd                                    float64             // 0: the script's default 0.02
	Window                                     int                 // sliding attention window (Mistral); 0: full causal
	TieEmbeddings                              bool                // the output layer shares the embedding matrix
	MaxPositions                               int                 // the model's position limit; 0: unchecked

	SeqLen      int     // SL
	MicroBatch  int     // MBS
	GradAccum   int     // GA
	TrainIters  int     // TRAIN_ITERS
	LR          float64 // LR, the peak after warmup
	MinLR       float64 // cosine floor; 0 selects the rule MinLR = LR/10, written out explicitly
	WarmupSteps int     // WARMUP_STEPS
	WeightDecay float64 // WEIGHT_DECAY
	Beta1       float64 // BETA1
	Beta2       float64 // BETA2
	AdamEps     float64 // AdamW ε; 0: the script's default 1e-8
	Seed        int64   // SEED
	Precision   string  // PRECISION: "bf16" or "fp32"; empty: bf16 on GPUs, fp32 on CPU
	Attention   string  // "auto" (FlexAttention for a window on GPUs, else SDPA when torch has it), "sdpa", "flex" or "manual"; empty: auto
	Compile     bool    // torch.compile (torch >= 2.0)
	LogInterval int     // iterations per log line; 0: 1
	Threads     int     // CPU threads per process; 0: the machine's cores shared by local ranks

	// Process layout. FSDP is data parallel only: TP and PP must be 1 (or 0, read as 1).
	GPUsPerNode  int    // detected GPUs per node; 0: a CPU run
	NProcPerNode int    // processes per node; 0: GPUsPerNode, or 1 on CPU
	NNodes       int    // 0: 1
	NodeRank     int    // this node's rank, for NNodes > 1
	MasterAddr   string // rendezvous host, required for NNodes > 1
	MasterPort   int    // rendezvous port for NNodes > 1; 0: 29500
	TP, PP, DP   int    // DP 0: the world size, else it must equal NProcPerNode × NNodes
}

// Launch is the exact command that runs one fsdp benchmark.
type Launch struct {
	Command []string          // argv, Command[0] the executable
	Env     map[string]string // added to the caller's environment
	WorkDir string
}

// BuildLaunch validates cfg and returns the command that runs it: `python3 train.py ...` for one
// process; for more, torchrun (or `python3 -m torch.distributed.run`, which every torch from 1.10 on
// has) or `python3 train.py ... --nproc-per-node N` (LauncherSpawn).
func BuildLaunch(cfg Config) (Launch, error) {
	c, err := normalize(cfg)
	if err != nil {
		return Launch{}, err
	}
	world := c.NProcPerNode * c.NNodes
	script := scriptArgs(c)
	var cmd []string
	switch {
	case world == 1:
		cmd = append([]string{c.Python, c.ScriptPath}, script...)
	case c.Launcher == LauncherSpawn:
		cmd = append([]string{c.Python, c.ScriptPath}, script...)
		cmd = append(cmd, "--nproc-per-node", strconv.Itoa(c.NProcPerNode))
	default:
		if c.Torchrun != "" {
			cmd = []string{c.Torchrun}
		} else {
			cmd = []string{c.Python, "-m", "torch.distributed.run"}
		}
		switch {
		case c.NNodes == 1 && c.Rendezvous == RendezvousFile:
			// A FileStore in the run's own folder: concurrent runs do not collide either.
			cmd = append(cmd, "--nnodes=1", "--rdzv-backend=c10d",
				"--rdzv-endpoint="+path.Join(c.WorkDir, RendezvousStoreName), "--rdzv-conf=store_type=file",
				"--local-addr=127.0.0.1", "--log-dir="+path.Join(c.WorkDir, TorchrunLogDir))
		case c.NNodes == 1:
			// --standalone: a local rendezvous on a free port, so concurrent runs do not collide.
			cmd = append(cmd, "--standalone", "--nnodes=1")
		default:
			cmd = append(cmd, "--nnodes="+strconv.Itoa(c.NNodes), "--node_rank="+strconv.Itoa(c.NodeRank),
				"--master_addr="+c.MasterAddr, "--master_port="+strconv.Itoa(c.MasterPort))
		}
		cmd = append(cmd, "--nproc_per_node="+strconv.Itoa(c.NProcPerNode), c.ScriptPath)
		cmd = append(cmd, script...)
		if c.NNodes == 1 && c.Rendezvous == RendezvousFile {
			// torch leaves the FileStore's file behind; a shell around torchrun removes it
			// however torchrun ends, passing on INT and TERM and torchrun's exit status.
			cmd = append([]string{"sh", "-c", fileStoreWrapper, "sh", path.Join(c.WorkDir, RendezvousStoreName)}, cmd...)
		}
	}
	env := map[string]string{
		"PYTHONUNBUFFERED": "1",
		// Python's hash seed too, so that "seed everywhere" includes set and dict iteration order.
		"PYTHONHASHSEED": strconv.FormatInt(c.Seed, 10),
	}
	if c.Launcher == LauncherTorchrun && c.NNodes == 1 && c.Rendezvous == RendezvousFile && world > 1 {
		// torchrun's TCPStore for the workers' env:// rendezvous would ask for libuv; the workers
		// open their own on 127.0.0.1 instead of sharing the agent's.
		env["USE_LIBUV"] = "0"
		env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
	}
	if c.Threads > 0 {
		env["OMP_NUM_THREADS"] = strconv.Itoa(c.Threads)
	}
	return Launch{Command: cmd, Env: env, WorkDir: c.WorkDir}, nil
}

// CheckLaunch is the preflight of cfg's launch: the script with the run's own arguments and --check,
// as one process with WORLD_SIZE set to the run's world. It builds the decoder on the meta device, AdamW
// over the parameter groups training builds and the learning rates the training loop sets, prints the
// effective configuration ("preflight effective: {json}", frameworks/effective) and "preflight ok: ...",
// and needs neither GPUs nor the dataset.
func CheckLaunch(cfg Config) (Launch, error) {
	c, err := normalize(cfg)
	if err != nil {
		return Launch{}, err
	}
	cmd := append(append([]string{c.Python, c.ScriptPath}, scriptArgs(c)...), "--check")
	env := map[string]string{
		"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": strconv.FormatInt(c.Seed, 10),
		"WORLD_SIZE": strconv.Itoa(c.NProcPerNode * c.NNodes),
	}
	if c.Threads > 0 {
		env["OMP_NUM_THREADS"] = strconv.Itoa(c.Threads)
	}
	return Launch{Command: cmd, Env: env, WorkDir: c.WorkDir}, nil
}

func scriptArgs(c Config) []string {
	i := strconv.Itoa
	// 12 significant digits: exact for any value a person writes, and LR/10 prints as 3e-05, not 2.9999999999999997e-05.
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 12, 64) }
	args := []string{
		"--data-prefix", c.DataPrefix, "--order-dir", c.OrderDir,
		"--layers", i(c.Layers), "--hidden", i(c.Hidden), "--ffn", i(c.FFN),
		"--heads", i(c.Heads), "--kv-heads", i(c.KVHeads), "--vocab", i(c.Vocab),
		"--rope-theta", f(c.RopeTheta),
	}
	if r := c.RopeScaling; r != nil {
		args = append(args, "--rope-scaling-factor", f(r.Factor), "--rope-scaling-low-freq-factor", f(r.LowFreqFactor),
			"--rope-scaling-high-freq-factor", f(r.HighFreqFactor), "--rope-scaling-original-positions", i(r.OriginalPositions))
	}
	if c.QKVBias {
		args = append(args, "--qkv-bias")
	}
	if c.NormEps > 0 {
		args = append(args, "--norm-eps", f(c.NormEps))
	}
	if c.InitStd > 0 {
		args = append(args, "--init-std", f(c.InitStd))
	}
	if c.Window > 0 {
		args = append(args, "--window", i(c.Window))
	}
	if c.TieEmbeddings {
		args = append(args, "--tie-embeddings")
	}
	args = append(args,
		"--seq-len", i(c.SeqLen), "--micro-batch", i(c.MicroBatch), "--grad-accum", i(c.GradAccum),
		"--train-iters", i(c.TrainIters), "--lr", f(c.LR), "--min-lr", f(c.MinLR),
		"--warmup-steps", i(c.WarmupSteps), "--weight-decay", f(c.WeightDecay),
		"--beta1", f(c.Beta1), "--beta2", f(c.Beta2),
	)
	if c.AdamEps > 0 {
		args = append(args, "--adam-eps", f(c.AdamEps))
	}
	args = append(args, "--seed", strconv.FormatInt(c.Seed, 10),
		"--precision", c.Precision, "--attention", c.Attention, "--log-interval", i(c.LogInterval),
	)
	if c.Threads > 0 {
		args = append(args, "--threads", i(c.Threads))
	}
	if c.EvalInterval > 0 {
		args = append(args, "--eval-prefix", c.EvalPrefix, "--eval-samples", i(c.EvalSamples), "--eval-interval", i(c.EvalInterval))
	}
	if c.Compile {
		args = append(args, "--compile")
	}
	return args
}

// normalize fills defaults and checks every field, naming the field (and its config.env key) on error.
func normalize(c Config) (Config, error) {
	if c.Python == "" {
		c.Python = DefaultPython
	}
	if c.ScriptPath == "" {
		return c, errors.New("fsdp: ScriptPath is empty: write Script() to a file and pass its path")
	}
	if c.WorkDir == "" {
		c.WorkDir = filepath.Dir(c.ScriptPath)
	}
	if c.DataPrefix == "" {
		return c, errors.New("fsdp: DataPrefix is empty: pass the encoded dataset's path without .bin/.idx")
	}
	if c.OrderDir == "" {
		return c, errors.New("fsdp: OrderDir is empty: pass the folder where the run's sample order is written (gptorder)")
	}
	if c.EvalInterval < 0 || c.EvalInterval > 0 && (c.EvalPrefix == "" || c.EvalSamples < 1) {
		return c, fmt.Errorf("fsdp: evaluation every %d iterations needs EvalPrefix (the held-out set) and EvalSamples >= 1 (EVAL_SAMPLES), got %q and %d", c.EvalInterval, c.EvalPrefix, c.EvalSamples)
	}
	for _, p := range []struct {
		name string
		v    int
	}{
		{"Layers", c.Layers}, {"Hidden", c.Hidden}, {"FFN", c.FFN}, {"Heads", c.Heads},
		{"KVHeads", c.KVHeads}, {"Vocab", c.Vocab}, {"SeqLen (SL)", c.SeqLen},
		{"MicroBatch (MBS)", c.MicroBatch}, {"GradAccum (GA)", c.GradAccum},
		{"TrainIters (TRAIN_ITERS)", c.TrainIters},
	} {
		if p.v <= 0 {
			return c, fmt.Errorf("fsdp: %s is %d: it must be > 0", p.name, p.v)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("fsdp: KVHeads %d does not divide Heads %d (grouped-query attention)", c.KVHeads, c.Heads)
	}
	if c.Hidden%c.Heads != 0 || (c.Hidden/c.Heads)%2 != 0 {
		return c, fmt.Errorf("fsdp: Hidden %d does not split into Heads %d heads of even size (rotary embeddings)", c.Hidden, c.Heads)
	}
	if c.RopeTheta <= 0 {
		return c, fmt.Errorf("fsdp: RopeTheta is %g: it must be > 0", c.RopeTheta)
	}
	if r := c.RopeScaling; r != nil && !(r.Factor > 0 && r.LowFreqFactor > 0 && r.HighFreqFactor > r.LowFreqFactor && r.OriginalPositions > 0) {
		return c, fmt.Errorf("fsdp: RopeScaling %s needs factor > 0, 0 < low < high and original positions > 0", r)
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"NormEps", c.NormEps}, {"InitStd", c.InitStd}, {"AdamEps", c.AdamEps}} {
		if !(v.v >= 0 && v.v < 1) {
			return c, fmt.Errorf("fsdp: %s is %g: it must lie in [0, 1) (0: the script's default)", v.name, v.v)
		}
	}
	if c.Window < 0 {
		return c, fmt.Errorf("fsdp: Window is %d: it must be >= 0 (0: full causal attention)", c.Window)
	}
	if c.MaxPositions > 0 && c.SeqLen > c.MaxPositions {
		return c, fmt.Errorf("fsdp: SeqLen (SL) %d exceeds the model's %d positions", c.SeqLen, c.MaxPositions)
	}
	if c.MinLR == 0 {
		c.MinLR = c.LR / 10
	}
	// The fair configuration's own rules, with the messages every framework gives (core.CheckFair).
	if err := core.CheckFair(core.Fair{
		MBS: c.MicroBatch, SL: c.SeqLen, GA: c.GradAccum, TP: 1, PP: 1, TrainIters: c.TrainIters,
		WarmupSteps: c.WarmupSteps, LR: c.LR, MinLR: c.MinLR, WeightDecay: c.WeightDecay,
		Beta1: c.Beta1, Beta2: c.Beta2, Precision: core.BF16, // the trainer checks its own seed range and precisions below
	}); err != nil {
		return c, fmt.Errorf("fsdp: %w", err)
	}
	if c.Seed < 0 || c.Seed > 1<<32-1 {
		return c, fmt.Errorf("fsdp: Seed (SEED) %d must lie in [0, 2^32-1] (numpy's and Python's hash seed range)", c.Seed)
	}
	switch c.Precision {
	case "":
		c.Precision = "fp32"
		if c.GPUsPerNode > 0 {
			c.Precision = "bf16"
		}
	case "bf16", "fp32":
	default:
		return c, fmt.Errorf("fsdp: Precision (PRECISION) %q: the fsdp trainer knows bf16 and fp32", c.Precision)
	}
	switch c.Attention {
	case "":
		c.Attention = "auto"
	case "auto", "sdpa", "flex", "manual":
	default:
		return c, fmt.Errorf("fsdp: Attention %q: want auto, sdpa, flex or manual", c.Attention)
	}
	if c.LogInterval < 0 {
		return c, fmt.Errorf("fsdp: LogInterval is %d: it must be >= 0", c.LogInterval)
	}
	if c.LogInterval == 0 {
		c.LogInterval = 1
	}
	if c.Threads < 0 {
		return c, fmt.Errorf("fsdp: Threads is %d: it must be >= 0", c.Threads)
	}
	return layout(c)
}

func layout(c Config) (Config, error) {
	for _, p := range []struct {
		name string
		v    int
	}{{"TP", c.TP}, {"PP", c.PP}} {
		if p.v > 1 {
			return c, fmt.Errorf("fsdp: %s=%d: the fsdp framework is data parallel only; set %s=1 and use DP", p.name, p.v, p.name)
		}
		if p.v < 0 {
			return c, fmt.Errorf("fsdp: %s=%d: it must be >= 1", p.name, p.v)
		}
	}
	if c.GPUsPerNode < 0 || c.NProcPerNode < 0 || c.NNodes < 0 || c.DP < 0 {
		return c, errors.New("fsdp: GPUsPerNode, NProcPerNode, NNodes and DP must be >= 0")
	}
	if c.NProcPerNode == 0 {
		c.NProcPerNode = max(c.GPUsPerNode, 1)
	}
	if c.GPUsPerNode > 0 && c.NProcPerNode > c.GPUsPerNode {
		return c, fmt.Errorf("fsdp: NProcPerNode %d exceeds the %d GPUs per node", c.NProcPerNode, c.GPUsPerNode)
	}
	if c.NNodes == 0 {
		c.NNodes = 1
	}
	world := c.NProcPerNode * c.NNodes
	if c.DP != 0 && c.DP != world {
		return c, fmt.Errorf("fsdp: DP=%d does not match NProcPerNode %d × NNodes %d = %d processes", c.DP, c.NProcPerNode, c.NNodes, world)
	}
	if c.NNodes > 1 {
		if c.MasterAddr == "" {
			return c, fmt.Errorf("fsdp: MasterAddr is empty but NNodes is %d: give the rendezvous host", c.NNodes)
		}
		if c.NodeRank < 0 || c.NodeRank >= c.NNodes {
			return c, fmt.Errorf("fsdp: NodeRank %d must lie in [0, NNodes %d)", c.NodeRank, c.NNodes)
		}
		if c.MasterPort == 0 {
			c.MasterPort = 29500
		}
		if c.MasterPort < 1 || c.MasterPort > 65535 {
			return c, fmt.Errorf("fsdp: MasterPort %d is not a TCP port", c.MasterPort)
		}
	} else if c.NodeRank != 0 {
		return c, fmt.Errorf("fsdp: NodeRank %d given for a single-node run", c.NodeRank)
	}
	switch c.Launcher {
	case "":
		c.Launcher = LauncherSpawn
		if c.GPUsPerNode > 0 || c.NNodes > 1 {
			c.Launcher = LauncherTorchrun
		}
	case LauncherTorchrun:
	case LauncherSpawn:
		if c.NNodes > 1 {
			return c, fmt.Errorf("fsdp: Launcher %q starts workers on one node only, but NNodes is %d: use %q", c.Launcher, c.NNodes, LauncherTorchrun)
		}
	default:
		return c, fmt.Errorf("fsdp: Launcher %q: want %q or %q", c.Launcher, LauncherTorchrun, LauncherSpawn)
	}
	switch c.Rendezvous {
	case "":
		c.Rendezvous = RendezvousStandalone
	case RendezvousStandalone:
	case RendezvousFile:
		if c.NNodes > 1 {
			return c, fmt.Errorf("fsdp: Rendezvous %q is a file in one node's run folder, but NNodes is %d: leave it empty so the nodes meet at MasterAddr", c.Rendezvous, c.NNodes)
		}
		if c.Launcher != LauncherTorchrun {
			return c, fmt.Errorf("fsdp: Rendezvous %q is torchrun's, but Launcher is %q: set Launcher %q", c.Rendezvous, c.Launcher, LauncherTorchrun)
		}
	default:
		return c, fmt.Errorf("fsdp: Rendezvous %q: want %q or %q", c.Rendezvous, RendezvousStandalone, RendezvousFile)
	}
	return c, nil
}
