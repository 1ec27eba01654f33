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
	lengths := make([]int32, ds.Sequences())
	for i := range lengths {
		lengths[i] = ds.Length(i)
	}
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

// mega's and prim's preflights digest the first 8 global batches Megatron's own GPTDataset and
// pretraining sampler hand out for the launch's arguments (seed, SL, split, GBS, MBS, DP; prim's
// through Primus's merged config): Rival's digest of its order. A launch with another seed reads
// other samples, and the digests differ. Without the dataset the preflight prints no digest.
func TestPreflightDigestsMegatronsSamples(t *testing.T) {
	dir := upstreamDir(t)
	for _, c := range []struct {
		platform, fw, model, tok string
		edit                     func(l *core.Launch)
		equal                    bool
	}{
		{hw.PlatformNVIDIA, "mega", "mistral", "mistral-7b-v0.1", nil, true},
		{hw.PlatformAMD, "prim", "qwen", "qwen-2.5", nil, true},
		{hw.PlatformNVIDIA, "mega", "mistral", "mistral-7b-v0.1", func(l *core.Launch) { setArg(l.Preflight, "--seed", "43") }, false},
	} {
		t.Run(c.platform+"/"+c.fw+"/"+map[bool]string{true: "equal", false: "other seed"}[c.equal], func(t *testing.T) {
			r := request(t, c.platform, c.fw, c.model)
			r.Fair.SL, r.Fair.GA, r.Fair.TrainIters, r.Fair.WarmupSteps = 256, 2, 20, 2
			r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, c.model)
			r.DataPrefix, r.DataCacheDir = encodedCorpus(t, c.tok), t.TempDir()
			l, err := Build(r)
			require.NoError(t, err)
			if c.edit != nil {
				c.edit(&l)
			}
			out, err := runPreflight(t, dir, r, l)
			require.NoError(t, err, out)
			got := samplesLine(t, out)
			gbs := int64(r.Fair.MBS * r.Fair.DP * r.Fair.GA)
			require.Equal(t, 8*gbs, got.Samples, "8 global batches")
			want := rivalSamples(t, r.DataPrefix, r.Fair, got.Samples)
			if c.equal {
				assert.Equal(t, want, got.SHA256, "Megatron reads Rival's order")
			} else {
				assert.NotEqual(t, want, got.SHA256)
			}
		})
	}
	t.Run("no dataset", func(t *testing.T) {
		r := request(t, hw.PlatformNVIDIA, "mega", "mistral")
		r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, "mistral")
		l, err := Build(r)
		require.NoError(t, err)
		out, err := runPreflight(t, dir, r, l)
		require.NoError(t, err, out)
		assert.NotContains(t, out, "preflight samples:")
	})
}
