package fsdp

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
)

var update = flag.Bool("update", false, "rewrite the golden launches under testdata/launch/")

func TestScriptDigestMatchesFile(t *testing.T) {
	onDisk, err := os.ReadFile("train.py")
	require.NoError(t, err)
	require.Equal(t, onDisk, Script())
	sum := blake3.Sum256(onDisk)
	assert.Len(t, ScriptDigest(), 64)
	assert.Equal(t, sum[:], mustHex(t, ScriptDigest()))

	// Script returns a copy: a caller that edits it cannot change the digest or the next copy.
	s := Script()
	s[0] ^= 0xff
	assert.Equal(t, onDisk, Script())
}

// llama31 is the fair configuration of config.env on the Llama 3.1 8B shape.
func llama31() Config {
	return Config{
		ScriptPath: "/run/rival/fsdp/train.py", DataPrefix: "/data/rival/llama31/bc_text_document", OrderDir: "/data/rival/cache",
		Layers: 32, Hidden: 4096, FFN: 14336, Heads: 32, KVHeads: 8, Vocab: 128256, RopeTheta: 500000,
		MaxPositions: 131072,
		SeqLen:       2048, MicroBatch: 1, GradAccum: 8, TrainIters: 500, LR: 3e-4, WarmupSteps: 50,
		WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Seed: 42, Precision: "bf16", LogInterval: 1,
		GPUsPerNode: 8, DP: 8, TP: 1, PP: 1,
	}
}

func TestBuildLaunchGolden(t *testing.T) {
	cases := map[string]func() Config{
		"llama31-8b-8gpu": llama31,
		"qwen25-7b-8gpu-compile": func() Config {
			c := llama31()
			c.DataPrefix = "/data/rival/qwen25/bc_text_document"
			c.Layers, c.Hidden, c.FFN, c.Heads, c.KVHeads, c.Vocab = 28, 3584, 18944, 28, 4, 152064
			c.RopeTheta, c.QKVBias, c.NormEps, c.MaxPositions = 1e6, true, 1e-6, 131072
			c.Compile, c.Attention = true, "sdpa"
			return c
		},
		"mistral-7b-2node-torchrun": func() Config {
			c := llama31()
			c.DataPrefix = "/data/rival/mistral/bc_text_document"
			c.Vocab, c.RopeTheta, c.MaxPositions = 32000, 1e4, 32768
			c.NNodes, c.NodeRank, c.MasterAddr, c.DP, c.GradAccum = 2, 1, "node0.cluster", 16, 4
			c.Torchrun = "/opt/venv/bin/torchrun"
			return c
		},
		"proxy-cpu-1proc": func() Config {
			return Config{
				ScriptPath: "/tmp/rival/train.py", DataPrefix: "/tmp/rival/proxy_text_document", OrderDir: "/tmp/rival", WorkDir: "/tmp/rival/run",
				Layers: 2, Hidden: 128, FFN: 344, Heads: 4, KVHeads: 2, Vocab: 2048, RopeTheta: 10000,
				SeqLen: 64, MicroBatch: 4, GradAccum: 2, TrainIters: 30, LR: 3e-3, MinLR: 1e-4, WarmupSteps: 5,
				WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Seed: 42, Threads: 2, LogInterval: 5,
			}
		},
		"proxy-cpu-2proc": func() Config {
			c := Config{
				ScriptPath: "/tmp/rival/train.py", DataPrefix: "/tmp/rival/proxy_text_document", OrderDir: "/tmp/rival",
				Layers: 2, Hidden: 128, FFN: 344, Heads: 4, KVHeads: 2, Vocab: 2048, RopeTheta: 10000,
				SeqLen: 64, MicroBatch: 2, GradAccum: 2, TrainIters: 30, LR: 3e-3, WarmupSteps: 5,
				WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Seed: 42, Threads: 1, NProcPerNode: 2,
			}
			return c
		},
		"proxy-cpu-2proc-torchrun": func() Config {
			return Config{
				ScriptPath: "/tmp/rival/train.py", DataPrefix: "/tmp/rival/proxy_text_document", OrderDir: "/tmp/rival",
				Layers: 2, Hidden: 128, FFN: 344, Heads: 4, KVHeads: 2, Vocab: 2048, RopeTheta: 10000,
				SeqLen: 64, MicroBatch: 2, GradAccum: 2, TrainIters: 30, LR: 3e-3, WarmupSteps: 5,
				WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Seed: 42, NProcPerNode: 2, Launcher: LauncherTorchrun,
			}
		},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			launch, err := BuildLaunch(cfg())
			require.NoError(t, err)
			got, err := json.MarshalIndent(launch, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			path := filepath.Join("testdata", "launch", name+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./frameworks/fsdp -run Golden -update to create it")
			assert.Equal(t, string(want), string(got))
		})
	}
}

// TestBuildLaunchKnobs checks that each fair-config knob changes the launch where expected and nowhere else.
func TestBuildLaunchKnobs(t *testing.T) {
	base, err := BuildLaunch(llama31())
	require.NoError(t, err)
	cases := []struct {
		name   string
		edit   func(*Config)
		flag   string
		before string
		after  string
	}{
		{"SEED", func(c *Config) { c.Seed = 7 }, "--seed", "42", "7"},
		{"MBS", func(c *Config) { c.MicroBatch = 2 }, "--micro-batch", "1", "2"},
		{"SL", func(c *Config) { c.SeqLen = 4096 }, "--seq-len", "2048", "4096"},
		{"GA", func(c *Config) { c.GradAccum = 16 }, "--grad-accum", "8", "16"},
		{"LR", func(c *Config) { c.LR, c.MinLR = 1e-4, 3e-5 }, "--lr", "0.0003", "0.0001"},
		{"WARMUP_STEPS", func(c *Config) { c.WarmupSteps = 100 }, "--warmup-steps", "50", "100"},
		{"TRAIN_ITERS", func(c *Config) { c.TrainIters = 1000 }, "--train-iters", "500", "1000"},
		{"WEIGHT_DECAY", func(c *Config) { c.WeightDecay = 0.01 }, "--weight-decay", "0.1", "0.01"},
		{"BETA2", func(c *Config) { c.Beta2 = 0.999 }, "--beta2", "0.95", "0.999"},
		{"PRECISION", func(c *Config) { c.Precision = "fp32" }, "--precision", "bf16", "fp32"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := llama31()
			tc.edit(&cfg)
			got, err := BuildLaunch(cfg)
			require.NoError(t, err)
			require.Equal(t, base.Env["PYTHONHASHSEED"] != got.Env["PYTHONHASHSEED"], tc.name == "SEED")
			require.Len(t, got.Command, len(base.Command))
			var changed []string
			for i := range base.Command {
				if base.Command[i] != got.Command[i] {
					changed = append(changed, base.Command[i-1]+" "+base.Command[i]+" -> "+got.Command[i])
				}
			}
			assert.Equal(t, []string{tc.flag + " " + tc.before + " -> " + tc.after}, changed)
		})
	}
}

func TestBuildLaunchDefaults(t *testing.T) {
	cfg := llama31()
	cfg.Precision, cfg.Attention, cfg.LogInterval, cfg.MinLR = "", "", 0, 0
	l, err := BuildLaunch(cfg)
	require.NoError(t, err)
	assert.Equal(t, "/run/rival/fsdp", l.WorkDir)
	assert.Equal(t, DefaultPython, l.Command[0])
	assert.Subset(t, l.Command, []string{"--precision", "bf16", "--attention", "auto", "--log-interval", "1"})
	assert.Contains(t, l.Command, "--nproc_per_node=8")

	cpu := llama31()
	cpu.GPUsPerNode, cpu.DP, cpu.Precision = 0, 0, ""
	l, err = BuildLaunch(cpu)
	require.NoError(t, err)
	assert.Equal(t, []string{DefaultPython, "/run/rival/fsdp/train.py"}, l.Command[:2], "one CPU process runs the script directly")
	assert.Subset(t, l.Command, []string{"--precision", "fp32"})
}

func TestBuildLaunchRejects(t *testing.T) {
	cases := []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.ScriptPath = "" }, "ScriptPath"},
		{func(c *Config) { c.DataPrefix = "" }, "DataPrefix"},
		{func(c *Config) { c.OrderDir = "" }, "OrderDir is empty"},
		{func(c *Config) { c.SeqLen = 0 }, "SeqLen (SL) is 0"},
		{func(c *Config) { c.MicroBatch = -1 }, "MicroBatch (MBS)"},
		{func(c *Config) { c.GradAccum = 0 }, "GradAccum (GA)"},
		{func(c *Config) { c.KVHeads = 5 }, "KVHeads 5 does not divide Heads 32"},
		{func(c *Config) { c.Heads, c.KVHeads = 24, 8 }, "Hidden 4096 does not split into Heads 24"},
		{func(c *Config) { c.SeqLen = 200000 }, "exceeds the model's 131072 positions"},
		{func(c *Config) { c.LR = 0 }, "LR is 0"},
		{func(c *Config) { c.MinLR = 1 }, "MIN_LR 1 must lie in [0, LR"},
		{func(c *Config) { c.WarmupSteps = 501 }, "WARMUP_STEPS 501 must lie in [0, TRAIN_ITERS"},
		{func(c *Config) { c.Beta1 = 1 }, "BETA1 is 1"},
		{func(c *Config) { c.Beta2 = -0.1 }, "BETA2 is -0.1"},
		{func(c *Config) { c.WeightDecay = -1 }, "WEIGHT_DECAY is -1"},
		{func(c *Config) { c.Seed = -1 }, "Seed (SEED)"},
		{func(c *Config) { c.Precision = "fp8" }, `Precision (PRECISION) "fp8"`},
		{func(c *Config) { c.Attention = "flash3" }, `Attention "flash3"`},
		{func(c *Config) { c.RopeTheta = 0 }, "RopeTheta"},
		{func(c *Config) { c.TP = 2 }, "TP=2: the fsdp framework is data parallel only"},
		{func(c *Config) { c.PP = 4 }, "PP=4"},
		{func(c *Config) { c.DP = 4 }, "DP=4 does not match NProcPerNode 8 × NNodes 1 = 8"},
		{func(c *Config) { c.NProcPerNode = 16 }, "NProcPerNode 16 exceeds the 8 GPUs per node"},
		{func(c *Config) { c.NNodes, c.DP = 2, 16 }, "MasterAddr is empty"},
		{func(c *Config) { c.NNodes, c.MasterAddr, c.NodeRank, c.DP = 2, "h", 2, 16 }, "NodeRank 2"},
		{func(c *Config) { c.NodeRank = 1 }, "NodeRank 1 given for a single-node run"},
		{func(c *Config) { c.Threads = -2 }, "Threads"},
		{func(c *Config) { c.Launcher = "mpirun" }, `Launcher "mpirun"`},
		{func(c *Config) { c.Launcher, c.NNodes, c.MasterAddr, c.DP = LauncherSpawn, 2, "h", 16 }, "one node only"},
		{func(c *Config) { c.Rendezvous = "etcd" }, `Rendezvous "etcd"`},
		{func(c *Config) { c.Rendezvous, c.NNodes, c.MasterAddr, c.DP = RendezvousFile, 2, "h", 16 }, "one node's run folder"},
		{func(c *Config) { c.Rendezvous, c.Launcher = RendezvousFile, LauncherSpawn }, "torchrun's"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			cfg := llama31()
			tc.edit(&cfg)
			_, err := BuildLaunch(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}
