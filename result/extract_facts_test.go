package result

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// titanLog writes a TorchTitan log in its own print formats (train.py's
// "Trainer is initialized with ..." and parallel_dims.py's "Building N-D
// device mesh with NAMES, DIMS", torchtitan v0.2.0), steps as the real
// metrics line prints them.
func titanLog(t *testing.T, mesh string) string {
	t.Helper()
	var b strings.Builder
	pre := "[titan] 2025-10-20 10:00:00,000 - root - INFO - "
	fmt.Fprintf(&b, "%sBuilding %s\n", pre, mesh)
	fmt.Fprintf(&b, "%sTrainer is initialized with local batch size 1, global batch size 8, gradient accumulation steps 1, sequence length 8192, total steps 1000 (warmup 200)\n", pre)
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "%sstep: %2d  loss: %.4f  grad_norm:  9.6669  memory: 48.87GiB(51.44%%)  tps: 4,376  tflops: 253.41  mfu: 25.62%%\n", pre, i, 12.0-0.1*float64(i))
	}
	p := filepath.Join(t.TempDir(), "titan.log")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// TorchTitan prints its GPU count only as its device mesh and its run
// length as "total steps": extract reads both.
func TestExtractTorchTitanMeshAndTotalSteps(t *testing.T) {
	for _, tc := range []struct {
		mesh string
		gpus int
	}{
		{"1-D device mesh with ['dp_shard'], [8]", 8},
		{"2-D device mesh with ['dp_shard', 'tp'], [4, 2]", 8},
		{"3-D device mesh with ['pp', 'dp_shard', 'tp'], [2, 4, 2]", 16},
	} {
		t.Run(tc.mesh, func(t *testing.T) {
			r, err := Extract(titanLog(t, tc.mesh), envOf(map[string]string{"MODEL": "llama", "GPU": "H100 SXM", "PLATFORM": "nvd"}))
			require.NoError(t, err, "the GPU count comes from the device mesh")
			require.NotNil(t, r.TrainingConfig.NumGPUs)
			assert.Equal(t, tc.gpus, *r.TrainingConfig.NumGPUs)
			require.NotNil(t, r.TrainingConfig.TrainIters)
			assert.Equal(t, 1000, *r.TrainingConfig.TrainIters, "train_iters from total steps")
			assert.Equal(t, 8, *r.TrainingConfig.GlobalBatchSize)
		})
	}
}

// A NeMo progress line hard-wrapped over three lines (a terminal copy)
// gets NeMo's advice, not the Megatron "extract -v names the lines" one.
func TestExtractWrappedNeMoLineAdvice(t *testing.T) {
	data, err := os.ReadFile(logs + "real/nemo2-bionemo.log")
	require.NoError(t, err)
	line := strings.SplitN(string(data), "\n", 2)[0]
	require.Greater(t, len(line), 160)
	var b strings.Builder
	for range 3 {
		// A terminal 80 columns wide: the line continues on the next two.
		b.WriteString(line[:80] + "\n" + line[80:160] + "\n" + line[160:] + "\n")
	}
	p := filepath.Join(t.TempDir(), "nemo-wrapped.log")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	_, err = Extract(p, envOf(map[string]string{"SL": "1024", "GPUS": "1"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `put each "Training epoch E, iteration i/N | ..." line back on one line`)
	assert.NotContains(t, err.Error(), "extract -v names")
}

// An MLPerf MLLOG log (":::MLLOG {json}" events, as mlperf-logging writes
// them) without timed blocks is refused with what extract would need (a
// log with them is read: TestExtractMLLOG in tasks).
func TestExtractRefusesMLLOGWithWhatItNeeds(t *testing.T) {
	var b strings.Builder
	for i, ev := range []string{
		`{"namespace": "", "time_ms": 1745000000000, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {"file": "train.py", "lineno": 10}}`,
		`{"namespace": "", "time_ms": 1745000000001, "event_type": "POINT_IN_TIME", "key": "global_batch_size", "value": 8, "metadata": {"file": "train.py", "lineno": 11}}`,
		`{"namespace": "", "time_ms": 1745000060000, "event_type": "INTERVAL_END", "key": "block_stop", "value": null, "metadata": {"file": "train.py", "lineno": 90, "first_epoch_num": 0}}`,
	} {
		fmt.Fprintf(&b, "[%d] :::MLLOG %s\n", i%2, ev)
	}
	p := filepath.Join(t.TempDir(), "mllog.log")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	_, err := Extract(p, envOf(map[string]string{"SL": "8192", "GPUS": "8"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MLPerf MLLOG events")
	assert.Contains(t, err.Error(), "no block_start/block_stop pair was found")
	assert.Contains(t, err.Error(), "or the trainer's own log of the same run")
}
