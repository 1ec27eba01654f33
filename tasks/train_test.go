package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

// scriptedExecutor stands in for a trainer: it prints Megatron-format
// iteration lines (the format Rival's fsdp trainer prints) or fails.
type scriptedExecutor struct {
	steps  int
	exit   int
	runs   atomic.Int64 // training launches
	checks atomic.Int64 // preflights (fsdp's train.py --check), answered as passing without a read-back
	block  bool         // wait for cancellation after the first line
	last   core.Launch
	lines  []string // printed before the steps
}

// echoDigest answers a preflight as a framework whose data path reads the order Rival wrote: with the
// digests the launch is held to (core.Launch.Samples, and HeldOut when it evaluates), when it carries them.
func echoDigest(l core.Launch, onLine func(string)) {
	if l.Samples != nil {
		onLine(fmt.Sprintf(`%s{"samples": %d, "sha256": %q}`, executor.SamplesPrefix, l.Samples.Samples, l.Samples.SHA256))
	}
	if l.HeldOut != nil {
		onLine(fmt.Sprintf(`%s{"samples": %d, "sha256": %q}`, executor.HeldOutPrefix, l.HeldOut.Samples, l.HeldOut.SHA256))
	}
}

func (s *scriptedExecutor) Kind() executor.Kind { return "scripted" }
func (s *scriptedExecutor) ImageDigest() string { return "" }
func (s *scriptedExecutor) Place(dirs []executor.PathMap) []executor.PathMap {
	return executor.Host{}.Place(dirs)
}
func (s *scriptedExecutor) Run(ctx context.Context, l core.Launch, maps []executor.PathMap, onLine func(string)) (executor.Info, error) {
	if n := len(l.Command); n > 0 && l.Command[n-1] == "--check" {
		s.checks.Add(1)
		echoDigest(l, onLine)
		onLine("preflight ok: scripted")
		return executor.Info{}, nil
	}
	s.runs.Add(1)
	s.last = l
	onLine("number of parameters: 12345")
	for _, l := range s.lines {
		onLine(l)
	}
	for i := 1; i <= s.steps; i++ {
		onLine(fmt.Sprintf("[2026-11-22 10:00:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): 0.1 | learning rate: 1.000000E-03 | global batch size: %5d | lm loss: %.6E | loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations:   0 | number of nan iterations:   0 |",
			i, i, s.steps, i*4, 100.0+float64(i), 4, 10.0-float64(i)*0.1))
		if s.block {
			<-ctx.Done()
			return executor.Info{ExitCode: -1}, fmt.Errorf("stopped: %w", ctx.Err())
		}
	}
	return executor.Info{ExitCode: s.exit}, nil
}

// demoDataset encodes a few documents with the bundled Mistral tokenizer.
func demoDataset(t *testing.T, w *Workspace) (*dag.Task, string, data.TokenizerSpec) {
	t.Helper()
	in := filepath.Join(w.root, "docs.jsonl")
	var b strings.Builder
	// Enough documents that the test split (a fifth) holds the demo's held-out set: 8 × 128 + 1 tokens.
	for i := 0; i < 250; i++ {
		fmt.Fprintf(&b, `{"text":"The cluster measured step %d again and again, so the loss went down and the numbers were fair."}`+"\n", i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	tok, err := w.data().ResolveTokenizer(mistralTok)
	require.NoError(t, err)
	tok.EOD = 2
	prefix := filepath.Join(w.root, "data", "docs")
	return w.data().EncodeTask(in, tok, prefix, 0.8, nil), prefix + "-train", tok
}

func newTrainInputs(t *testing.T, w *Workspace, ex executor.Executor) trainInputs {
	et, prefix, tok := demoDataset(t, w)
	cfg, err := w.config.with("test", demoConfig)
	require.NoError(t, err)
	return trainInputs{Run: training.Run{Platform: hw.PlatformCPU, Framework: "fsdp", Model: demoModel, Dataset: "docs",
		TrainPrefix: prefix, Tokenizer: tok, Encode: et, Host: hw.Host{Platform: hw.PlatformCPU}, Executor: ex}, Config: cfg}
}

// failedLogOf is where a failed run keeps its log: LOG.failed.log beside LOG.log.
func failedLogOf(logPath string) string { return strings.TrimSuffix(logPath, ".log") + ".failed.log" }

// trainTwoProcesses builds and runs one CPU training run with two data-parallel processes.
func trainTwoProcesses(t *testing.T, w *Workspace, ex executor.Executor) *dag.Task {
	t.Helper()
	in := newTrainInputs(t, w, ex)
	cfg, err := in.Config.with("two processes", map[string]string{"DP": "2", "GA": "1"})
	require.NoError(t, err)
	in.Config = cfg
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	return task
}

// withCPUFlags makes the host's CPU look like the one in testdata/cpuinfo/file
// (no-bf16.txt: a run trains in fp32).
func withCPUFlags(t *testing.T, file string) {
	t.Helper()
	old := cpuFlagsPath
	cpuFlagsPath = filepath.Join("testdata", "cpuinfo", file)
	t.Cleanup(func() { cpuFlagsPath = old })
}

// trainScripted builds and runs one training task with a scripted trainer.
func trainScripted(t *testing.T, w *Workspace, ex *scriptedExecutor) (trainInputs, *dag.Task) {
	t.Helper()
	in := newTrainInputs(t, w, ex)
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	return in, task
}

func TestTrainWritesValidResult(t *testing.T) {
	withCPUFlags(t, "no-bf16.txt")
	w, _ := newWorkspace(t, "")
	in, task := trainScripted(t, w, &scriptedExecutor{steps: 10})
	data, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	require.NoError(t, result.Validate(data))
	var r result.Result
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, hw.PlatformCPU, *r.Platform)
	assert.Equal(t, "fp32", r.TrainingConfig.Precision)
	require.NotNil(t, r.Provenance)
	assert.NotNil(t, r.Provenance.EntryScriptDigest)
	assert.Equal(t, "128", r.Provenance.Config["SL"])
	require.NotNil(t, r.Dataset.Fingerprint)
	m, err := training.ReadManifest(in.TrainPrefix)
	require.NoError(t, err)
	assert.Equal(t, m.Fingerprint.Digest.String(), *r.Dataset.Fingerprint)
	assert.Len(t, r.StepTimes, 10)
	// The sample order every framework reads, with the digest of its first global batches.
	require.NotNil(t, r.SampleOrder)
	assert.Equal(t, "megatron-gptdataset", r.SampleOrder.Order)
	assert.Equal(t, 128, r.SampleOrder.SequenceLength)
	assert.Regexp(t, `^[0-9a-f]{64}$`, r.SampleOrder.BLAKE3)
	assert.Equal(t, min(8*int64(in.Config.int("GBS")), r.SampleOrder.Samples), r.SampleOrder.DigestSamples)
	assert.FileExists(t, task.Outputs[1].Path, "the log is kept")
	assert.Equal(t, "train_cpu_fsdp_mistral-proxy_docs.json", filepath.Base(task.Outputs[0].Path))
}

func TestTrainWithUnchangedInputsIsACacheHit(t *testing.T) {
	withCPUFlags(t, "no-bf16.txt")
	w, _ := newWorkspace(t, "")
	ex := &scriptedExecutor{steps: 10}
	trainScripted(t, w, ex)
	r2 := &dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}
	task2, err := w.trainTask(newTrainInputs(t, w, ex))
	require.NoError(t, err)
	require.NoError(t, r2.Run(context.Background(), task2))
	assert.Equal(t, "tasks: 0 run, 2 cached", r2.Summary())
	assert.EqualValues(t, 1, ex.runs.Load(), "nothing runs")
}

func TestTrainWithForceRunsAgain(t *testing.T) {
	withCPUFlags(t, "no-bf16.txt")
	w, _ := newWorkspace(t, "")
	ex := &scriptedExecutor{steps: 10}
	trainScripted(t, w, ex)
	in := newTrainInputs(t, w, ex)
	var err error
	in.Config, err = in.Config.with("test", map[string]string{"FORCE": "1"})
	require.NoError(t, err)
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, (&dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}).Run(context.Background(), task))
	assert.EqualValues(t, 2, ex.runs.Load())
}

func TestTrainRepetitionIsItsOwnResult(t *testing.T) {
	withCPUFlags(t, "no-bf16.txt")
	w, _ := newWorkspace(t, "")
	ex := &scriptedExecutor{steps: 10}
	first, err := w.trainTask(newTrainInputs(t, w, ex))
	require.NoError(t, err)
	in := newTrainInputs(t, w, ex)
	in.RunIndex = 1
	second, err := w.trainTask(in)
	require.NoError(t, err)
	assert.Equal(t, "train_cpu_fsdp_mistral-proxy_docs_run2.json", filepath.Base(second.Outputs[0].Path))
	assert.NotEqual(t, first.Params["run"], second.Params["run"])
	assert.NotEqual(t, first.ID, second.ID)
}

func TestFailedTrainKeepsLogAndIsNotCached(t *testing.T) {
	w, _ := newWorkspace(t, "")
	ex := &scriptedExecutor{steps: 3, exit: 7}
	task, err := w.trainTask(newTrainInputs(t, w, ex))
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited with status 7")
	assert.Contains(t, err.Error(), ".failed.log")
	assert.NoFileExists(t, task.Outputs[0].Path)
	failed := failedLogOf(task.Outputs[1].Path)
	assert.FileExists(t, failed)
	b, _ := os.ReadFile(failed)
	assert.Contains(t, string(b), "iteration")
	ex.exit = 0
	r := &dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}
	task2, err := w.trainTask(newTrainInputs(t, w, ex))
	require.NoError(t, err)
	require.NoError(t, r.Run(context.Background(), task2))
	assert.Equal(t, "tasks: 1 run, 1 cached", r.Summary(), "the failure was not cached as a success")
}

func TestLogWithoutStepsFailsTheRun(t *testing.T) {
	w, _ := newWorkspace(t, "")
	task, err := w.trainTask(newTrainInputs(t, w, &scriptedExecutor{steps: 0}))
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), task)
	require.ErrorContains(t, err, "no training steps found")
	assert.FileExists(t, failedLogOf(task.Outputs[1].Path))
}

func TestCancelledTrainStopsAndIsNotCached(t *testing.T) {
	w, _ := newWorkspace(t, "")
	ex := &scriptedExecutor{steps: 5, block: true}
	task, err := w.trainTask(newTrainInputs(t, w, ex))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = w.runner.Run(ctx, task)
	require.Error(t, err)
	assert.NoFileExists(t, task.Outputs[0].Path)
}

func TestTrainRefusesInconsistentParallelism(t *testing.T) {
	w, _ := newWorkspace(t, "")
	in := newTrainInputs(t, w, &scriptedExecutor{})
	var err error
	// Two nodes of one process each cannot hold DP=1 (a CPU run has as
	// many processes per node as TP×PP×DP over NNODES asks).
	in.Config, err = in.Config.with("test", map[string]string{"NNODES": "2", "DP": "1"})
	require.NoError(t, err)
	_, err = w.trainTask(in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TP×PP×DP")
}

// TestTrainFSDPOnCPU trains the Mistral proxy for real with the host's
// PyTorch and checks the loss went down.
func TestTrainFSDPOnCPU(t *testing.T) {
	if err := checkTorch(context.Background(), "/usr/bin/python3"); err != nil {
		t.Skipf("skipping real CPU training: %v", err)
	}
	w, _ := newWorkspace(t, "")
	in := newTrainInputs(t, w, executor.Host{})
	var err error
	in.Config, err = in.Config.with("test", map[string]string{"TRAIN_ITERS": "12", "WARMUP_STEPS": "2", "SL": "64", "MBS": "2"})
	require.NoError(t, err)
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	data, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	var r result.Result
	require.NoError(t, json.Unmarshal(data, &r))
	require.Len(t, r.LossValues, 12)
	first, last := *r.LossValues[0], *r.LossValues[len(r.LossValues)-1]
	assert.Less(t, last, first, "the loss goes down")
	assert.Greater(t, r.PerformanceMetrics.TokensPerSecond, 0.0)
	require.NotNil(t, r.SampleOrder, "train.py read the sample order Rival wrote")
	assert.Equal(t, int64(12*in.Config.int("GBS")), r.SampleOrder.Samples)
	// train.py's preflight digested its first samples through its own data path: Rival's digest.
	require.NotNil(t, r.SampleOrder.FrameworkSHA256, "the preflight's digest is recorded")
	assert.Equal(t, r.SampleOrder.SHA256, *r.SampleOrder.FrameworkSHA256)
	// The preflight (train.py --check on the host) read back what the trainer builds.
	require.NotNil(t, r.EffectiveConfig, "an fsdp run records its effective configuration")
	assert.Equal(t, 12, r.EffectiveConfig.TrainIters)
	assert.Equal(t, 2, r.EffectiveConfig.LRWarmupIters)
	assert.Empty(t, r.EffectiveConfig.Unread)
	// The result says which path of the trainer ran, on which torch (docs/fsdp.md).
	require.NotNil(t, r.Framework.Version)
	assert.Regexp(t, `^rival frameworks/fsdp train\.py blake3:[0-9a-f]{64}; ran single on torch \d+\.\d+\S*, params fp32(, bf16 autocast)?, reduce none \(one process\), attention \S`, *r.Framework.Version)
}

// TestLogOnFullDiskFailsTheRun puts OUTPUT_DIR on a tiny tmpfs: saving the
// log fails with a clear error and nothing is cached.
func TestLogOnFullDiskFailsTheRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tiny tmpfs needs root")
	}
	w, _ := newWorkspace(t, "")
	out := filepath.Join(w.root, "small")
	require.NoError(t, os.MkdirAll(out, 0o755))
	if b, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", out).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs: %v %s", err, b)
	}
	t.Cleanup(func() { exec.Command("umount", out).Run() })
	cfgPath := filepath.Join(w.root, "config.env")
	require.NoError(t, os.WriteFile(cfgPath, []byte("OUTPUT_DIR="+out+"\n"), 0o644))
	w2, _ := newWorkspaceAt(t, w.root)
	task, err := w2.trainTask(newTrainInputs(t, w2, &scriptedExecutor{steps: 2000}))
	require.NoError(t, err)
	err = w2.runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no space left on device")
	assert.NoFileExists(t, task.Outputs[0].Path)
}

// The executor's kind enters a training task's key as its "executor" tool, spelled as it always was.
func TestTrainKeyNamesTheExecutor(t *testing.T) {
	w, _ := newWorkspace(t, "")
	task, err := w.trainTask(newTrainInputs(t, w, executor.Host{}))
	require.NoError(t, err)
	assert.Equal(t, "host", task.Tools["executor"])
}

// The closing line of a run gives the result's throughput: the figure in
// its result file (median step after the warm-up, per process here, with
// two processes), not a total of its own.
func TestClosingLineGivesTheResultsThroughput(t *testing.T) {
	withCPUFlags(t, "no-bf16.txt")
	w, log := newWorkspace(t, "")
	task := trainTwoProcesses(t, w, &scriptedExecutor{steps: 8})
	raw, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	var res struct {
		PerformanceMetrics struct {
			TokensPerSecondPerGPU float64 `json:"tokens_per_second_per_gpu"`
		} `json:"performance_metrics"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	require.Positive(t, res.PerformanceMetrics.TokensPerSecondPerGPU)
	var closing string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, ": 8 steps in ") {
			closing = l
		}
	}
	require.NotEmpty(t, closing, "the closing line:\n%s", log)
	assert.Contains(t, closing, fmt.Sprintf(", %.1f tokens/s/process,", res.PerformanceMetrics.TokensPerSecondPerGPU))
	assert.Equal(t, 1, strings.Count(closing, "tokens/s"), "one throughput figure: %s", closing)
}
