package fsdp

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/heldouttest"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/indexed"
)

// These tests run the embedded script for real on CPU with Debian's torch.

var (
	torchOnce    sync.Once
	torchMissing string
)

// needTorch skips the test when DefaultPython cannot import torch and numpy.
func needTorch(t *testing.T) {
	t.Helper()
	torchOnce.Do(func() {
		out, err := exec.Command(DefaultPython, "-c", "import torch, numpy").CombinedOutput()
		if err != nil {
			torchMissing = strings.TrimSpace(string(out)) + " (" + err.Error() + ")"
		}
	})
	if torchMissing != "" {
		t.Skipf("%s cannot import torch and numpy, so the trainer cannot run: apt-get install python3-torch "+
			"python3-numpy libopenblas0-pthread. %s", DefaultPython, torchMissing)
	}
}

// megatronLine is the iteration line Megatron's training_log prints with --log-throughput.
var megatronLine = regexp.MustCompile(`^ \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] iteration +(\d+)/ +(\d+) \| ` +
	`consumed samples: +(\d+) \| elapsed time per iteration \(ms\): (\d+\.\d) \| ` +
	`throughput per GPU \(TFLOP/s/GPU\): (\d+\.\d) \| learning rate: (\d\.\d{6}E[-+]\d\d) \| ` +
	`global batch size: +(\d+) \| lm loss: (\d\.\d{6}E[-+]\d\d) \| loss scale: 1\.0 \| grad norm: (\d+\.\d{3}) \| ` +
	`number of skipped iterations: +(\d+) \| number of nan iterations: +(\d+) \|$`)

type iteration struct {
	it, consumed, gbs int
	lr, loss          float64
}

// proxyDataset writes a Rival-encoded dataset whose documents follow a fixed random successor
// permutation of the vocabulary, so the next token is learnable from the current one and the loss
// must fall well below ln(vocab) within a few dozen steps.
func proxyDataset(t testing.TB, vocab int) string {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "proxy_text_document")
	w, err := indexed.NewWriter(prefix, indexed.DTypeForVocab(vocab))
	require.NoError(t, err)
	defer w.Abort()
	rng := rand.New(rand.NewPCG(42, 6))
	const eod = 0
	next := rng.Perm(vocab - 1) // successor of id i (1-based) is next[i-1]+1; EOD is never a successor
	for range 300 {
		doc := []int32{int32(1 + rng.IntN(vocab-1))}
		for n := 50 + rng.IntN(300); len(doc) < n; {
			doc = append(doc, int32(next[doc[len(doc)-1]-1]+1))
		}
		require.NoError(t, w.AddDocument(append(doc, eod)))
	}
	require.NoError(t, w.Finalize())
	return prefix
}

func proxyConfig(t *testing.T, data string) Config {
	path := filepath.Join(t.TempDir(), ScriptName)
	require.NoError(t, os.WriteFile(path, Script(), 0o644))
	return Config{
		ScriptPath: path, DataPrefix: data, OrderDir: filepath.Dir(data),
		Layers: 2, Hidden: 128, FFN: 344, Heads: 4, KVHeads: 2, Vocab: 2048, RopeTheta: 10000,
		SeqLen: 64, MicroBatch: 4, GradAccum: 2, TrainIters: 24, LR: 3e-3, MinLR: 3e-4, WarmupSteps: 4,
		WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Seed: 42, LogInterval: 1,
		Threads: 1, // the CI machine's 2 cores are shared: one thread per process avoids OpenMP spin contention
	}
}

// run executes a launch and returns stdout, stderr and the exit code.
func run(t *testing.T, l Launch, extraEnv ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, l.Command[0], l.Command[1:]...)
	cmd.Dir = l.WorkDir
	cmd.Env = os.Environ()
	for k, v := range l.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return "", "", -1
}

// launchOrFail builds the launch and, as Rival does before training, writes its sample order.
func launchOrFail(t *testing.T, c Config) Launch {
	t.Helper()
	writeOrder(t, c)
	l, err := BuildLaunch(c)
	require.NoError(t, err)
	return l
}

// iterations checks every iteration line against Megatron's format and returns them parsed.
func iterations(t *testing.T, stdout string) []iteration {
	t.Helper()
	var its []iteration
	for _, line := range strings.Split(stdout, "\n") {
		if !strings.Contains(line, " iteration ") {
			continue
		}
		m := megatronLine.FindStringSubmatch(line)
		require.NotNil(t, m, "not a Megatron iteration line: %q", line)
		var it iteration
		it.it, _ = strconv.Atoi(m[1])
		it.consumed, _ = strconv.Atoi(m[3])
		it.gbs, _ = strconv.Atoi(m[7])
		it.lr, _ = strconv.ParseFloat(m[6], 64)
		it.loss, _ = strconv.ParseFloat(m[8], 64)
		total, _ := strconv.Atoi(m[2])
		// Megatron's widths: iteration {:8d}/{:8d}, consumed samples {:12d}, global batch size {:5d}.
		assert.Contains(t, line, " iteration "+pad(it.it, 8)+"/"+pad(total, 8)+" |")
		assert.Contains(t, line, "consumed samples: "+pad(it.consumed, 12)+" |")
		assert.Contains(t, line, "global batch size: "+pad(it.gbs, 5)+" |")
		its = append(its, it)
	}
	return its
}

func pad(v, width int) string {
	s := strconv.Itoa(v)
	return strings.Repeat(" ", max(0, width-len(s))) + s
}

// preamble returns the value of "key: value" in the trainer's [rival-fsdp] preamble.
func preamble(t *testing.T, stdout, key string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\[rival-fsdp\].*` + regexp.QuoteMeta(key) + `: ([^|\n]+?)( \||$)`).FindStringSubmatch(stdout)
	require.NotNil(t, m, "preamble lacks %q:\n%s", key, stdout)
	return m[1]
}

func parseLog(t *testing.T, stdout string) *logparse.Log {
	t.Helper()
	l, err := logparse.Parse(strings.NewReader(stdout), "fsdp")
	require.NoError(t, err)
	return l
}

// proxyParams counts the decoder's parameters independently of the script.
func proxyParams(c Config) int {
	kv := c.KVHeads * c.Hidden / c.Heads
	layer := 2*c.Hidden*c.Hidden + 2*c.Hidden*kv + 3*c.Hidden*c.FFN + 2*c.Hidden
	if c.QKVBias {
		layer += c.Hidden + 2*kv
	}
	return 2*c.Vocab*c.Hidden + c.Layers*layer + c.Hidden
}

// megatronFLOPs is Megatron's num_floating_point_operations for a dense GQA + SwiGLU decoder.
func megatronFLOPs(c Config, batch int) float64 {
	h, s, l := float64(c.Hidden), float64(c.SeqLen), float64(c.Layers)
	attn := 1 + float64(c.KVHeads)/float64(c.Heads) + s/h/2
	mlp := float64(c.FFN) / h * 1.5
	logit := float64(c.Vocab) / (2 * l * h)
	return 12 * float64(batch) * s * l * h * h * (attn + mlp + logit)
}

func TestTrainProxyLlamaLossFalls(t *testing.T) {
	needTorch(t)
	cfg := proxyConfig(t, proxyDataset(t, 2048))
	stdout, stderr, code := run(t, launchOrFail(t, cfg))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)

	its := iterations(t, stdout)
	require.Len(t, its, cfg.TrainIters)
	gbs := cfg.MicroBatch * cfg.GradAccum
	for i, it := range its {
		assert.Equal(t, i+1, it.it)
		assert.Equal(t, gbs, it.gbs)
		assert.Equal(t, (i+1)*gbs, it.consumed)
	}
	// Warmup reaches the peak at WarmupSteps; the cosine ends on the floor.
	assert.InDelta(t, cfg.LR/float64(cfg.WarmupSteps), its[0].lr, 1e-9)
	assert.InDelta(t, cfg.LR, its[cfg.WarmupSteps-1].lr, 1e-9)
	assert.InDelta(t, cfg.MinLR, its[len(its)-1].lr, 1e-9)

	first, last := its[0].loss, its[len(its)-1].loss
	assert.InDelta(t, 7.62, first, 0.3, "an untrained model predicts about ln(2048)")
	assert.Less(t, last, first-1.5, "loss must fall clearly: %g -> %g", first, last)

	// The project's Megatron log parser reads the run's facts and steps from this output.
	parsed := parseLog(t, stdout)
	assert.Equal(t, int64(proxyParams(cfg)), *parsed.Preamble.ParameterCount)
	assert.Equal(t, 1, *parsed.Preamble.WorldSize)
	assert.Equal(t, cfg.SeqLen, *parsed.Preamble.SeqLength)
	assert.Equal(t, cfg.MicroBatch, *parsed.Preamble.MicroBatchSize)
	assert.Equal(t, gbs, *parsed.Preamble.GlobalBatchSize)
	assert.Equal(t, cfg.TrainIters, *parsed.Preamble.TrainIters)
	require.Len(t, parsed.Steps, len(its))
	for i, s := range parsed.Steps {
		assert.Equal(t, its[i].loss, *s.Loss)
		assert.Equal(t, its[i].lr, *s.LearningRate)
	}
	// Decay on the embedding, the head and 7 matrices per block; none on the 2 norms per block and the final norm.
	assert.Contains(t, stdout, "weight decay 0.1 on 16 tensors, none on 5 (biases, norms)")
	flops, err := strconv.ParseFloat(strings.Fields(preamble(t, stdout, "FLOPs per iteration"))[0], 64)
	require.NoError(t, err)
	assert.InEpsilon(t, megatronFLOPs(cfg, gbs), flops, 1e-6)
}

func TestTrainQwenStyleQKVBias(t *testing.T) {
	needTorch(t)
	cfg := proxyConfig(t, proxyDataset(t, 2048))
	cfg.QKVBias, cfg.RopeTheta, cfg.NormEps, cfg.TrainIters, cfg.WarmupSteps = true, 1e6, 1e-6, 4, 1
	stdout, stderr, code := run(t, launchOrFail(t, cfg))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Len(t, iterations(t, stdout), 4)
	assert.Contains(t, stdout, "weight decay 0.1 on 16 tensors, none on 11 (biases, norms)")
	parsed := parseLog(t, stdout)
	assert.Equal(t, int64(proxyParams(cfg)), *parsed.Preamble.ParameterCount)
	assert.Equal(t, "True", parsed.Preamble.Args["add_qkv_bias"])
	assert.Equal(t, "1000000.0", parsed.Preamble.Args["rotary_base"])
	assert.Equal(t, "1e-06", parsed.Preamble.Args["norm_epsilon"])
}

// Two processes with half the micro batches each see the same samples as one process
// with all of them, so their losses must agree: this checks data sharding and gradient averaging.
func TestTrainTwoProcessesMatchOne(t *testing.T) {
	needTorch(t)
	data := proxyDataset(t, 2048)
	one := proxyConfig(t, data)
	one.TrainIters, one.WarmupSteps, one.GradAccum, one.MicroBatch = 6, 2, 2, 2
	two := one
	two.NProcPerNode, two.MicroBatch = 2, 1
	l := launchOrFail(t, two)
	require.Equal(t, []string{"--nproc-per-node", "2"}, l.Command[len(l.Command)-2:], "CPU runs start their own workers")

	out1, err1, code := run(t, launchOrFail(t, one))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out1, err1)
	out2, err2, code := run(t, l)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out2, err2)

	assert.Equal(t, 2, *parseLog(t, out2).Preamble.WorldSize)
	assert.Contains(t, out2, "data parallel: ")
	its1, its2 := iterations(t, out1), iterations(t, out2)
	require.Len(t, its2, len(its1))
	for i := range its1 {
		assert.Equal(t, its1[i].gbs, its2[i].gbs)
		assert.InEpsilon(t, its1[i].loss, its2[i].loss, 1e-4, "iteration %d", i+1)
	}
}

func TestTrainRejectsBadData(t *testing.T) {
	needTorch(t)
	data := proxyDataset(t, 2048)
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"vocab below the data's ids", func(c *Config) { c.Vocab = 1000 }, "token ids span [0, 2047] but --vocab is 1000"},
		{"no sample order", func(c *Config) { c.OrderDir = t.TempDir() }, "read the sample order:"},
		{"missing dataset", func(c *Config) { c.DataPrefix += "_absent" }, "read dataset:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := proxyConfig(t, data)
			writeOrder(t, cfg)
			tc.edit(&cfg)
			l, err := BuildLaunch(cfg)
			require.NoError(t, err)
			stdout, stderr, code := run(t, l)
			assert.Equal(t, 2, code, "stdout:\n%s", stdout)
			assert.Contains(t, stderr, tc.want)
			assert.NotContains(t, stdout, " iteration ")
		})
	}
}

// The script validates its own arguments too, for callers that do not go through BuildLaunch.
func TestTrainRejectsBadShape(t *testing.T) {
	needTorch(t)
	cfg := proxyConfig(t, "unused")
	l := launchOrFail(t, cfg)
	argv := append([]string(nil), l.Command...)
	for i, a := range argv {
		if a == "--kv-heads" {
			argv[i+1] = "3"
		}
	}
	l.Command = argv
	_, stderr, code := run(t, l)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--heads 4 is not a multiple of --kv-heads 3")
}

// Torch missing, too old, or too old for what was asked: exit code 3 and how to get it.
func TestTrainTorchMissingOrOld(t *testing.T) {
	needTorch(t)
	data := proxyDataset(t, 2048)

	// An import hook that refuses torch exactly as an interpreter without it does.
	missing := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(missing, "sitecustomize.py"), []byte(`import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
sys.meta_path.insert(0, NoTorch())
`), 0o644))
	// A torch package that reports an old version, as torch 1.12 would.
	old := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(old, "torch"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(old, "torch", "__init__.py"), []byte("__version__ = \"1.12.1+cpu\"\n"), 0o644))

	type torchCase struct {
		name string
		edit func(*Config)
		env  []string
		want string
	}
	cases := []torchCase{
		{"missing", nil, []string{"PYTHONPATH=" + missing}, "PyTorch is not importable by"},
		{"too old", nil, []string{"PYTHONPATH=" + old}, "PyTorch 1.12.1+cpu is too old: need >= 1.13"},
	}
	// Debian's torch 1.13 has neither torch.compile nor scaled_dot_product_attention: asking for them is exit 3 there.
	probe, err := exec.Command(DefaultPython, "-c", "import torch; print(hasattr(torch, 'compile'))").Output()
	require.NoError(t, err)
	if strings.TrimSpace(string(probe)) == "False" {
		cases = append(cases,
			torchCase{"compile on torch 1.x", func(c *Config) { c.Compile = true }, nil, "--compile needs torch >= 2.0"},
			torchCase{"sdpa on torch 1.x", func(c *Config) { c.Attention = "sdpa" }, nil, "--attention sdpa needs torch >= 2.0"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := proxyConfig(t, data)
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			stdout, stderr, code := run(t, launchOrFail(t, cfg), tc.env...)
			assert.Equal(t, 3, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.Contains(t, stderr, "apt-get install python3-torch")
			assert.Empty(t, stdout)
		})
	}
}

// BenchmarkTrainProxy reports the proxy Llama's CPU step time from the trainer's own log: the mean
// "elapsed time per iteration" over iterations 11-30 (the first ten include warm-up), per thread count.
// Run: go test ./frameworks/fsdp -run '^$' -bench TrainProxy -benchtime 1x
func BenchmarkTrainProxy(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run("threads="+strconv.Itoa(threads), func(b *testing.B) {
			if _, err := exec.Command(DefaultPython, "-c", "import torch, numpy").CombinedOutput(); err != nil {
				b.Skipf("%s cannot import torch and numpy: apt-get install python3-torch python3-numpy libopenblas0-pthread", DefaultPython)
			}
			prefix := proxyDataset(b, 2048)
			script := filepath.Join(b.TempDir(), ScriptName)
			require.NoError(b, os.WriteFile(script, Script(), 0o644))
			cfg := Config{
				ScriptPath: script, DataPrefix: prefix, OrderDir: filepath.Dir(prefix),
				Layers: 2, Hidden: 128, FFN: 344, Heads: 4, KVHeads: 2, Vocab: 2048, RopeTheta: 10000,
				SeqLen: 64, MicroBatch: 4, GradAccum: 2, TrainIters: 30, LR: 3e-3, WarmupSteps: 4,
				WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Seed: 42, LogInterval: 10, Threads: threads,
			}
			writeOrder(b, cfg)
			l, err := BuildLaunch(cfg)
			require.NoError(b, err)
			var ms float64
			for range b.N {
				cmd := exec.Command(l.Command[0], l.Command[1:]...)
				cmd.Env = os.Environ()
				for k, v := range l.Env {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
				out, err := cmd.Output()
				require.NoError(b, err)
				var lines []float64
				for _, m := range regexp.MustCompile(`elapsed time per iteration \(ms\): ([\d.]+)`).FindAllStringSubmatch(string(out), -1) {
					v, _ := strconv.ParseFloat(m[1], 64)
					lines = append(lines, v)
				}
				require.Len(b, lines, 3)
				ms += (lines[1] + lines[2]) / 2
			}
			ms /= float64(b.N)
			b.ReportMetric(ms, "ms/iter")
			b.ReportMetric(float64(cfg.MicroBatch*cfg.GradAccum*cfg.SeqLen)/(ms/1000), "tokens/s")
		})
	}
}

// The trainer evaluates the held-out set every --eval-interval iterations, prints Megatron's
// validation line, and one process and two agree on it (the loss is summed over tokens and ranks);
// its preflight digests the sequences it evaluates as Rival does.
func TestTrainEvaluatesHeldOut(t *testing.T) {
	needTorch(t)
	data := proxyDataset(t, 2048)
	one := proxyConfig(t, data)
	one.TrainIters, one.WarmupSteps, one.GradAccum, one.MicroBatch = 8, 2, 2, 2
	prefix := filepath.Join(t.TempDir(), "rival-heldout")
	sha := heldouttest.Write(t, data, prefix, 8, one.SeqLen)
	one.EvalPrefix, one.EvalSamples, one.EvalInterval = prefix, 8, 4
	two := one
	two.NProcPerNode, two.MicroBatch = 2, 1

	check, err := CheckLaunch(one)
	require.NoError(t, err)
	writeOrder(t, one)
	out, errOut, code := run(t, check)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
	assert.Contains(t, out, `preflight held-out: {"samples": 8, "sha256": "`+sha+`"}`)

	out1, err1, code := run(t, launchOrFail(t, one))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out1, err1)
	out2, err2, code := run(t, launchOrFail(t, two))
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", out2, err2)
	e1, e2 := parseLog(t, out1).Evaluations, parseLog(t, out2).Evaluations
	require.Len(t, e1, 2, "evaluations after iterations 4 and 8:\n%s", out1)
	require.Len(t, e2, 2)
	for i := range e1 {
		assert.Equal(t, 4*(i+1), e1[i].Step)
		assert.Equal(t, e1[i].Step, e2[i].Step)
		assert.InEpsilon(t, e1[i].Loss, e2[i].Loss, 1e-4, "evaluation %d", i+1)
	}
	assert.Less(t, e1[1].Loss, e1[0].Loss, "the held-out loss falls as the model learns the successor rule")
	assert.Contains(t, out1, "held-out: "+prefix+" | 8 sequences")
}
