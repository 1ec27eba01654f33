package gptorder_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/tokenizer"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
)

const python = "/usr/bin/python3"

// requireOrSkip fails under RIVAL_REQUIRE_UPSTREAM=1 (CI) and skips otherwise.
func requireOrSkip(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("RIVAL_REQUIRE_UPSTREAM") == "1" {
		t.Fatalf("RIVAL_REQUIRE_UPSTREAM=1: "+format, args...)
	}
	t.Skipf(format, args...)
}

// megatronTrees are the pinned Megatron-LM trees under RIVAL_UPSTREAM_DIR (or
// the one RIVAL_MEGATRON_TREE names).
func megatronTrees(t *testing.T) []string {
	t.Helper()
	var trees []string
	if d := os.Getenv("RIVAL_UPSTREAM_DIR"); d != "" {
		for _, c := range []string{"megatron-b0cc2706", "megatron-3bec9aa9", "megatron-d0b3b775", "megatron-d3528a21"} {
			trees = append(trees, filepath.Join(d, c))
		}
	} else if d := os.Getenv("RIVAL_MEGATRON_TREE"); d != "" {
		trees = []string{d}
	}
	if len(trees) == 0 {
		requireOrSkip(t, `Megatron's own index builder runs on the pinned trees: eval "$(sh ../shared/upstream/unpack.sh /tmp/upstream)" (sets RIVAL_UPSTREAM_DIR)`)
	}
	for _, tr := range trees {
		if _, err := os.Stat(filepath.Join(tr, "megatron", "core", "datasets", "gpt_dataset.py")); err != nil {
			requireOrSkip(t, "%s is not a Megatron-LM tree: %v", tr, err)
		}
	}
	return trees
}

var (
	helpersMu    sync.Mutex
	helpersBuilt = map[string]string{} // helpers.cpp digest -> compiled module
)

// compileHelpers builds the tree's megatron/core/datasets/helpers.cpp as its
// Makefile does (pybind11 extension for this Python), once per distinct source.
func compileHelpers(t *testing.T, tree string) string {
	t.Helper()
	src := filepath.Join(tree, "megatron", "core", "datasets", "helpers.cpp")
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	sum := sha256.Sum256(data)
	key := hex.EncodeToString(sum[:])
	helpersMu.Lock()
	defer helpersMu.Unlock()
	if so, ok := helpersBuilt[key]; ok {
		return so
	}
	inc, err := exec.Command(python, "-m", "pybind11", "--includes").Output()
	if err != nil {
		requireOrSkip(t, "compiling Megatron's helpers.cpp needs pybind11 and g++ (apt-get install g++ python3-dev python3-pybind11): %v", err)
	}
	suffix, err := exec.Command(python+"-config", "--extension-suffix").Output()
	if err != nil {
		suffix = []byte(".so")
	}
	dir, err := os.MkdirTemp("", "rival-megatron-helpers")
	require.NoError(t, err)
	so := filepath.Join(dir, "helpers_cpp"+strings.TrimSpace(string(suffix)))
	args := append([]string{"-O3", "-Wall", "-shared", "-std=c++17", "-fPIC"}, strings.Fields(string(inc))...)
	out, err := exec.Command("g++", append(args, src, "-o", so)...).CombinedOutput()
	if err != nil {
		requireOrSkip(t, "g++ could not build %s (apt-get install g++ python3-dev python3-pybind11): %v\n%s", src, err, out)
	}
	helpersBuilt[key] = so
	return so
}

// encodeCorpus encodes the sample corpus with a bundled tokenizer, as `go run
// mage.go encode:file` does.
func encodeCorpus(t *testing.T, tokDir string, eod int32) string {
	t.Helper()
	tk, err := tokenizer.Load(filepath.Join("..", "tokenizer", "testdata", tokDir, "tokenizer.json"))
	require.NoError(t, err)
	prefix := filepath.Join(t.TempDir(), tokDir)
	_, err = encode.File(context.Background(), []string{filepath.Join("..", "testdata", "sample", "corpus.jsonl")}, prefix, encode.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    eod, DType: indexed.DTypeForVocab(tk.VocabSize()),
	})
	require.NoError(t, err)
	return prefix
}

// Rival's indices equal the arrays Megatron's own GPTDataset builds (its
// Python, its helpers.cpp compiled here, real NumPy) on real encoded
// datasets, for several seeds, sequence lengths, sample counts (one epoch;
// several with and without a separate final epoch) and splits, in both pinned
// trees; and the first samples that Megatron's sampler hands to each
// data-parallel rank digest to what Indices.Digest says.
func TestIndicesMatchMegatron(t *testing.T) {
	trees := megatronTrees(t)
	stubs, err := filepath.Abs(filepath.Join("..", "frameworks", "facts"))
	require.NoError(t, err)
	script, err := filepath.Abs(filepath.Join("testdata", "megatron_order.py"))
	require.NoError(t, err)
	datasets := map[string]string{
		"mistral": encodeCorpus(t, "mistral-7b-v0.1", 2), // uint16 tokens
		"qwen":    encodeCorpus(t, "qwen-2.5", 151643),   // int32 tokens
	}
	cases := []struct {
		data         string
		seed, sl     int
		samples      int64
		split        string
		dp, mbs, dig int
	}{
		{"mistral", 1234, 128, 300, "100,0,0", 1, 1, 8},  // part of one epoch
		{"mistral", 1, 128, 2000, "100,0,0", 2, 2, 16},   // 3 epochs, the last one apart
		{"mistral", 42, 128, 2200, "100,0,0", 4, 1, 16},  // 3 epochs shuffled together
		{"mistral", 7, 1000, 500, "100,0,0", 2, 1, 8},    // samples span many documents, 6 epochs
		{"mistral", 3, 257, 1000, "98,2,0", 2, 2, 8},     // a split that leaves documents out
		{"qwen", 1234, 96, 1500, "100,0,0", 2, 1, 8},     // int32 tokens
		{"qwen", 99, 2048, 64, "100,0,0", 1, 2, 4},       // longer than most documents
		{"mistral", 5, 64, 1523 * 2, "100,0,0", 1, 1, 2}, // exactly at an epoch boundary
	}
	// The table must reach both of Megatron's multi-epoch branches.
	var apart, together int
	defer func() {
		if !t.Failed() {
			assert.Positive(t, apart, "no case separates the final epoch")
			assert.Positive(t, together, "no multi-epoch case shuffles the final epoch with the others")
		}
	}()
	for _, tree := range trees {
		so := compileHelpers(t, tree)
		for _, c := range cases {
			name := fmt.Sprintf("%s/%s-seed%d-sl%d-n%d-%s", filepath.Base(tree), c.data, c.seed, c.sl, c.samples, c.split)
			t.Run(name, func(t *testing.T) {
				prefix := datasets[c.data]
				out := t.TempDir()
				cmd := exec.Command(python, script, tree, so, stubs, prefix, out, strconv.Itoa(c.seed), strconv.Itoa(c.sl),
					strconv.FormatInt(c.samples, 10), c.split, strconv.Itoa(c.dp), strconv.Itoa(c.mbs), strconv.Itoa(c.dig))
				stdout, err := cmd.Output()
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				require.NoError(t, err, stderr)
				var files map[string]string
				require.NoError(t, json.Unmarshal(stdout, &files), "%s", stdout)

				ds, err := indexed.Open(prefix)
				require.NoError(t, err)
				defer ds.Close()
				beg, end, err := gptorder.TrainRange(c.split, ds.Sequences())
				require.NoError(t, err)
				o := gptorder.Order{Seed: uint32(c.seed), SeqLen: c.sl, NumSamples: c.samples, AddExtraToken: true}
				x, err := gptorder.Build(ds.Lengths(), beg, end, o)
				require.NoError(t, err)
				t.Logf("%d epochs, final epoch apart: %v", x.Epochs, x.SeparateFinalEpoch)
				if x.SeparateFinalEpoch {
					apart++
				} else if x.Epochs > 1 {
					together++
				}

				mega := readMegatron(t, files)
				assert.Equal(t, mega.Document, x.Document, "document index")
				assert.Equal(t, mega.Sample, x.Sample, "sample index")
				assert.Equal(t, mega.Shuffle, x.Shuffle, "shuffle index")
				assert.Equal(t, mega.sampleDescr == "<i8", x.SampleWide, "sample index dtype %s", mega.sampleDescr)
				assert.Equal(t, mega.shuffleDescr == "<i8", x.ShuffleWide, "shuffle index dtype %s", mega.shuffleDescr)
				// Negative control: another seed's order is not Megatron's for this seed.
				o2 := o
				o2.Seed++
				other, err := gptorder.Build(ds.Lengths(), beg, end, o2)
				require.NoError(t, err)
				assert.NotEqual(t, mega.Shuffle, other.Shuffle, "the comparison tells seeds apart")

				raw, err := os.ReadFile(filepath.Join(out, "samples.bin"))
				require.NoError(t, err)
				sum := blake3.Sum256(raw)
				got, err := x.Digest(ds, int64(c.dig))
				require.NoError(t, err)
				assert.Equal(t, hex.EncodeToString(sum[:]), got, "digest of the first %d samples Megatron's sampler reads", c.dig)
			})
		}
	}
}

type megatronArrays struct {
	Document                  []int32
	Sample, Shuffle           []int64
	sampleDescr, shuffleDescr string
}

// readMegatron loads the .npy files Megatron wrote, through the package's own
// reader (so NumPy's own files exercise it) after writing them under Rival's
// names.
func readMegatron(t *testing.T, files map[string]string) megatronArrays {
	t.Helper()
	dir := t.TempDir()
	o := gptorder.Order{Seed: 0, SeqLen: 2, NumSamples: 1, AddExtraToken: true}
	doc, sample, shuffle := o.Paths(dir)
	var m megatronArrays
	for kind, dst := range map[string]string{"document": doc, "sample": sample, "shuffle": shuffle} {
		data, err := os.ReadFile(files[kind])
		require.NoError(t, err, "Megatron wrote no %s index", kind)
		require.NoError(t, os.WriteFile(dst, data, 0o644))
		descr := npyDescr(data)
		switch kind {
		case "sample":
			m.sampleDescr = descr
		case "shuffle":
			m.shuffleDescr = descr
		}
	}
	x, err := gptorder.Read(context.Background(), dir, o)
	require.NoError(t, err)
	m.Document, m.Sample, m.Shuffle = x.Document, x.Sample, x.Shuffle
	return m
}

func npyDescr(data []byte) string {
	s := string(data[:min(len(data), 128)])
	i := strings.Index(s, "'descr': '")
	if i < 0 {
		return ""
	}
	s = s[i+len("'descr': '"):]
	return s[:strings.IndexByte(s, '\'')]
}
