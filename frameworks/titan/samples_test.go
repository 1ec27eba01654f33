package titan

import (
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/tokenizer"
)

// dataMount is where the dataset and sample orders of TestPreflightDigestsTheDataloadersSamples
// are in the container.
const dataMount = "/rival/data"

// encodeSample encodes the sample corpus (testdata/sample) with a tokenizer from tokenizer/testdata
// into dir/name, as Rival's encode task does, and returns the prefix on this host.
func encodeSample(t *testing.T, dir, name, tokDir string) string {
	t.Helper()
	tk, err := tokenizer.Load(filepath.Join("..", "..", "tokenizer", "testdata", tokDir, "tokenizer.json"))
	require.NoError(t, err)
	prefix := filepath.Join(dir, name)
	_, err = encode.File(context.Background(), []string{filepath.Join("..", "..", "testdata", "sample", "corpus.jsonl")}, prefix, encode.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    2, DType: indexed.DTypeForVocab(tk.VocabSize()),
	})
	require.NoError(t, err)
	return prefix
}

// megatronOrder is Rival's order for a run of f over prefix (gptorder, proven equal to Megatron's
// GPTDataset and sampler in gptorder's tests) with the seed given.
func megatronOrder(t *testing.T, prefix string, f core.Fair, seed int) (*gptorder.Indices, *indexed.Dataset) {
	t.Helper()
	ds, err := indexed.Open(prefix)
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	lengths := ds.Lengths()
	x, err := gptorder.Build(lengths, 0, len(lengths), gptorder.Order{Seed: uint32(seed), SeqLen: f.SL,
		NumSamples: int64(f.TrainIters) * int64(f.GBS), AddExtraToken: true})
	require.NoError(t, err)
	return x, ds
}

// samplesOf is the digest line a preflight printed, and whether it printed one.
func samplesOf(t *testing.T, lines []string) (core.SampleDigest, bool) {
	t.Helper()
	for _, l := range lines {
		if j, ok := strings.CutPrefix(l, "preflight samples: "); ok {
			var d core.SampleDigest
			require.NoError(t, json.Unmarshal([]byte(j), &d), l)
			return d, true
		}
	}
	return core.SampleDigest{}, false
}

// TestPreflightDigestsTheDataloadersSamples runs titan's preflight as a run does (the launch's
// command, working directory and environment, in the torch image with the pinned trees) on launches
// over the sample corpus encoded with the Mistral (uint16) and Qwen (int32) tokenizers, with the order
// files Rival writes before a run (gptorder) in the launch's DataCacheDir. The preflight builds one
// dataloader per data-parallel rank through the train spec's build_dataloader_fn and takes each
// rank's micro-batches as TorchTitan's trainer does; its SHA-256 of the first min(8, TRAIN_ITERS)
// global batches equals Rival's digest of the same samples of its order, on nvd and amd (through
// Primus's start-up path) of both stacks (TorchTitan v0.2.2 and Primus v26.5.1; v0.2.0 and 5fb7cc2e
// through Primus v26.2), for several DP, TP, PP and micro-batch layouts.
// Negative controls: another seed's order under the run's order file names, and a dataloader that
// gives each rank another rank's micro-batches, print another digest over the same count (the
// comparison before training stops such a run); without the dataset it prints no digest.
func TestPreflightDigestsTheDataloadersSamples(t *testing.T) {
	data := t.TempDir()
	corpus := map[string]string{
		hw.PlatformNVIDIA: encodeSample(t, data, "mistral", "mistral-7b-v0.1"),
		hw.PlatformAMD:    encodeSample(t, data, "qwen", "qwen-2.5"),
	}
	// One order folder per corpus: order files are named by seed, SL and sample count only.
	const orders, otherSeed = "order", "other-seed"
	for _, d := range []string{orders, otherSeed} {
		for pf := range corpus {
			require.NoError(t, os.MkdirAll(filepath.Join(data, d+"-"+pf), 0o755))
		}
	}
	layout := func(mbs, ga, tp, pp, dp, iters int) func(*core.Plan) {
		return func(p *core.Plan) {
			f := &p.Fair
			f.SL, f.WarmupSteps = 256, 2
			f.MBS, f.GA, f.TP, f.PP, f.DP, f.TrainIters = mbs, ga, tp, pp, dp, iters
			f.GBS = mbs * ga * dp
		}
	}
	type want int
	const (
		equal want = iota
		differs
		none
	)
	cases := []struct {
		name     string
		platform string
		edit     func(*core.Plan)
		order    string // the folder under data the launch's DataCacheDir names (per platform's corpus)
		files    func(t *testing.T, files map[string][]byte)
		want     want
	}{
		{"DP8", hw.PlatformNVIDIA, layout(1, 2, 1, 1, 8, 20), orders, nil, equal},
		{"TP2-PP2-DP2-MBS2", hw.PlatformNVIDIA, layout(2, 2, 2, 2, 2, 20), orders, nil, equal},
		{"TP2-DP4-MBS2-GA1", hw.PlatformNVIDIA, layout(2, 1, 2, 1, 4, 20), orders, nil, equal},
		{"4 iterations", hw.PlatformNVIDIA, layout(1, 2, 1, 1, 8, 4), orders, nil, equal},
		{"DP8", hw.PlatformAMD, layout(1, 2, 1, 1, 8, 20), orders, nil, equal},
		{"TP2-PP2-DP2-MBS2", hw.PlatformAMD, layout(2, 2, 2, 2, 2, 20), orders, nil, equal},
		{"another seed's order", hw.PlatformNVIDIA, layout(1, 2, 1, 1, 8, 20), otherSeed, nil, differs},
		{"another seed's order", hw.PlatformAMD, layout(1, 2, 1, 1, 8, 20), otherSeed, nil, differs},
		{"ranks swapped", hw.PlatformNVIDIA, layout(1, 2, 1, 1, 8, 20), orders,
			replaceIn(ScriptName, "range(self.dp_rank * self.mbs,", "range((self.dp_world - 1 - self.dp_rank) * self.mbs,"), differs},
		{"no dataset", hw.PlatformNVIDIA, layout(1, 2, 1, 1, 8, 20), orders, nil, none},
		{"no dataset", hw.PlatformAMD, layout(1, 2, 1, 1, 8, 20), orders, nil, none},
	}
	var cells []readbackCell
	wants := map[string]core.SampleDigest{}
	var kinds []want
	for _, stack := range core.StackNames {
		for _, c := range cases {
			i := len(cells)
			kinds = append(kinds, c.want)
			p := readbackPlan(t, stack, c.platform, "llama-proxy", i)
			c.edit(&p)
			name := stack + "/" + c.platform + "/" + c.name
			hostPrefix := corpus[c.platform]
			p.DataPrefix = path.Join(dataMount, filepath.Base(hostPrefix))
			if c.want == none {
				p.DataPrefix = path.Join(dataMount, "absent")
			}
			p.DataCacheDir = path.Join(dataMount, c.order+"-"+c.platform)
			x, ds := megatronOrder(t, hostPrefix, p.Fair, p.Fair.Seed)
			require.NoError(t, x.Write(filepath.Join(data, orders+"-"+c.platform))) // what tasks writes before the run
			if c.order == otherSeed {
				// Seed 43's indices under the names of the run's seed.
				o, _ := megatronOrder(t, hostPrefix, p.Fair, p.Fair.Seed+1)
				tmp := t.TempDir()
				require.NoError(t, o.Write(tmp))
				var src, dst [3]string
				src[0], src[1], src[2] = o.Order().Paths(tmp)
				dst[0], dst[1], dst[2] = x.Order().Paths(filepath.Join(data, otherSeed+"-"+c.platform))
				for k := range src {
					require.NoError(t, os.Rename(src[k], dst[k]))
				}
			}
			n := int64(min(8, p.Fair.TrainIters) * p.Fair.GBS)
			sha, err := x.SHA256(ds, n)
			require.NoError(t, err)
			wants[name] = core.SampleDigest{Samples: n, SHA256: sha}
			l, err := Build(p)
			require.NoError(t, err, name)
			cells = append(cells, readbackCell{name: name, plan: p, l: l, edit: c.files})
		}
	}
	out, codes := runReadbacks(t, cells, container.Mount{Source: data, Target: dataMount, ReadOnly: true})
	for i, c := range cells {
		t.Run(c.name, func(t *testing.T) {
			lines := out[c.name]
			require.Equal(t, 0, codes[c.name], strings.Join(lines, "\n"))
			got, found := samplesOf(t, lines)
			want := wants[c.name]
			switch kinds[i] {
			case none:
				assert.False(t, found, "no dataset, no digest: %s", strings.Join(lines, "\n"))
				return
			case equal:
				require.True(t, found, strings.Join(lines, "\n"))
				assert.Equal(t, want, got, "the dataloaders read Rival's order")
			case differs:
				require.True(t, found, strings.Join(lines, "\n"))
				assert.Equal(t, want.Samples, got.Samples, "the same count")
				assert.NotEqual(t, want.SHA256, got.SHA256, "other samples, another digest: the run is stopped")
			}
			t.Logf("%s: %d samples, sha256 %s (Rival's %s)", c.name, got.Samples, got.SHA256, want.SHA256)
		})
	}
}
