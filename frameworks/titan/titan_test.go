package titan

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/rivalbench/rival/frameworks/spec"
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

func samples(t *testing.T, script, prefix string, seqLen, seed, rank, world, n int) [][]int {
	t.Helper()
	args := []string{script, "samples", prefix}
	for _, v := range []int{seqLen, seed, rank, world, n} {
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

// start returns k when s is sample k of the stream (tokens k*seqLen ... k*seqLen+seqLen).
func start(t *testing.T, stream, s []int, seqLen int) int {
	t.Helper()
	require.Len(t, s, seqLen+1)
	for k := 0; k*seqLen+seqLen < len(stream); k++ {
		if equal(stream[k*seqLen:k*seqLen+seqLen+1], s) {
			return k
		}
	}
	t.Fatalf("sample %v is no window of the token stream", s)
	return -1
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReaderSamples(t *testing.T) {
	needNumpy(t)
	script := writeScript(t)
	prefix, stream := writeDataset(t, 13, 9) // 117 tokens
	const seqLen, world = 8, 2
	count := (len(stream) - 1) / seqLen // 14 samples
	perRank := count / world

	seen := map[int]int{}
	for rank := 0; rank < world; rank++ {
		got := samples(t, script, prefix, seqLen, 42, rank, world, perRank)
		require.Len(t, got, perRank)
		for _, s := range got {
			k := start(t, stream, s, seqLen)
			seen[k]++
		}
	}
	assert.Len(t, seen, count, "one epoch over both ranks visits every sample")
	for k, n := range seen {
		assert.Equal(t, 1, n, "sample %d seen by more than one rank", k)
	}

	again := samples(t, script, prefix, seqLen, 42, 0, world, perRank)
	first := samples(t, script, prefix, seqLen, 42, 0, world, perRank)
	assert.Equal(t, first, again, "the same seed gives the same samples")
	other := samples(t, script, prefix, seqLen, 7, 0, world, perRank)
	assert.NotEqual(t, first, other, "another seed gives another order")

	// Past one epoch the reader goes on with the next permutation.
	long := samples(t, script, prefix, seqLen, 42, 0, 1, count+3)
	assert.Len(t, long, count+3)
	epoch := map[int]bool{}
	for _, s := range long[:count] {
		epoch[start(t, stream, s, seqLen)] = true
	}
	assert.Len(t, epoch, count)
}

func TestReaderRejectsBadIndex(t *testing.T) {
	needNumpy(t)
	script := writeScript(t)
	prefix, _ := writeDataset(t, 3, 5)
	idx := prefix + ".idx"
	b, err := os.ReadFile(idx)
	require.NoError(t, err)
	b[0] = 'X'
	require.NoError(t, os.WriteFile(idx, b, 0o644))
	out, err := exec.Command(python, script, "samples", prefix, "4", "1", "0", "1", "1").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), idx)
	assert.Contains(t, string(out), "not a Megatron index")

	prefix, _ = writeDataset(t, 1, 4)
	out, err = exec.Command(python, script, "samples", prefix, "8", "1", "0", "2", "1").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "fewer than the 2 data-parallel ranks")
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

func plan(t *testing.T, platform, model string) spec.Plan {
	t.Helper()
	m, err := models.Lookup(model)
	require.NoError(t, err)
	return spec.Plan{
		Request: spec.Request{Platform: platform, Framework: spec.Titan, Model: model,
			Fair: spec.Fair{Seed: 42, MBS: 1, SL: 2048, GA: 8, GBS: 64, TP: 1, PP: 1, DP: 8, TrainIters: 500,
				WarmupSteps: 50, LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: spec.BF16},
			DataPrefix: "/data/d_text_document", TokenizerPath: "/data/tok", OutputDir: "/out", DataCacheDir: "/cache"},
		Model: m, GPUsPerNode: 8, NNodes: 1, World: 8,
	}
}

func TestEXPIsPrimusYAML(t *testing.T) {
	p := plan(t, hw.PlatformAMD, "mistral-proxy")
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
	assert.Equal(t, "/out/primus/titan-exp.yaml", l.Env["EXP"])
	assert.Equal(t, "/out", l.Env["PYTHONPATH"])

	var cfg Config
	require.NoError(t, json.Unmarshal(l.Files[ConfigName], &cfg))
	assert.Equal(t, Config{Flavor: "mistral-proxy", DataPrefix: "/data/d_text_document", Seed: 42, InitStd: 0.02,
		Model: ModelConfig{Layers: p.Model.Layers, Hidden: p.Model.Hidden, FFN: p.Model.FFN, Heads: p.Model.Heads,
			KVHeads: p.Model.KVHeads, Vocab: p.Model.Vocab, RopeTheta: p.Model.RopeTheta, MaxPositions: p.Model.MaxPositions}}, cfg)
}

func TestPipelineCarriesAccumulationInOneStep(t *testing.T) {
	p := plan(t, hw.PlatformNVIDIA, "llama")
	p.Fair.PP, p.Fair.DP = 2, 4
	p.Fair.GBS = p.Fair.MBS * p.Fair.DP * p.Fair.GA
	l, err := Build(p)
	require.NoError(t, err)
	toml := string(l.Files[TOMLName])
	assert.Contains(t, toml, "local_batch_size = 8\n")
	assert.Contains(t, toml, "global_batch_size = 32\n")
	assert.Contains(t, toml, "pipeline_parallel_microbatch_size = 1\n")
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		name   string
		model  string
		edit   func(p *spec.Plan)
		errHas []string
	}{
		{"qwen", "qwen", func(*spec.Plan) {}, []string{"QKV biases", "bias=False", "mega, prim, nemo or fsdp"}},
		{"qwen proxy", "qwen-proxy", func(*spec.Plan) {}, []string{"qwen-proxy has QKV biases"}},
		{"fp8", "llama", func(p *spec.Plan) { p.Fair.Precision = spec.FP8 }, []string{"PRECISION fp8", "delayed-scaling"}},
		{"profile", "llama", func(p *spec.Plan) { p.Fair.Profile = true }, []string{"PROFILE=1", "profile_freq"}},
		{"window", "mistral", func(p *spec.Plan) { p.Fair.SL = 8192 }, []string{"SL 8192", "4096-token sliding window"}},
		{"cpu", "llama", func(p *spec.Plan) { p.Platform = hw.PlatformCPU }, []string{"platform \"cpu\""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := plan(t, hw.PlatformNVIDIA, tc.model)
			tc.edit(&p)
			_, err := Build(p)
			require.Error(t, err)
			for _, w := range tc.errHas {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	// At SL <= 4096 Mistral's window masks nothing: titan runs it.
	_, err := Build(plan(t, hw.PlatformNVIDIA, "mistral"))
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
	names := []string{ScriptName, ConfigName, TOMLName}
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

// titan on AMD runs without Primus Turbo, as on NVIDIA and as prim does: Primus v26.2 turns it on in
// pre_trainer.yaml (primus_turbo) and in its llama3.1 model yaml (model.converters).
func TestAMDRunsWithoutPrimusTurbo(t *testing.T) {
	for _, platform := range []string{hw.PlatformAMD, hw.PlatformNVIDIA} {
		p := plan(t, platform, "llama")
		secs, err := Sections(p, platform)
		require.NoError(t, err)
		got := map[string]string{}
		for _, s := range secs {
			for _, kv := range s.KVs {
				got[s.Name+"."+kv.Key] = kv.Value
			}
		}
		if platform == hw.PlatformNVIDIA {
			assert.NotContains(t, got, "primus_turbo.enable_primus_turbo", "TorchTitan v0.2.0 has no Primus Turbo")
			continue
		}
		for _, k := range []string{"enable_primus_turbo", "use_turbo_attention", "use_turbo_async_tp", "use_turbo_mx_linear", "use_turbo_float8_linear", "use_turbo_grouped_mm", "enable_attention_float8"} {
			assert.Equal(t, "false", got["primus_turbo."+k], k)
		}
		assert.Equal(t, "[]", got["model.converters"], "the model yaml's primus_turbo converter is dropped")
		require.NoError(t, CheckSections(platform, secs), "Primus's own options, checked against its extracted facts")
	}
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
	assert.Contains(t, string(out), "Ran 3 tests")
}
