package fsdp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/internal/testlevel"
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
	lengths := ds.Lengths()
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

// The check digests the first global batches through the trainer's own data path: SHA-256 over the
// same bytes as gptorder's samples in Megatron's order, whatever the layout; a trainer that read
// the ranks' samples in another order digests differently; without the order it reports none.
func TestCheckDigestsTheSamplesItWillRead(t *testing.T) {
	needTorch(t)
	data := proxyDataset(t, 2048)
	for i, tc := range []struct {
		name          string
		world, mbs    int
		edit          [2]string
		same, noOrder bool
	}{
		{name: "one process", world: 1, mbs: 4, same: true},
		{name: "four ranks", world: 4, mbs: 1, same: true},
		{name: "ranks read out of order", world: 4, mbs: 1,
			edit: [2]string{"* args.micro_batch * world + rank * args.micro_batch + j", "* args.micro_batch * world + (world - 1 - rank) * args.micro_batch + j"}},
		{name: "no sample order yet", world: 1, mbs: 4, noOrder: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case starts PyTorch; a plain run keeps one right order and the wrong one.
			testlevel.Case(t, i, 0, 2)
			cfg := proxyConfig(t, data)
			cfg.OrderDir = t.TempDir()
			cfg.TrainIters, cfg.MicroBatch, cfg.GradAccum, cfg.NProcPerNode = 12, tc.mbs, 2, tc.world
			if !tc.noOrder {
				writeOrder(t, cfg)
			}
			if tc.edit[0] != "" {
				script := string(Script())
				require.Equal(t, 1, strings.Count(script, tc.edit[0]))
				require.NoError(t, os.WriteFile(cfg.ScriptPath, []byte(strings.Replace(script, tc.edit[0], tc.edit[1], 1)), 0o644))
			}
			l, err := CheckLaunch(cfg)
			require.NoError(t, err)
			stdout, stderr, code := run(t, l)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			var got struct {
				Samples int64  `json:"samples"`
				SHA256  string `json:"sha256"`
			}
			line := ""
			for _, l := range strings.Split(stdout, "\n") {
				if j, ok := strings.CutPrefix(l, "preflight samples: "); ok {
					line = j
				}
			}
			if tc.noOrder {
				assert.Empty(t, line, "no digest without the order")
				return
			}
			require.NotEmpty(t, line, stdout)
			require.NoError(t, json.Unmarshal([]byte(line), &got))
			gbs := tc.mbs * 2 * tc.world
			require.Equal(t, int64(8*gbs), got.Samples, "eight global batches")
			x, ds := orderFor(t, cfg)
			h := sha256.New()
			var tok []int32
			for i := range got.Samples {
				tok, err = x.Tokens(ds, i, tok[:0])
				require.NoError(t, err)
				for _, v := range tok {
					require.NoError(t, binary.Write(h, binary.LittleEndian, int64(v)))
				}
			}
			want := hex.EncodeToString(h.Sum(nil))
			if tc.same {
				assert.Equal(t, want, got.SHA256)
			} else {
				assert.NotEqual(t, want, got.SHA256)
			}
		})
	}
}
