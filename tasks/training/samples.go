package training

import (
	"fmt"

	"github.com/rivalbench/rival/frameworks/core"
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
// the order and the BLAKE3 and SHA-256 of the first digestBatches global batches. It sets the launch's
// Samples to the SHA-256, which each framework's preflight must print for the samples its own data
// path reads (docs/sample-order.md).
func (r *trainRun) writeSampleOrder() (*result.SampleOrder, error) {
	f := r.in.Workload.Fair
	if f.Seed < 0 || int64(f.Seed) > 1<<32-1 {
		return nil, fmt.Errorf("train %s: SEED %d: Megatron's sample order seeds NumPy's RandomState, which takes [0, 2^32-1]", r.name, f.Seed)
	}
	ds, err := indexed.Open(r.absPrefix)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample order: %w", r.name, err)
	}
	defer ds.Close()
	lengths := ds.Lengths()
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
	sha, err := x.SHA256(ds, n)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample digest: %w", r.name, err)
	}
	// The preflight (on this host, or the cluster job's first step) digests the same samples through
	// the framework's own data path; Preflight and the cluster job's preflight lines compare the two.
	r.launch.Samples = &core.SampleDigest{Samples: n, SHA256: sha}
	return &result.SampleOrder{
		Order: "megatron-gptdataset", Seed: int64(f.Seed), SequenceLength: f.SL, Samples: o.NumSamples,
		DigestSamples: n, BLAKE3: digest, SHA256: sha,
	}, nil
}
