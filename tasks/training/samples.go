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

// MegatronSplit is the --split every Megatron-family launch passes: the whole dataset trains.
const MegatronSplit = "100,0,0"

// writeSampleOrder writes the run's sample order (Megatron's GPTDataset document, sample and
// shuffle indices for SEED, SL and TRAIN_ITERS × GBS samples) into the dataset fingerprint's cache
// folder, where fsdp's train.py and titan's extension read it, and returns what the result records:
// the order and the BLAKE3 and SHA-256 of the first digestBatches global batches. It sets the launch's
// Samples to the SHA-256, which each framework's preflight must print for the samples its own data
// path reads (docs/sample-order.md).
func (r *trainRun) writeSampleOrder() (*result.SampleOrder, error) {
	order, digest, err := WriteSampleOrder(r.absPrefix, r.cacheDir, r.in.Workload.Fair)
	if err != nil {
		return nil, fmt.Errorf("train %s: %w", r.name, err)
	}
	// The preflight (on this host, or the cluster job's first step) digests the same samples through
	// the framework's own data path; Preflight and the cluster job's preflight lines compare the two.
	r.launch.Samples = digest
	return order, nil
}

// WriteSampleOrder writes the sample order of f over the encoded dataset at absPrefix (Megatron's
// GPTDataset indices over the split every launch passes) into cacheDir, and returns what a result
// records of it and the digest of the first digestBatches global batches a preflight must match.
// train and train:check (when the dataset is encoded) both call it.
func WriteSampleOrder(absPrefix, cacheDir string, f core.Fair) (*result.SampleOrder, *core.SampleDigest, error) {
	if f.Seed < 0 || int64(f.Seed) > 1<<32-1 {
		return nil, nil, fmt.Errorf("SEED %d: Megatron's sample order seeds NumPy's RandomState, which takes [0, 2^32-1]", f.Seed)
	}
	ds, err := indexed.Open(absPrefix)
	if err != nil {
		return nil, nil, fmt.Errorf("sample order: %w", err)
	}
	defer ds.Close()
	lengths := ds.Lengths()
	beg, end, err := gptorder.TrainRange(MegatronSplit, len(lengths))
	if err != nil {
		return nil, nil, err
	}
	o := gptorder.Order{Seed: uint32(f.Seed), SeqLen: f.SL, NumSamples: int64(f.TrainIters) * int64(f.GBS), AddExtraToken: true}
	x, err := gptorder.Build(lengths, beg, end, o)
	if err != nil {
		return nil, nil, fmt.Errorf("sample order of %s: %w", absPrefix, err)
	}
	if err := x.Write(cacheDir); err != nil {
		return nil, nil, err
	}
	n := min(int64(digestBatches)*int64(f.GBS), o.NumSamples)
	digest, err := x.Digest(ds, n)
	if err != nil {
		return nil, nil, fmt.Errorf("sample digest: %w", err)
	}
	sha, err := x.SHA256(ds, n)
	if err != nil {
		return nil, nil, fmt.Errorf("sample digest: %w", err)
	}
	return &result.SampleOrder{
		Order: "megatron-gptdataset", Seed: int64(f.Seed), SequenceLength: f.SL, Samples: o.NumSamples,
		DigestSamples: n, BLAKE3: digest, SHA256: sha,
	}, &core.SampleDigest{Samples: n, SHA256: sha}, nil
}
