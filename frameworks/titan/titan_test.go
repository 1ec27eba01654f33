package titan

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
	"go.yaml.in/yaml/v3"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/facts"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/models"
)

const python = "/usr/bin/python3"

// needNumpy skips when the system Python lacks numpy (.ci/run installs Debian's python3-numpy).
func needNumpy(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import numpy").Run(); err != nil {
		t.Skipf("%s with numpy is needed to run the extension's dataset reader (apt-get install python3-numpy): %v", python, err)
	}
}

func writeScript(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), ScriptName)
	require.NoError(t, os.WriteFile(p, Script(), 0o644))
	return p
}

// writeDataset writes documents of distinct ids (document d holds d*1000 + 1 ... and the EOD 0) and
// returns the prefix and the concatenated token stream.
func writeDataset(t *testing.T, docs, perDoc int) (string, []int) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "tiny_text_document")
	w, err := indexed.NewWriter(prefix, indexed.Uint16)
	require.NoError(t, err)
	var stream []int
	for d := 0; d < docs; d++ {
		var toks []int32
		for k := 1; k < perDoc; k++ {
			toks = append(toks, int32(d*100+k))
		}
		toks = append(toks, 0)
		for _, x := range toks {
			stream = append(stream, int(x))
		}
		require.NoError(t, w.AddDocument(toks))
	}
	require.NoError(t, w.AddDocument(nil)) // an empty document: an index entry, no tokens
	require.NoError(t, w.Finalize())
	return prefix, stream
}

// titanOrder writes the sample order of a run over prefix into a new folder, as Rival does before
// training, and returns the folder, the indices and the opened dataset.
func titanOrder(t *testing.T, prefix string, seed, seqLen int, n int64) (string, *gptorder.Indices, *indexed.Dataset) {
	t.Helper()
	ds, err := indexed.Open(prefix)
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	lengths := ds.Lengths()
	x, err := gptorder.Build(lengths, 0, len(lengths), gptorder.Order{Seed: uint32(seed), SeqLen: seqLen, NumSamples: n, AddExtraToken: true})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, x.Write(dir))
	return dir, x, ds
}

func samples(t *testing.T, script, prefix, orderDir string, seqLen, seed, num, mbs, rank, world, n int) [][]int {
	t.Helper()
	args := []string{script, "samples", prefix, orderDir}
	for _, v := range []int{seqLen, seed, num, mbs, rank, world, n} {
		args = append(args, strconv.Itoa(v))
	}
	out, err := exec.Command(python, args...).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
	}
	require.NoError(t, err)
	var got [][]int
	require.NoError(t, json.Unmarshal(out, &got))
	return got
}

// The extension's reader hands each rank Megatron's samples as MegatronPretrainingSampler does:
// rank r's k-th micro-batch is samples k·MBS·DP + r·MBS ... of Megatron's order, each sample read as
// GPTDataset reads it; and all ranks together, in global order, digest to Megatron's order's digest.
func TestReaderReadsMegatronOrder(t *testing.T) {
	needNumpy(t)
	script := writeScript(t)
	prefix, _ := writeDataset(t, 13, 9) // 117 tokens: several epochs of 8-token samples
	const seqLen, seed, num = 8, 42, 48
	dir, x, ds := titanOrder(t, prefix, seed, seqLen, num)
	for _, lay := range []struct{ mbs, world int }{{1, 1}, {2, 2}, {1, 4}, {4, 2}} {
		for rank := range lay.world {
			got := samples(t, script, prefix, dir, seqLen, seed, num, lay.mbs, rank, lay.world, num/lay.world)
			for i, s := range got {
				k, j := i/lay.mbs, i%lay.mbs
				g := int64(k*lay.mbs*lay.world + rank*lay.mbs + j)
				want, err := x.Tokens(ds, g, nil)
				require.NoError(t, err)
				wantInts := make([]int, len(want))
				for n, v := range want {
					wantInts[n] = int(v)
				}
				require.Equal(t, wantInts, s, "mbs %d world %d rank %d read %d: global sample %d", lay.mbs, lay.world, rank, i, g)
			}
		}
		out := filepath.Join(t.TempDir(), "samples.bin")
		args := []string{script, "dump", prefix, dir}
		for _, v := range []int{seqLen, seed, num, lay.mbs, lay.world, 24} {
			args = append(args, strconv.Itoa(v))
		}
		b, err := exec.Command(python, append(args, out)...).CombinedOutput()
		require.NoError(t, err, "%s", b)
		raw, err := os.ReadFile(out)
		require.NoError(t, err)
		sum := blake3.Sum256(raw)
		want, err := x.Digest(ds, 24)
		require.NoError(t, err)
		assert.Equal(t, want, hex.EncodeToString(sum[:]), "mbs %d world %d", lay.mbs, lay.world)
	}
}

func TestReaderRejectsBadInput(t *testing.T) {
	needNumpy(t)
	script := writeScript(t)
	prefix, _ := writeDataset(t, 3, 5)
	dir, _, _ := titanOrder(t, prefix, 1, 4, 2)
	idx := prefix + ".idx"
	b, err := os.ReadFile(idx)
	require.NoError(t, err)
	b[0] = 'X'
	require.NoError(t, os.WriteFile(idx, b, 0o644))
	out, err := exec.Command(python, script, "samples", prefix, dir, "4", "1", "2", "1", "0", "1", "1").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), idx)
	assert.Contains(t, string(out), "not a Megatron index")

	prefix, _ = writeDataset(t, 3, 5)
	dir, _, _ = titanOrder(t, prefix, 1, 4, 3)
	out, err = exec.Command(python, script, "samples", prefix, dir, "4", "1", "3", "1", "0", "2", "1").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "3 samples do not split into micro-batches of 1 on 2 ranks")
	out, err = exec.Command(python, script, "samples", prefix, dir, "4", "2", "3", "1", "0", "1", "1").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "rival-gptorder-seed2-sl4-n3-x1-document_index.npy", "an order for another seed is not there")
}

// TestFFNWidth checks, for every registry model, that the extension's FFN arguments make TorchTitan's
// FeedForward sizing rule give exactly the model's FFN width.
func TestFFNWidth(t *testing.T) {
	needNumpy(t)
	script := writeScript(t)
	code := `import sys; sys.path.insert(0, sys.argv[1]); import rival_titan as r
dim, ffn = int(sys.argv[2]), int(sys.argv[3])
mult_of, mult = r.ffn_arguments(dim, ffn)
h = int(mult * int(2 * (4 * dim) / 3))
print(mult_of * ((h + mult_of - 1) // mult_of))`
	for _, name := range models.Names() {
		m, err := models.Lookup(name)
		require.NoError(t, err)
		out, err := exec.Command(python, "-c", code, filepath.Dir(script), strconv.Itoa(m.Hidden), strconv.Itoa(m.FFN)).CombinedOutput()
		require.NoError(t, err, "%s: %s", name, out)
		assert.Equal(t, strconv.Itoa(m.FFN), strings.TrimSpace(string(out)), name)
	}
}

func plan(t *testing.T, platform, model string) core.Plan {
	t.Helper()
	m, err := models.Lookup(model)
	require.NoError(t, err)
	return core.Plan{
		Request: core.Request{Platform: platform, Framework: core.Titan, Model: model,
			Fair: core.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, GBS: 64, TP: 1, PP: 1, DP: 8, TrainIters: 500,
				WarmupSteps: 50, LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: core.BF16},
			DataPrefix: "/data/d_text_document", TokenizerPath: "/data/tok", OutputDir: "/out", DataCacheDir: "/cache"},
		Model: m, GPUsPerNode: 8, NNodes: 1, World: 8,
	}
}

// stackPlan is plan on one stack (core.StackNames).
func stackPlan(t *testing.T, stack, platform, model string) core.Plan {
	t.Helper()
	p := plan(t, platform, model)
	p.Stack = stack
	return p
}

// pinOf is the TorchTitan pinned for platform on stack.
func pinOf(t *testing.T, platform, stack string) Pin {
	t.Helper()
	pin, err := PinnedFor(platform, stack)
	require.NoError(t, err)
	return pin
}

func TestEXPIsPrimusYAML(t *testing.T) {
	for _, stack := range core.StackNames {
		t.Run(stack, func(t *testing.T) { testEXPIsPrimusYAML(t, stack) })
	}
}

func testEXPIsPrimusYAML(t *testing.T, stack string) {
	p := stackPlan(t, stack, hw.PlatformAMD, "mistral-proxy")
	l, err := Build(p)
	require.NoError(t, err)
	var doc struct {
		ExpName string `yaml:"exp_name"`
		Modules struct {
			PreTrainer struct {
				Framework string                            `yaml:"framework"`
				Config    string                            `yaml:"config"`
				Model     string                            `yaml:"model"`
				Overrides map[string]map[string]interface{} `yaml:"overrides"`
			} `yaml:"pre_trainer"`
		} `yaml:"modules"`
	}
	require.NoError(t, yaml.Unmarshal(l.Files[EXPName], &doc))
	pt := doc.Modules.PreTrainer
	assert.Equal(t, "torchtitan", pt.Framework)
	assert.Equal(t, "pre_trainer.yaml", pt.Config)
	assert.Equal(t, SpecName, pt.Overrides["model"]["name"])
	assert.Equal(t, "mistral-proxy", pt.Overrides["model"]["flavor"])
	assert.Equal(t, 2048, pt.Overrides["training"]["seq_len"])
	assert.Equal(t, 1e-8, pt.Overrides["optimizer"]["eps"])
	assert.Equal(t, 1.0, pt.Overrides["training"]["max_norm"])
	assert.Equal(t, Module, pt.Overrides["experimental"]["custom_import"])
	seedAt := "training"
	if pinOf(t, hw.PlatformAMD, stack).Version == "v0.2.2" {
		seedAt = "debug"
		assert.NotContains(t, pt.Overrides["training"], "seed", "v0.2.2 reads [debug] seed")
	}
	assert.Equal(t, 42, pt.Overrides[seedAt]["seed"])
	assert.Equal(t, "/out/primus/titan-exp.yaml", l.Env["EXP"])
	assert.Equal(t, "/out", l.Env["PYTHONPATH"])

	var cfg Config
	require.NoError(t, json.Unmarshal(l.Files[ConfigName], &cfg))
	assert.Equal(t, Config{Flavor: "mistral-proxy", DataPrefix: "/data/d_text_document", Seed: 42,
		OrderDir: "/cache", NumSamples: int64(p.Fair.TrainIters * p.Fair.GBS),
		Model: ModelConfig{Layers: p.Model.Layers, Hidden: p.Model.Hidden, FFN: p.Model.FFN, Heads: p.Model.Heads,
			KVHeads: p.Model.KVHeads, Vocab: p.Model.Vocab, RopeTheta: p.Model.RopeTheta, MaxPositions: p.Model.MaxPositions,
			NormEps: p.Model.NormEps, InitStd: p.Model.InitStd, Window: 512}}, cfg, "SL 2048 is past the proxy's 512-token window")
}

func TestPipelineCarriesAccumulationInOneStep(t *testing.T) {
	for _, stack := range core.StackNames {
		p := stackPlan(t, stack, hw.PlatformNVIDIA, "llama")
		p.Fair.PP, p.Fair.DP = 2, 4
		p.Fair.GBS = p.Fair.MBS * p.Fair.DP * p.Fair.GA
		l, err := Build(p)
		require.NoError(t, err)
		toml := string(l.Files[TOMLName])
		assert.Contains(t, toml, "local_batch_size = 8\n", stack)
		assert.Contains(t, toml, "global_batch_size = 32\n", stack)
		assert.Contains(t, toml, "pipeline_parallel_microbatch_size = 1\n", stack)
	}
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		edit   func(p *core.Plan)
		errHas []string
	}{
		{"fp8", "llama", func(p *core.Plan) { p.Fair.Precision = core.FP8 }, []string{"PRECISION fp8", "delayed-scaling"}},
		{"profile", "llama", func(p *core.Plan) { p.Fair.Profile = true }, []string{"PROFILE=1", "profile_freq"}},
		{"cpu", "llama", func(p *core.Plan) { p.Platform = hw.PlatformCPU }, []string{"platform \"cpu\""}},
		{"bf16 without FSDP", "llama", func(p *core.Plan) { p.Fair.TP, p.Fair.PP, p.Fair.DP, p.Fair.GBS = 4, 2, 1, 8 },
			[]string{"DP 1 and TP 4 × PP 2", "maybe_enable_amp", "float32"}},
	}
	for _, stack := range core.StackNames {
		for _, tc := range tests {
			t.Run(stack+"/"+tc.name, func(t *testing.T) {
				p := stackPlan(t, stack, hw.PlatformNVIDIA, tc.model)
				tc.edit(&p)
				_, err := Build(p)
				require.Error(t, err)
				for _, w := range tc.errHas {
					assert.Contains(t, err.Error(), w)
				}
			})
		}
	}
	// Mistral runs at any SL: its window reaches the extension's model only where it masks anything
	// (SL - 1 > 4096), as the other frameworks pass it.
	for sl, window := range map[int]int{4096: 0, 4097: 0, 4098: 4096, 8192: 4096} {
		p := plan(t, hw.PlatformNVIDIA, "mistral")
		p.Fair.SL = sl
		l, err := Build(p)
		require.NoError(t, err)
		var cfg Config
		require.NoError(t, json.Unmarshal(l.Files[ConfigName], &cfg))
		assert.Equal(t, window, cfg.Model.Window, "SL %d", sl)
	}
	// Without FSDP, fp32 is what TorchTitan trains anyway; with DP 2 FSDP applies bf16.
	p := plan(t, hw.PlatformNVIDIA, "llama")
	p.Fair.TP, p.Fair.PP, p.Fair.DP, p.Fair.GBS, p.Fair.Precision = 4, 2, 1, 8, core.FP32
	_, err := Build(p)
	require.NoError(t, err)
	p.Fair.TP, p.Fair.DP, p.Fair.GBS, p.Fair.Precision = 2, 2, 16, core.BF16
	_, err = Build(p)
	require.NoError(t, err)
}

func TestQuoteAndFloat(t *testing.T) {
	for in, want := range map[string]string{`/a b`: `"/a b"`, `x"y\z`: `"x\"y\\z"`, "t\tab": `"t\u0009ab"`} {
		assert.Equal(t, want, q(in))
	}
	for in, want := range map[float64]string{1e-8: "1.0e-08", 1: "1.0", 0.1: "0.1", 3e-4: "0.0003", 2.5e-05: "2.5e-05"} {
		assert.Equal(t, want, fl(in))
	}
}

func TestScriptDigest(t *testing.T) {
	a, b := Script(), Script()
	a[0] ^= 1
	assert.NotEqual(t, a, b, "Script returns a copy")
	assert.Len(t, ScriptDigest(), 64)
	names := []string{ScriptName, ConfigName, TOMLName, CheckName, StubsName}
	sort.Strings(names)
	l, err := Build(plan(t, hw.PlatformNVIDIA, "llama-proxy"))
	require.NoError(t, err)
	var got []string
	for n := range l.Files {
		got = append(got, n)
	}
	sort.Strings(got)
	assert.Equal(t, names, got)
	assert.Equal(t, ScriptDigest(), l.EntryScriptDigest)
	assert.Contains(t, string(l.Files[TOMLName]), "custom_import = \"rival_titan\"")
}

// titanTrees are the TorchTitan trees every pinned image of every stack runs, once each.
func titanTrees(t *testing.T) []string {
	t.Helper()
	var trees []string
	for _, pt := range pinnedTrees(t) {
		if !slices.Contains(trees, pt.dir) {
			trees = append(trees, pt.dir)
		}
	}
	return trees
}

// The extension's build_dataloader, wrapped in TorchTitan's own ParallelAwareDataloader from every
// pinned tree and iterated as TorchTitan's trainer iterates it (batches of ({"input"}, labels)), gives
// the ranks Megatron's samples: their first samples, in global order, digest to Megatron's order.
func TestDataloaderReadsMegatronOrder(t *testing.T) {
	trees := titanTrees(t)
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		if os.Getenv("RIVAL_REQUIRE_UPSTREAM") == "1" {
			t.Fatalf("%s cannot import torch and numpy: %v", python, err)
		}
		t.Skipf("%s cannot import torch and numpy (apt-get install python3-torch python3-numpy): %v", python, err)
	}
	script := writeScript(t)
	driver, err := filepath.Abs(filepath.Join("testdata", "titan_dataloader.py"))
	require.NoError(t, err)
	prefix, _ := writeDataset(t, 40, 23)
	const seqLen, seed, num, n = 16, 3, 64, 32
	dir, x, ds := titanOrder(t, prefix, seed, seqLen, num)
	want, err := x.Digest(ds, n)
	require.NoError(t, err)
	cfgJSON, err := json.Marshal(Config{DataPrefix: prefix, Seed: seed, OrderDir: dir, NumSamples: num})
	require.NoError(t, err)
	cfgPath := filepath.Join(t.TempDir(), ConfigName)
	require.NoError(t, os.WriteFile(cfgPath, cfgJSON, 0o644))
	for _, tree := range trees {
		for _, lay := range []struct{ mbs, world int }{{2, 2}, {1, 4}, {4, 1}} {
			out := filepath.Join(t.TempDir(), "samples.bin")
			b, err := exec.Command(python, driver, filepath.Dir(script), tree, cfgPath, strconv.Itoa(seqLen),
				strconv.Itoa(lay.mbs), strconv.Itoa(lay.world), strconv.Itoa(n), out).CombinedOutput()
			require.NoError(t, err, "%s", b)
			raw, err := os.ReadFile(out)
			require.NoError(t, err)
			sum := blake3.Sum256(raw)
			assert.Equal(t, want, hex.EncodeToString(sum[:]), "%s: mbs %d world %d", filepath.Base(tree), lay.mbs, lay.world)
		}
	}
}

// titan on AMD runs without Primus Turbo, as on NVIDIA and as prim does: Primus v26.2 and v26.5.1
// turn it on in pre_trainer.yaml (primus_turbo) and in their llama3.1 model yaml (model.converters).
func TestAMDRunsWithoutPrimusTurbo(t *testing.T) {
	for _, stack := range core.StackNames {
		for _, platform := range []string{hw.PlatformAMD, hw.PlatformNVIDIA} {
			t.Run(stack+"/"+platform, func(t *testing.T) { testRunsWithoutPrimusTurbo(t, stack, platform) })
		}
	}
}

func testRunsWithoutPrimusTurbo(t *testing.T, stack, platform string) {
	p := stackPlan(t, stack, platform, "llama")
	secs, err := Sections(p, platform)
	require.NoError(t, err)
	got := map[string]string{}
	for _, s := range secs {
		for _, kv := range s.KVs {
			got[s.Name+"."+kv.Key] = kv.Value
		}
	}
	if platform == hw.PlatformNVIDIA {
		assert.NotContains(t, got, "primus_turbo.enable_primus_turbo", "upstream TorchTitan has no Primus Turbo")
		return
	}
	// Every switch Primus's own defaults turn on (its pre_trainer.yaml, as extracted) is turned off;
	// enable_embedding_autocast among them: its setup patch hooks every nn.Embedding to cast its
	// output to the autocast dtype, which TorchTitan on NVIDIA does not.
	pf, err := facts.TorchTitan(pinOf(t, platform, stack).Version, true)
	require.NoError(t, err)
	require.NotNil(t, pf.Extras)
	on := 0
	for k, o := range pf.Extras.Sections["primus_turbo"] {
		if o.Kind == "bool" && o.Default == true {
			on++
			assert.Equal(t, "false", got["primus_turbo."+k], k)
		}
	}
	assert.Greater(t, on, 5, "Primus's defaults turn several Turbo switches on")
	assert.Equal(t, "[]", got["model.converters"], "the model yaml's primus_turbo converter is dropped")
	require.NoError(t, CheckSections(p, platform, secs), "Primus's own options, checked against its extracted facts")
}

// TestDecayAndInitWithRealTorch runs test_rival_titan_torch.py: the extension's parameter groups and
// Megatron init on real torch (Debian's python3-torch, which .ci/run installs).
func TestDecayAndInitWithRealTorch(t *testing.T) {
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("%s with torch and numpy is needed (apt-get install python3-torch python3-numpy): %v", python, err)
	}
	cmd := exec.Command(python, "-m", "unittest", "test_rival_titan_torch.py", "-v")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "Ran 6 tests")
}

// TestPreflightLaunch: every titan launch carries its read-back as the preflight, naming the job
// config the run itself reads, the world size, and the trees of the platform image.
func TestPreflightLaunch(t *testing.T) {
	for _, tc := range []struct {
		platform string
		want     []string
	}{
		{hw.PlatformNVIDIA, []string{"python3", "/out/" + CheckName, "nvd", "$" + TreeEnv, "/out", "8", "/out/" + TOMLName}},
		{hw.PlatformAMD, []string{"python3", "/out/" + CheckName, "amd", "$" + TreeEnv + ":/workspace/Primus/third_party/torchtitan", "/out", "8",
			"/out/" + EXPName, "$" + PrimusEnv + ":/workspace/Primus"}},
	} {
		for _, stack := range core.StackNames {
			t.Run(stack+"/"+tc.platform, func(t *testing.T) {
				l, err := Build(stackPlan(t, stack, tc.platform, "llama"))
				require.NoError(t, err)
				require.NotNil(t, l.Preflight)
				assert.Equal(t, tc.want, l.Preflight.Command)
				assert.Equal(t, "/out", l.Preflight.WorkDir)
				assert.Equal(t, "8", l.Preflight.Env["WORLD_SIZE"])
				for k, v := range l.Env {
					assert.Equal(t, v, l.Preflight.Env[k], "the run's environment: %s", k)
				}
				assert.Equal(t, CheckScript(), l.Files[CheckName])
				assert.Contains(t, string(l.Files[StubsName]), "def install()")
			})
		}
	}
}
