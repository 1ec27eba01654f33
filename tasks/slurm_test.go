package tasks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/slurm/slurmtest"
	"github.com/rivalbench/rival/tasks/executor"
)

// slurmRun is a cpu fsdp run of the Mistral proxy handed to a real Slurm
// (slurmctld and slurmd on this host), NNODES=1 forced with SLURM=1.
func slurmRun(t *testing.T, extra map[string]string) (*Workspace, trainInputs) {
	t.Helper()
	if err := checkTorch(context.Background(), "/usr/bin/python3"); err != nil {
		t.Skipf("skipping the Slurm training path: %v", err)
	}
	cl := slurmtest.Start(t, slurmtest.Options{Nodes: 1})
	w, _ := newWorkspace(t, "")
	values := map[string]string{"SLURM": "1", "TRAIN_ITERS": "6", "WARMUP_STEPS": "1", "SL": "64", "MBS": "2"}
	for k, v := range extra {
		values[k] = v
	}
	in := newTrainInputs(t, w, executor.Host{})
	cfg, err := in.Config.with("test", values)
	require.NoError(t, err)
	ex, err := w.newSlurmExecutor(cfg, hw.PlatformCPU, hw.Host{Platform: hw.PlatformCPU}, "", "")
	require.NoError(t, err)
	ex.Cluster = cl.Client()
	in.Config, in.Executor = cfg, ex
	return w, in
}

func TestTrainThroughSlurm(t *testing.T) {
	w, in := slurmRun(t, nil)
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), task))
	data, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	require.NoError(t, result.Validate(data))
	var r result.Result
	require.NoError(t, json.Unmarshal(data, &r))
	require.NotNil(t, r.Provenance.SlurmJobID, "the job id is in the provenance")
	assert.NotEmpty(t, r.Provenance.NodeList)
	assert.Len(t, r.LossValues, 6)
	// The job's preflight step read back what the trainer builds, in the job's environment.
	require.NotNil(t, r.EffectiveConfig, "a Slurm run records its effective configuration")
	assert.Equal(t, 1e-5, r.EffectiveConfig.NormEps)
	assert.Equal(t, 64, r.EffectiveConfig.SeqLen)
	assert.Equal(t, []string{"bias", "norm"}, r.EffectiveConfig.NoDecay)
	assert.Empty(t, r.EffectiveConfig.Unread)
	// The preflight step digested train.py's first samples: Rival's digest, recorded next to it.
	require.NotNil(t, r.SampleOrder)
	require.NotNil(t, r.SampleOrder.FrameworkSHA256, "a Slurm run records its preflight's sample digest")
	assert.Equal(t, r.SampleOrder.SHA256, *r.SampleOrder.FrameworkSHA256)
	script, err := os.ReadFile(filepath.Join(filepath.Dir(task.Outputs[0].Path), "runs", strings.TrimSuffix(filepath.Base(task.Outputs[0].Path), ".json"), "job.sbatch"))
	require.NoError(t, err)
	assert.Contains(t, string(script), "#SBATCH")

	// The printed script is the submitted one.
	printed, err := w.slurmScript(in)
	require.NoError(t, err)
	assert.Equal(t, string(script), printed)
}

// A Slurm job whose preflight step digests other samples than Rival's order (a wrong order file in
// the shared cache folder) is cancelled before torchrun, naming both digests.
func TestSlurmJobStopsWhenTheTrainerReadsOtherSamples(t *testing.T) {
	w, in := slurmRun(t, nil)
	in.Executor = &orderSwap{Executor: in.Executor, seed: uint32(in.Config.int("SEED")) + 1, in: in}
	task, err := w.trainTask(in)
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Regexp(t, `preflight of Slurm job \S+ stopped the run \(job cancelled\): sample_order: the trainer's first 24 samples \(sha256 [0-9a-f]{64}\) are not those of Megatron's order Rival wrote \(sha256 [0-9a-f]{64}\)`, err.Error())
	assert.NoFileExists(t, task.Outputs[0].Path)
}

func TestFailedSlurmJobIsNotCached(t *testing.T) {
	// A job that cannot finish within TRAIN_TIMEOUT is stopped and fails.
	// (Data shorter than one sample, which this test once used, is no
	// failure: Megatron's sample order repeats the data over epochs, and
	// the fsdp trainer reads that order.)
	w, in := slurmRun(t, map[string]string{"TRAIN_ITERS": "100000", "TRAIN_TIMEOUT": "20s"})
	task, err := w.trainTask(in)
	require.NoError(t, err)
	err = w.runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TRAIN_TIMEOUT")
	assert.NoFileExists(t, task.Outputs[0].Path)
	assert.FileExists(t, failedLogOf(task.Outputs[1].Path))
}

func TestCancelledSlurmJob(t *testing.T) {
	w, in := slurmRun(t, map[string]string{"TRAIN_ITERS": "100000"})
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), in.Encode))
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	err = w.runner.Run(ctx, task)
	require.Error(t, err)
	assert.NoFileExists(t, task.Outputs[0].Path, "a cancelled job is not a result")
}

func TestSlurmRefusesInconsistentLayout(t *testing.T) {
	w, _ := newWorkspace(t, "")
	cfg, err := w.config.with("test", map[string]string{"NNODES": "2", "DP": "8"})
	require.NoError(t, err)
	host := hw.Host{Platform: hw.PlatformNVIDIA}
	for i := 0; i < 8; i++ {
		host.GPUs = append(host.GPUs, hw.GPU{Index: i})
	}
	_, err = w.newSlurmExecutor(cfg, hw.PlatformNVIDIA, host, "rival/nvd:latest", "")
	require.Error(t, err, "2 nodes × 8 GPUs is 16, but TP×PP×DP is 8")
}
