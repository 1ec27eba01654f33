package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/executor"
)

// checkExec answers an fsdp launch's preflight (train.py --check) with the workload as its read-back
// and the given sample digest line, and the training launch like a trainer.
type checkExec struct {
	scriptedExecutor
	samples string
	line    func() string // the digest line, computed when the preflight runs (after encoding)
	checks  int
}

func (c *checkExec) Run(ctx context.Context, l core.Launch, maps []executor.PathMap, onLine func(string)) (executor.Info, error) {
	if l.Command[len(l.Command)-1] == "--check" {
		c.checks++
		onLine(effective.LinePrefix + string(l.Workload))
		if c.line != nil {
			c.samples = c.line()
		}
		if c.samples != "" { // "": a preflight that prints no digest
			onLine("preflight samples: " + c.samples)
		}
		if l.HeldOut != nil { // the held-out set, read as Rival wrote it
			onLine(fmt.Sprintf(`preflight held-out: {"samples": %d, "sha256": %q}`, l.HeldOut.Samples, l.HeldOut.SHA256))
		}
		onLine("preflight ok: fsdp")
		return executor.Info{}, nil
	}
	return c.scriptedExecutor.Run(ctx, l, maps, onLine)
}

// A trainer whose preflight digests other samples than those of the order Rival wrote (Megatron's),
// or another count of them, stops before training with both digests; one whose digest cannot be
// read, or that prints none, stops too.
func TestTrainStopsWhenTheTrainerReadsOtherSamples(t *testing.T) {
	zeros := strings.Repeat("0", 64)
	for _, tc := range []struct{ name, line, err string }{
		{"other samples", `{"samples": 32, "sha256": "` + zeros + `"}`,
			"preflight of train_cpu_fsdp_mistral-proxy_docs stopped the run before it started: sample_order: the trainer's first 32 samples (sha256 " + zeros + ") are not those of Megatron's order Rival wrote (sha256 "},
		{"other count", `{"samples": 4, "sha256": "` + zeros + `"}`,
			"sample_order: the trainer's preflight digested its first 4 samples (sha256 " + zeros + "); Rival's digest of Megatron's order covers the first 32 (sha256 "},
		{"unreadable", `{"samples": 4, "sha256": "00"}`, `sample_order: the preflight's samples line`},
		{"no digest", "", `sample_order: the trainer's preflight printed no digest of the samples its data path reads (no "preflight samples:" line); Rival's digest of Megatron's order covers the first 32 (sha256 `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, _ := newWorkspace(t, "")
			ex := &checkExec{scriptedExecutor: scriptedExecutor{steps: 30}, samples: tc.line}
			in := newTrainInputs(t, w, ex)
			require.Equal(t, core.FSDP, in.Framework)
			require.Equal(t, 4, fairFromConfig(in.Config).GBS, "the digest covers 8 global batches: 32 samples")
			task, err := w.trainTask(in)
			require.NoError(t, err)
			err = w.runner.Run(context.Background(), task)
			require.Error(t, err)
			assert.Equal(t, 1, ex.checks, "the preflight ran")
			assert.Contains(t, err.Error(), tc.err)
			assert.Zero(t, ex.runs.Load(), "the training launch never starts")
		})
	}
}

// A preflight whose digest equals Rival's lets the run train, and the result records the
// framework's digest next to Rival's.
func TestTrainRecordsTheFrameworksSampleDigest(t *testing.T) {
	w, _ := newWorkspace(t, "")
	in := newTrainInputs(t, w, nil)
	// Rival's digest of the order it writes, computed apart from the run once the dataset is encoded
	// (gptorder's SHA256 is proven against dumps of Megatron's and the trainers' samples in gptorder's
	// tests).
	var want string
	digest := func() string {
		ds, err := indexed.Open(in.TrainPrefix)
		require.NoError(t, err)
		defer ds.Close()
		lengths := ds.Lengths()
		gbs := int64(fairFromConfig(in.Config).GBS)
		o := gptorder.Order{Seed: uint32(in.Config.int("SEED")), SeqLen: in.Config.int("SL"), NumSamples: int64(in.Config.int("TRAIN_ITERS")) * gbs, AddExtraToken: true}
		x, err := gptorder.Build(lengths, 0, ds.Sequences(), o)
		require.NoError(t, err)
		n := min(8*gbs, o.NumSamples)
		want, err = x.SHA256(ds, n)
		require.NoError(t, err)
		return fmt.Sprintf(`{"samples": %d, "sha256": %q}`, n, want)
	}
	ex := &checkExec{scriptedExecutor: scriptedExecutor{steps: 10}, line: digest}
	in.Executor = ex
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	data, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	require.NoError(t, result.Validate(data))
	var r result.Result
	require.NoError(t, json.Unmarshal(data, &r))
	require.NotNil(t, r.SampleOrder)
	assert.Equal(t, want, r.SampleOrder.SHA256)
	require.NotNil(t, r.SampleOrder.FrameworkSHA256)
	assert.Equal(t, want, *r.SampleOrder.FrameworkSHA256)
	assert.Contains(t, string(data), `"framework_sha256": "`+want+`"`)
}

// orderSwap runs launches on its executor after replacing the shuffle index Rival wrote with that of
// another seed: a wrong order file of the right shape.
type orderSwap struct {
	executor.Executor
	seed uint32
	in   trainInputs
}

func (s *orderSwap) Run(ctx context.Context, l core.Launch, maps []executor.PathMap, onLine func(string)) (executor.Info, error) {
	if err := s.swap(maps); err != nil {
		return executor.Info{}, err
	}
	return s.Executor.Run(ctx, l, maps, onLine)
}

func (s *orderSwap) swap(maps []executor.PathMap) error {
	ds, err := indexed.Open(s.in.TrainPrefix)
	if err != nil {
		return err
	}
	defer ds.Close()
	lengths := ds.Lengths()
	cfg := s.in.Config
	o := gptorder.Order{Seed: s.seed, SeqLen: cfg.int("SL"), NumSamples: int64(cfg.int("TRAIN_ITERS") * fairFromConfig(cfg).GBS), AddExtraToken: true}
	other, err := gptorder.Build(lengths, 0, ds.Sequences(), o)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "other-order")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := other.Write(tmp); err != nil {
		return err
	}
	for _, m := range maps {
		if m.Role == "cache" {
			_, _, from := o.Paths(tmp)
			o.Seed = uint32(cfg.int("SEED"))
			_, _, to := o.Paths(m.Host)
			data, err := os.ReadFile(from)
			if err != nil {
				return err
			}
			return os.WriteFile(to, data, 0o644)
		}
	}
	return fmt.Errorf("no cache folder in %v", maps)
}

// train.py's own data path digests its first samples in the preflight: with the order Rival wrote
// the run trains and records train.py's digest; with a wrong order file it stops before training,
// naming both digests.
func TestTrainFSDPPreflightDigestsItsSamples(t *testing.T) {
	if err := checkTorch(context.Background(), "/usr/bin/python3"); err != nil {
		t.Skipf("skipping the fsdp preflight on the host: %v", err)
	}
	w, _ := newWorkspace(t, "")
	in := newTrainInputs(t, w, nil)
	var err error
	in.Config, err = in.Config.with("test", map[string]string{"TRAIN_ITERS": "2", "WARMUP_STEPS": "1", "SL": "64", "MBS": "2"})
	require.NoError(t, err)
	in.Executor = &orderSwap{Executor: executor.Host{}, seed: uint32(in.Config.int("SEED")) + 1, in: in}
	task, err := w.trainTask(in)
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Regexp(t, `sample_order: the trainer's first 8 samples \(sha256 [0-9a-f]{64}\) are not those of Megatron's order Rival wrote \(sha256 [0-9a-f]{64}\)`, err.Error())
}

// train:check cpu fsdp runs the trainer's own check on the host, before any data is encoded, and
// compares its read-back with the workload field by field.
func TestTrainCheckFSDPOnCPU(t *testing.T) {
	if err := checkTorch(context.Background(), "/usr/bin/python3"); err != nil {
		t.Skipf("skipping the fsdp check on the host: %v", err)
	}
	w, log := newWorkspace(t, "")
	require.NoError(t, w.CheckTarget(context.Background(), "cpu", "fsdp", "mistral-proxy"))
	assert.Contains(t, log.String(), "fsdp × mistral-proxy: preflight ok: fsdp train.py built the decoder on the meta device")
	assert.Contains(t, log.String(), fmt.Sprintf("  effective configuration equals the workload, field by field (%d fields)", len(effective.Fields())))
	assert.Contains(t, log.String(), "is not encoded: split, sample order and what the framework reads are checked by train (run encode first to check them here)")
}

// With the dataset encoded, train:check writes Rival's sample order where the run would and the
// trainer's own data path must read the same first samples: the check says so with the digest
// (a different digest fails the check as it fails train: training.Preflight compares both).
func TestTrainCheckChecksTheEncodedData(t *testing.T) {
	if err := checkTorch(context.Background(), "/usr/bin/python3"); err != nil {
		t.Skipf("skipping the fsdp check on the host: %v", err)
	}
	w, log := newWorkspace(t, "TRAIN_ITERS=4\nWARMUP_STEPS=1\nSL=64\n")
	prefix := w.data().DatasetPrefix(w.config.get("DATASET"), "mistral", "train")
	encodedPrefix(t, w, prefix)
	require.NoError(t, w.CheckTarget(context.Background(), "cpu", "fsdp", "mistral-proxy"))
	assert.Regexp(t, `  data: \S+-mistral-train \(split 100,0,0\), Rival's order \(seed 42, SL 64\): the framework reads the same first \d+ samples \(SHA-256 [0-9a-f]{12}\)`, log.String())
	assert.NotContains(t, log.String(), "is not encoded")
}
