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
	"github.com/rivalbench/rival/frameworks/heldouttest"
	"github.com/rivalbench/rival/frameworks/mega"
	"github.com/rivalbench/rival/frameworks/nemo"
	"github.com/rivalbench/rival/frameworks/prim"
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

// A mega launch that evaluates runs pretrain_gpt.py through rival_megatron.py, and its preflight
// builds the same held-out view with Megatron's own GPTDataset (its shuffled one-epoch index over
// the held-out document) and digests the sequences every evaluation reads: Rival's windows, in
// order, on each stack's Megatron tree (with DP 2 on the current one: the evaluation batch split over
// ranks).
// Before the set is written the preflight prints no digest; an evaluation that would not read each
// held-out sequence once is refused, by Rival and by the preflight.
func TestPreflightDigestsMegatronsHeldOut(t *testing.T) {
	dir := upstreamDir(t)
	for _, stack := range core.StackNames {
		for _, c := range []struct {
			name   string
			layout func(f *core.Fair)
		}{
			{"dp1", nil},
			{"dp2", func(f *core.Fair) { f.TP, f.DP = 4, 2 }},
		} {
			// Each tree once (the package's time is near go test's limit): DP 2 on the current one.
			if (stack == core.StackCurrent) != (c.layout != nil) {
				continue
			}
			t.Run(stack+"/"+c.name, func(t *testing.T) {
				r := request(t, hw.PlatformNVIDIA, "mega", "mistral")
				r.Stack = stack
				r.Fair.SL, r.Fair.GA, r.Fair.TrainIters, r.Fair.WarmupSteps = 128, 2, 20, 2
				if c.layout != nil {
					c.layout(&r.Fair)
				}
				gbs := r.Fair.MBS * r.Fair.DP * r.Fair.GA
				r.Fair.GBS, r.Fair.EvalIntervalSamples, r.Fair.EvalSamples = gbs, 5*gbs, 2*gbs
				r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, "mistral")
				r.DataPrefix, r.DataCacheDir = encodedCorpus(t, "mistral-7b-v0.1"), t.TempDir()
				l, err := Build(r)
				require.NoError(t, err)
				require.Equal(t, mega.Evaluation, l.Evaluation)
				require.Contains(t, l.Files, mega.Wrapper)
				assert.Contains(t, strings.Join(l.Command, " "), "--eval-iters 2 --eval-interval 5")

				once := stack == core.StackCurrent // the refusals, on one tree
				if once {
					out, err := runPreflight(t, dir, r, l)
					require.NoError(t, err, out)
					assert.Nil(t, heldouttest.Line(t, strings.Split(out, "\n")), "no held-out set yet: nothing to digest")
				}
				want := heldouttest.Write(t, r.DataPrefix, filepath.Join(r.DataCacheDir, core.HeldOutName(r.Fair.EvalSamples, r.Fair.SL)), r.Fair.EvalSamples, r.Fair.SL)
				out, err := runPreflight(t, dir, r, l)
				require.NoError(t, err, out)
				got := heldouttest.Line(t, strings.Split(out, "\n"))
				require.NotNil(t, got, out)
				assert.Equal(t, core.SampleDigest{Samples: int64(r.Fair.EvalSamples), SHA256: want}, *got)

				if !once {
					return
				}
				setArg(l.Preflight, "--eval-iters", "3")
				out, err = runPreflight(t, dir, r, l)
				require.Error(t, err)
				assert.Contains(t, out, "preflight failed: Megatron's evaluation: ValueError: --eval-iters 3 x evaluation batch")
			})
		}
	}
	r := request(t, hw.PlatformNVIDIA, "mega", "mistral")
	gbs := r.Fair.MBS * r.Fair.DP * r.Fair.GA
	r.Fair.EvalIntervalSamples, r.Fair.EvalSamples = 4*gbs, gbs+r.Fair.MBS*r.Fair.DP
	_, err := Build(r)
	assert.ErrorContains(t, err, "EVAL_SAMPLES 72 and EVAL_INTERVAL_SAMPLES 256 must be multiples of the global batch 64")
	assert.ErrorContains(t, err, "try EVAL_SAMPLES 64")

	// prim does not evaluate, and says why.
	r = request(t, hw.PlatformAMD, "prim", "mistral")
	r.Fair.EvalIntervalSamples, r.Fair.EvalSamples = 4*gbs, gbs
	l, err := Build(r)
	require.NoError(t, err)
	assert.Empty(t, l.Evaluation)
	assert.Equal(t, prim.NoEvaluation, l.NoEvaluation)
}

// A nemo launch that evaluates passes the held-out set to rival_nemo.py, which patches
// rival_megatron.py's view (once over the held-out sequences) into Bridge's dataset provider; its
// preflight builds the validation split through Bridge's own provider, reads two evaluations from
// the batch sampler Bridge's loader builds for validation on each data-parallel rank (a cyclic
// sampler whose every epoch is one evaluation), requires each to read every held-out sequence once,
// and prints Rival's digest of them: on Bridge 0.3.0 and 0.5.0, with DP 2 × MBS 2 on one. Bridge's
// evaluation settings read every sequence once per evaluation. A view that repeats the sequences (as
// mega's does for Megatron's sequential sampler) is refused under Bridge's sampler.
func TestNemoPreflightDigestsTheHeldOut(t *testing.T) {
	dir := upstreamDir(t)
	for _, stack := range core.StackNames {
		t.Run(stack, func(t *testing.T) {
			r := request(t, hw.PlatformNVIDIA, "nemo", "qwen")
			r.Stack = stack
			r.Fair.SL, r.Fair.GA, r.Fair.TrainIters, r.Fair.WarmupSteps = 128, 2, 20, 2
			if stack == core.StackCurrent {
				r.Fair.TP, r.Fair.DP, r.Fair.MBS = 4, 2, 2
			}
			gbs := r.Fair.MBS * r.Fair.DP * r.Fair.GA
			r.Fair.GBS, r.Fair.EvalIntervalSamples, r.Fair.EvalSamples = gbs, 5*gbs, 2*gbs
			r.OutputDir, r.TokenizerPath = t.TempDir(), tokenizerDir(t, "qwen")
			r.DataPrefix, r.DataCacheDir = encodedCorpus(t, "qwen-2.5"), t.TempDir()
			l, err := Build(r)
			require.NoError(t, err)
			require.Equal(t, nemo.Evaluation, l.Evaluation)
			require.Contains(t, l.Files, mega.Wrapper)
			var cfg map[string]map[string]any
			require.NoError(t, json.Unmarshal(l.Files[nemo.ConfigName], &cfg))
			eval := cfg["train"]
			if v, ok := cfg["validation"]; ok {
				eval = v
			}
			assert.EqualValues(t, 2, eval["eval_iters"])
			assert.EqualValues(t, 5, eval["eval_interval"])
			assert.Contains(t, strings.Join(l.Command, " "), "--held-out "+r.DataCacheDir)

			want := heldouttest.Write(t, r.DataPrefix, filepath.Join(r.DataCacheDir, core.HeldOutName(r.Fair.EvalSamples, r.Fair.SL)), r.Fair.EvalSamples, r.Fair.SL)
			out, err := runPreflight(t, dir, r, l)
			require.NoError(t, err, out)
			got := heldouttest.Line(t, strings.Split(out, "\n"))
			require.NotNil(t, got, out)
			assert.Equal(t, core.SampleDigest{Samples: int64(r.Fair.EvalSamples), SHA256: want}, *got)

			if stack != core.StackPrevious {
				return
			}
			// Megatron's repeating view under Bridge's cyclic sampler: an evaluation would read a
			// random part of the repeats, and the preflight refuses it.
			script := string(l.Files[nemo.ScriptName])
			require.Contains(t, script, "patch(prefix, n, repeat=False)")
			l.Files[nemo.ScriptName] = []byte(strings.Replace(script, "patch(prefix, n, repeat=False)", "patch(prefix, n, repeat=True)", 1))
			out, err = runPreflight(t, dir, r, l)
			require.Error(t, err, out)
			assert.Contains(t, out, "preflight failed: Bridge's validation over Rival's held-out set: ValueError: evaluation 1 reads held-out positions")
		})
	}
}
