package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/result"
)

// digestBatches is how many global batches a run's sample digest covers.
const digestBatches = 8

// megatronSplit is the --split every Megatron-family launch passes: the whole dataset trains.
const megatronSplit = "100,0,0"

// writeSampleOrder writes the run's sample order (Megatron's GPTDataset document, sample and
// shuffle indices for SEED, SL and TRAIN_ITERS × GBS samples) into the dataset fingerprint's cache
// folder, where fsdp's train.py and titan's extension read it, and returns what the result records:
// the order and the BLAKE3 of the first digestBatches global batches, which are the samples mega,
// prim and nemo read through Megatron's own GPTDataset too (docs/sample-order.md).
func (r *trainRun) writeSampleOrder() (*result.SampleOrder, error) {
	f := fairFromConfig(r.cfg)
	if f.Seed < 0 || int64(f.Seed) > 1<<32-1 {
		return nil, fmt.Errorf("train %s: SEED %d: Megatron's sample order seeds NumPy's RandomState, which takes [0, 2^32-1]", r.name, f.Seed)
	}
	ds, err := indexed.Open(r.absPrefix)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample order: %w", r.name, err)
	}
	defer ds.Close()
	lengths := make([]int32, ds.Sequences())
	for i := range lengths {
		lengths[i] = ds.Length(i)
	}
	beg, end, err := gptorder.TrainRange(megatronSplit, len(lengths))
	if err != nil {
		return nil, fmt.Errorf("train %s: %w", r.name, err)
	}
	o := gptorder.Order{Seed: uint32(f.Seed), SeqLen: f.SL, NumSamples: int64(f.TrainIters) * int64(f.GBS), AddExtraToken: true}
	x, err := gptorder.Build(lengths, beg, end, o)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample order of %s: %w", r.name, r.absPrefix, err)
	}
	if err := x.Write(r.cacheDir); err != nil {
		return nil, fmt.Errorf("train %s: %w", r.name, err)
	}
	n := min(int64(digestBatches)*int64(f.GBS), o.NumSamples)
	digest, err := x.Digest(ds, n)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample digest: %w", r.name, err)
	}
	return &result.SampleOrder{
		Order: "megatron-gptdataset", Seed: int64(f.Seed), SequenceLength: f.SL, Samples: o.NumSamples,
		DigestSamples: n, BLAKE3: digest,
	}, nil
}

// checkSamples compares a preflight's digest of the first samples its trainer's own data path reads
// (nil: none reported) with the same samples of the order Rival wrote (Megatron's GPTDataset order):
// a trainer that would read other token sequences stops before it trains.
func (r *trainRun) checkSamples(ctx context.Context, got *PreflightSamples) error {
	if got == nil {
		return nil
	}
	f := fairFromConfig(r.cfg)
	o := gptorder.Order{Seed: uint32(f.Seed), SeqLen: f.SL, NumSamples: int64(f.TrainIters) * int64(f.GBS), AddExtraToken: true}
	x, err := gptorder.Read(ctx, r.cacheDir, o)
	if err != nil {
		return fmt.Errorf("train %s: sample order: %w", r.name, err)
	}
	if got.Samples > x.Samples() {
		return fmt.Errorf("train %s: the preflight digested %d samples; the order holds %d", r.name, got.Samples, x.Samples())
	}
	ds, err := indexed.Open(r.absPrefix)
	if err != nil {
		return fmt.Errorf("train %s: sample order: %w", r.name, err)
	}
	defer ds.Close()
	h := sha256.New()
	var tok []int32
	var buf []byte
	for i := range got.Samples {
		if tok, err = x.Tokens(ds, i, tok[:0]); err != nil {
			return fmt.Errorf("train %s: %w", r.name, err)
		}
		buf = buf[:0]
		for _, t := range tok {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(int64(t)))
		}
		h.Write(buf)
	}
	if want := hex.EncodeToString(h.Sum(nil)); got.SHA256 != want {
		return fmt.Errorf("train %s: preflight: the trainer's first %d samples (sha256 %s) are not those of Megatron's order Rival wrote (sha256 %s): it would train on other token sequences", r.name, got.Samples, got.SHA256, want)
	}
	return nil
}
