package gptorder_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/frameworks/titan"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/indexed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
)

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := blake3.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// titanTrees are the pinned TorchTitan trees RIVAL_TORCHTITAN_TREES names ("nvd=DIR,amd=DIR"), when
// the host's Python has torch to run TorchTitan's dataloader module; none otherwise (a failure under
// RIVAL_REQUIRE_UPSTREAM=1).
func titanTrees(t *testing.T) []string {
	t.Helper()
	var trees []string
	for _, kv := range strings.Split(os.Getenv("RIVAL_TORCHTITAN_TREES"), ",") {
		if _, dir, ok := strings.Cut(kv, "="); ok && dir != "" {
			trees = append(trees, dir)
		}
	}
	err := exec.Command(python, "-c", "import torch, numpy").Run()
	if len(trees) == 0 || err != nil {
		if os.Getenv("RIVAL_REQUIRE_UPSTREAM") == "1" {
			t.Fatalf("RIVAL_REQUIRE_UPSTREAM=1: TorchTitan's dataloader needs RIVAL_TORCHTITAN_TREES (%d trees) and torch in %s (%v)", len(trees), python, err)
		}
		t.Logf("titan's dataloader is not run: RIVAL_TORCHTITAN_TREES names %d trees; %s imports torch: %v", len(trees), python, err)
		return nil
	}
	return trees
}

// The five frameworks read the same first samples for one dataset, seed, sequence length and
// global batch: mega and nemo through Megatron Core's GPTDataset and sampler (b0cc2706 on the
// previous stack, d0b3b775 on the current one), prim through 3bec9aa9's and d3528a21's, fsdp through train.py's data path and titan through its extension's reader and through
// TorchTitan's own ParallelAwareDataloader (both pinned trees), each for its own micro-batch and
// data-parallel layout of the global batch. Their digests equal each other and the one Rival
// records in the result (Indices.Digest).
func TestFiveFrameworksReadTheSameSamples(t *testing.T) {
	trees := megatronTrees(t)
	stubs, err := filepath.Abs(filepath.Join("..", "frameworks", "facts"))
	require.NoError(t, err)
	script, err := filepath.Abs(filepath.Join("testdata", "megatron_order.py"))
	require.NoError(t, err)
	prefix := encodeCorpus(t, "mistral-7b-v0.1", 2)
	const seed, sl, gbs, iters = 1234, 256, 16, 20
	const n = 8 * gbs // what the result records
	ds, err := indexed.Open(prefix)
	require.NoError(t, err)
	defer ds.Close()
	o := gptorder.Order{Seed: seed, SeqLen: sl, NumSamples: iters * gbs, AddExtraToken: true}
	x, err := gptorder.Build(ds.Lengths(), 0, ds.Sequences(), o)
	require.NoError(t, err)
	want, err := x.Digest(ds, n)
	require.NoError(t, err)
	orderDir := t.TempDir()
	require.NoError(t, x.Write(orderDir)) // what tasks writes before training

	got := map[string]string{}
	// mega, nemo (b0cc2706) and prim (3bec9aa9): Megatron's own builder and sampler.
	for fw, lay := range map[string]struct {
		tree    string
		dp, mbs int
	}{
		"mega": {"megatron-b0cc2706", 4, 2}, "nemo": {"megatron-b0cc2706", 2, 1}, "prim": {"megatron-3bec9aa9", 8, 2},
		// The current stack's trees: Bridge 0.5.0's and Megatron-LM's on nvd, Primus v26.5.1's on amd.
		"mega current": {"megatron-d0b3b775", 4, 2}, "nemo current": {"megatron-d0b3b775", 2, 1}, "prim current": {"megatron-d3528a21", 8, 2},
	} {
		tree := ""
		for _, tr := range trees {
			if filepath.Base(tr) == lay.tree {
				tree = tr
			}
		}
		if tree == "" {
			requireOrSkip(t, "%s's tree %s is not under RIVAL_UPSTREAM_DIR", fw, lay.tree)
		}
		out := t.TempDir()
		cmd := exec.Command(python, script, tree, compileHelpers(t, tree), stubs, prefix, out, strconv.Itoa(seed), strconv.Itoa(sl),
			strconv.Itoa(iters*gbs), "100,0,0", strconv.Itoa(lay.dp), strconv.Itoa(lay.mbs), strconv.Itoa(n))
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", b)
		got[fw] = fileDigest(t, filepath.Join(out, "samples.bin"))
	}

	// fsdp: train.py's data path, 2 ranks, micro-batch 2, 4 accumulation steps.
	dir := t.TempDir()
	trainPy := filepath.Join(dir, fsdp.ScriptName)
	require.NoError(t, os.WriteFile(trainPy, fsdp.Script(), 0o644))
	dump := filepath.Join(dir, "fsdp.bin")
	b, err := exec.Command(python, trainPy, "--data-prefix", prefix, "--order-dir", orderDir,
		"--layers", "1", "--hidden", "64", "--ffn", "128", "--heads", "2", "--kv-heads", "1", "--vocab", "32000",
		"--seq-len", strconv.Itoa(sl), "--micro-batch", "2", "--grad-accum", "4", "--train-iters", strconv.Itoa(iters),
		"--seed", strconv.Itoa(seed), "--dump-samples", dump, "--dump-count", strconv.Itoa(n), "--dump-world", "2").CombinedOutput()
	require.NoError(t, err, "%s", b)
	got["fsdp"] = fileDigest(t, dump)

	// titan: the extension's per-rank dataloader, 4 ranks, local batch 1.
	ext := filepath.Join(dir, titan.ScriptName)
	require.NoError(t, os.WriteFile(ext, titan.Script(), 0o644))
	dump = filepath.Join(dir, "titan.bin")
	b, err = exec.Command(python, ext, "dump", prefix, orderDir, strconv.Itoa(sl), strconv.Itoa(seed),
		strconv.Itoa(iters*gbs), "1", "4", strconv.Itoa(n), dump).CombinedOutput()
	require.NoError(t, err, "%s", b)
	got["titan"] = fileDigest(t, dump)

	// titan again, through TorchTitan's own ParallelAwareDataloader from each pinned tree, as the
	// trainer and its preflight build it: 2 ranks, local batch 4.
	for _, tree := range titanTrees(t) {
		cfg := filepath.Join(t.TempDir(), titan.ConfigName)
		b, err := json.Marshal(titan.Config{DataPrefix: prefix, Seed: seed, OrderDir: orderDir, NumSamples: iters * gbs})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cfg, b, 0o644))
		out := filepath.Join(t.TempDir(), "titan-dataloader.bin")
		b, err = exec.Command(python, filepath.Join("..", "frameworks", "titan", "testdata", "titan_dataloader.py"), dir, tree, cfg,
			strconv.Itoa(sl), "4", "2", strconv.Itoa(n), out).CombinedOutput()
		require.NoError(t, err, "%s", b)
		got["titan dataloader "+filepath.Base(tree)] = fileDigest(t, out)
	}

	require.GreaterOrEqual(t, len(got), 5)
	for fw, d := range got {
		assert.Equal(t, want, d, "%s reads other samples than Megatron's order", fw)
	}
	// SHA256 digests the same bytes: what the preflights print.
	raw, err := os.ReadFile(dump)
	require.NoError(t, err)
	sum := sha256.Sum256(raw)
	want256, err := x.SHA256(ds, n)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(sum[:]), want256)
}
