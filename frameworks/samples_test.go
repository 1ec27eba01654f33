package frameworks

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/nemo"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/tokenizer"
)

// encodedCorpus encodes the sample corpus with a model's tokenizer (from tokenizer/testdata).
func encodedCorpus(t *testing.T, tokDir string) string {
	t.Helper()
	tk, err := tokenizer.Load(filepath.Join("..", "tokenizer", "testdata", tokDir, "tokenizer.json"))
	require.NoError(t, err)
	prefix := filepath.Join(t.TempDir(), "corpus")
	_, err = encode.File(context.Background(), []string{filepath.Join("..", "testdata", "sample", "corpus.jsonl")}, prefix, encode.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    2, DType: indexed.DTypeForVocab(tk.VocabSize()),
	})
	require.NoError(t, err)
	return prefix
}

// rivalSamples is the SHA-256 of the first n samples of Rival's own Megatron order (gptorder, proven
// equal to Megatron's GPTDataset and sampler in gptorder's tests) for f.
func rivalSamples(t *testing.T, prefix string, f core.Fair, n int64) string {
	t.Helper()
	ds, err := indexed.Open(prefix)
	require.NoError(t, err)
	defer ds.Close()
	lengths := ds.Lengths()
	gbs := int64(f.MBS * f.DP * f.GA)
	x, err := gptorder.Build(lengths, 0, ds.Sequences(), gptorder.Order{Seed: uint32(f.Seed), SeqLen: f.SL, NumSamples: int64(f.TrainIters) * gbs, AddExtraToken: true})
	require.NoError(t, err)
	sha, err := x.SHA256(ds, n)
	require.NoError(t, err)
	return sha
}

// samplesLine is the digest a preflight printed.
func samplesLine(t *testing.T, out string) core.SampleDigest {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if j, ok := strings.CutPrefix(l, "preflight samples: "); ok {
			var d core.SampleDigest
			require.NoError(t, json.Unmarshal([]byte(j), &d), l)
			return d
		}
	}
	t.Fatalf("the preflight printed no samples line:\n%s", out)
	return core.SampleDigest{}
}

// mega's, prim's and nemo's preflights digest the first 8 global batches their framework's own data
// path hands out for the launch (seed, SL, split, GBS, MBS, DP): Megatron's GPTDataset and pretraining
// sampler for mega's arguments and prim's Primus-merged config; for nemo, Megatron-Bridge's dataset
// provider over the validated ConfigContainer and the batch sampler Bridge's loader builds for each
// data-parallel rank. Each equals Rival's digest of its order, also for another split of the global
// batch over ranks (nemo DP 4 × MBS 2). A launch with another seed reads other samples, and the
// digests differ. Without the dataset the preflight prints no digest. All of it on each stack's trees.
func TestPreflightDigestsMegatronsSamples(t *testing.T) {
	for _, stack := range core.StackNames {
		t.Run(stack, func(t *testing.T) { digestsOnStack(t, stack) })
	}
}

func digestsOnStack(t *testing.T, stack string) {
	dir := upstreamDir(t)
	seed43 := func(l *core.Launch) { setArg(l.Preflight, "--seed", "43") }
	for _, c := range []struct {
		name, platform, fw, model, tok string
		layout                         func(f *core.Fair)
		edit                           func(t *testing.T, l *core.Launch)
		equal                          bool
	}{
		{"equal", hw.PlatformNVIDIA, "mega", "mistral", "mistral-7b-v0.1", nil, nil, true},
		{"equal", hw.PlatformAMD, "prim", "qwen", "qwen-2.5", nil, nil, true},
		{"other seed", hw.PlatformNVIDIA, "mega", "mistral", "mistral-7b-v0.1", nil, func(_ *testing.T, l *core.Launch) { seed43(l) }, false},
		{"equal", hw.PlatformNVIDIA, "nemo", "mistral", "mistral-7b-v0.1", nil, nil, true},
		{"equal dp4 mbs2", hw.PlatformNVIDIA, "nemo", "qwen", "qwen-2.5", func(f *core.Fair) { f.TP, f.DP, f.MBS = 2, 4, 2 }, nil, true},
		{"other seed", hw.PlatformNVIDIA, "nemo", "mistral", "mistral-7b-v0.1", nil, func(t *testing.T, l *core.Launch) { setNemoSeed(t, l, 43) }, false},
	} {
		t.Run(c.platform+"/"+c.fw+"/"+c.name, func(t *testing.T) {
			r := request(t, c.platform, c.fw, c.model)
			r.Stack = stack
			r.Fair.SL, r.Fair.GA, r.Fair.TrainIters, r.Fair.WarmupSteps = 256, 2, 20, 2
			if c.layout != nil {
				c.layout(&r.Fair)
			}
			r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, c.model)
			r.DataPrefix, r.DataCacheDir = encodedCorpus(t, c.tok), t.TempDir()
			l, err := Build(r)
			require.NoError(t, err)
			if c.edit != nil {
				c.edit(t, &l)
			}
			out, err := runPreflight(t, dir, r, l)
			require.NoError(t, err, out)
			got := samplesLine(t, out)
			gbs := int64(r.Fair.MBS * r.Fair.DP * r.Fair.GA)
			require.Equal(t, 8*gbs, got.Samples, "8 global batches")
			want := rivalSamples(t, r.DataPrefix, r.Fair, got.Samples)
			t.Logf("%s: %d samples, sha256 %s (Rival's %s)", c.fw, got.Samples, got.SHA256, want)
			if c.equal {
				assert.Equal(t, want, got.SHA256, "the framework reads Rival's order")
			} else {
				assert.NotEqual(t, want, got.SHA256)
			}
		})
	}
	for _, fw := range []string{"mega", "nemo"} {
		t.Run(fw+"/no dataset", func(t *testing.T) {
			r := request(t, hw.PlatformNVIDIA, fw, "mistral")
			r.Stack = stack
			r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, "mistral")
			l, err := Build(r)
			require.NoError(t, err)
			out, err := runPreflight(t, dir, r, l)
			require.NoError(t, err, out)
			assert.Contains(t, out, "preflight ok: ")
			assert.NotContains(t, out, "preflight samples:")
		})
	}
}

// setNemoSeed sets the data order's seed (dataset.random_seed) and the model's (rng.seed) in a nemo
// launch's Bridge configuration.
func setNemoSeed(t *testing.T, l *core.Launch, seed int) {
	var cfg map[string]map[string]any
	require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &cfg))
	cfg["dataset"]["random_seed"], cfg["rng"]["seed"] = seed, seed
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	l.Files[nemo.ConfigName] = b
}
