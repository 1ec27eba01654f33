package fsdp

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/indexed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zeebo/blake3"
)

// orderFor is the sample order a configuration trains on: Megatron's for its seed, sequence
// length and TRAIN_ITERS × GBS samples, over the whole dataset (--split 100,0,0).
func orderFor(t testing.TB, c Config) (*gptorder.Indices, *indexed.Dataset) {
	t.Helper()
	ds, err := indexed.Open(c.DataPrefix)
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	world := max(1, c.NProcPerNode) * max(1, c.NNodes)
	lengths := make([]int32, ds.Sequences())
	for i := range lengths {
		lengths[i] = ds.Length(i)
	}
	o := gptorder.Order{Seed: uint32(c.Seed), SeqLen: c.SeqLen, NumSamples: int64(c.TrainIters * c.MicroBatch * c.GradAccum * world), AddExtraToken: true}
	x, err := gptorder.Build(lengths, 0, len(lengths), o)
	require.NoError(t, err)
	return x, ds
}

// writeOrder writes c's sample order into c.OrderDir, as Rival does before training; nothing
// when the dataset does not exist (the tests of a missing dataset).
func writeOrder(t testing.TB, c Config) {
	t.Helper()
	if _, err := os.Stat(c.DataPrefix + ".idx"); err != nil {
		return
	}
	x, _ := orderFor(t, c)
	require.NoError(t, x.Write(c.OrderDir))
}

// train.py's own data path reads Megatron's samples in Megatron's order: the first samples its
// ranks read, in global order, digest to what gptorder says Megatron's GPTDataset and
// MegatronPretrainingSampler deliver, whatever the split of the global batch into micro-batches,
// accumulation steps and ranks.
func TestTrainReadsMegatronOrder(t *testing.T) {
	needTorch(t) // numpy; the dump itself does not import torch
	data := proxyDataset(t, 2048)
	layouts := []struct{ world, mbs, ga int }{{1, 8, 1}, {1, 4, 2}, {2, 2, 2}, {4, 1, 2}, {8, 1, 1}}
	var digests []string
	for _, lay := range layouts {
		t.Run(strconv.Itoa(lay.world)+"x"+strconv.Itoa(lay.mbs)+"x"+strconv.Itoa(lay.ga), func(t *testing.T) {
			cfg := proxyConfig(t, data)
			cfg.TrainIters, cfg.WarmupSteps, cfg.MicroBatch, cfg.GradAccum, cfg.NProcPerNode = 40, 2, lay.mbs, lay.ga, lay.world
			writeOrder(t, cfg)
			const n = 3 * 8 // three global batches of 8
			dump := filepath.Join(t.TempDir(), "samples.bin")
			l := launchOrFail(t, cfg)
			l.Command = append(scriptOnly(l.Command), "--dump-samples", dump, "--dump-count", strconv.Itoa(n), "--dump-world", strconv.Itoa(lay.world))
			stdout, stderr, code := run(t, l)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			raw, err := os.ReadFile(dump)
			require.NoError(t, err)
			require.Len(t, raw, n*(cfg.SeqLen+1)*8)
			sum := blake3.Sum256(raw)
			x, ds := orderFor(t, cfg)
			want, err := x.Digest(ds, n)
			require.NoError(t, err)
			assert.Equal(t, want, hex.EncodeToString(sum[:]))
			digests = append(digests, want)
		})
	}
	for _, d := range digests[1:] {
		assert.Equal(t, digests[0], d, "the same global batches whatever the layout")
	}
}

// scriptOnly drops a spawn launch's --nproc-per-node, so the dump runs as one process.
func scriptOnly(argv []string) []string {
	for i, a := range argv {
		if a == "--nproc-per-node" {
			return append(append([]string(nil), argv[:i]...), argv[i+2:]...)
		}
	}
	return argv
}
