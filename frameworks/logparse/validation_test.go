package logparse

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Megatron's validation lines, read from a real published log: the periodic evaluations, then the
// end-of-training ones (old form) as their own sets. Expected values as printed.
func TestMegatronValidationLines(t *testing.T) {
	log, err := ParseFile("testdata/real/megatron-megablocks-rocm-blog-validation.log", "")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(log.Evaluations), 4)
	want := []struct {
		step int
		set  string
		loss float64
	}{{1000, "validation", 5.314413}, {2000, "validation", 4.583530}, {2000, "validation-final", 4.580711}, {2000, "test", 4.529140}}
	for i, w := range want {
		e := log.Evaluations[i]
		assert.Equal(t, w.step, e.Step)
		assert.Equal(t, w.set, e.Set)
		assert.Equal(t, w.loss, e.Loss)
	}
	// Step times 0.657 s over iterations 1..1000: the training time before the first evaluation.
	require.NotNil(t, log.Evaluations[0].TrainSeconds)
	assert.InDelta(t, 657.0, *log.Evaluations[0].TrainSeconds, 1e-9)
}

// Named validation sets (a Megatron-Bridge development branch) keep their names; the lines alone
// are no training log, and the refusal still says so.
func TestNamedValidationSets(t *testing.T) {
	b, err := os.ReadFile("testdata/evals/megatron-bridge-pr5076-validation.log")
	require.NoError(t, err)
	p := newParser()
	for _, l := range strings.Split(string(b), "\n") {
		p.lineNo++
		p.megatronEvalLine(l)
	}
	require.Len(t, p.evals, 3)
	assert.Equal(t, "validation-set-A", p.evals[0].Set)
	assert.Equal(t, 0, p.evals[0].Step)
	assert.Equal(t, 0.8543873, p.evals[0].Loss)
	assert.Equal(t, "validation-set-C", p.evals[2].Set)
	_, err = ParseFile("testdata/evals/megatron-bridge-pr5076-validation.log", "")
	require.ErrorIs(t, err, ErrNoSteps)
}

// TorchTitan's validator line, printed by every rank, is one evaluation per step.
func TestTitanValidationLines(t *testing.T) {
	in := strings.Join([]string{
		"[titan] 2026-01-16 02:42:30,000 - root - INFO - step:  1  loss: 12.5000  grad_norm:  9.0000  memory: 60.00GiB(80.00%)  tps: 70,000  tflops: 300.00  mfu: 30.00%",
		"[titan] 2026-01-16 02:42:36,857 - root - INFO - validate step:  1  loss: 12.4699  memory: 69.81GiB(88.17%)  tps: 74,599",
		"[titan] 2026-01-16 02:42:36,858 - root - INFO - validate step:  1  loss: 12.4699  memory: 69.81GiB(88.17%)  tps: 74,601",
		"[titan] 2026-01-16 02:42:40,000 - root - INFO - step:  2  loss: 12.0000  grad_norm:  8.0000  memory: 60.00GiB(80.00%)  tps: 70,000  tflops: 300.00  mfu: 30.00%",
	}, "\n")
	log, err := Parse(strings.NewReader(in), "")
	require.NoError(t, err)
	require.Len(t, log.Evaluations, 1)
	assert.Equal(t, Evaluation{Step: 1, Loss: 12.4699, Set: "validation", Line: 2}, log.Evaluations[0])
}

// NeMo 2.0 has no evaluation line: its val_loss rides on the training lines after Lightning's
// "Validation: iteration" lines. Read from a real log: validation ran after iteration 4 (step 5),
// over the step times of iterations 0-4 as printed.
func TestNeMoValLoss(t *testing.T) {
	log, err := ParseFile("testdata/real/nemo2-evo2-validation.log", "")
	require.NoError(t, err)
	assert.Equal(t, NeMo, log.Framework)
	require.Len(t, log.Evaluations, 1, "the same val_loss on later lines is the same evaluation")
	e := log.Evaluations[0]
	assert.Equal(t, 5, e.Step)
	assert.Equal(t, 1.264, e.Loss)
	require.NotNil(t, e.TrainSeconds)
	assert.InDelta(t, 2.193+0.3513+0.3506+0.3502+0.3505, *e.TrainSeconds, 1e-9)

	// A val_loss already printed on the first line read has no known step; a change is a new one.
	log, err = Parse(strings.NewReader(strings.Join([]string{
		"Training epoch 0, iteration 120/149 | lr: 3e-05 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | val_loss: 4.106",
		"Training epoch 0, iteration 121/149 | lr: 3e-05 | reduced_train_loss: 1.288 | train_step_timing in s: 0.03163 | val_loss: 4.106",
		"Training epoch 0, iteration 122/149 | lr: 3e-05 | reduced_train_loss: 1.333 | train_step_timing in s: 0.03215 | val_loss: 4.001",
	}, "\n")), "")
	require.NoError(t, err)
	require.Len(t, log.Evaluations, 1)
	assert.Equal(t, Evaluation{Step: 122, Loss: 4.001, Set: "validation", Line: 3, TrainSeconds: log.Evaluations[0].TrainSeconds}, log.Evaluations[0])
}

// Lines no run prints do not make an evaluation a result cannot hold: a negative step, or a step
// time so large that the training time before an evaluation would be infinite.
func TestEvaluationsStayFinite(t *testing.T) {
	log, err := Parse(strings.NewReader(strings.Join([]string{
		"[titan] 2026-01-16 02:42:30,000 - root - INFO - step:  1  loss: 12.5000  grad_norm:  9.0000  memory: 60.00GiB(80.00%)  tps: 70,000  tflops: 300.00  mfu: 30.00%",
		"[titan] 2026-01-16 02:42:36,857 - root - INFO - validate step: -1  loss: 12.4699  memory: 69.81GiB(88.17%)  tps: 74,599",
	}, "\n")), "")
	require.NoError(t, err)
	assert.Empty(t, log.Evaluations)

	log, err = Parse(strings.NewReader(strings.Join([]string{
		"Training epoch 0, iteration 0/9 | lr: 0 | reduced_train_loss: 1.371 | train_step_timing in s: 1e308",
		"Training epoch 0, iteration 1/9 | lr: 2e-05 | reduced_train_loss: 1.37 | train_step_timing in s: 1e308",
		"Validation: iteration 1/2",
		"Training epoch 0, iteration 2/9 | lr: 4e-05 | reduced_train_loss: 1.259 | train_step_timing in s: 0.35 | val_loss: 1.264",
	}, "\n")), "")
	require.NoError(t, err)
	require.Len(t, log.Evaluations, 1)
	require.NotNil(t, log.Evaluations[0].TrainSeconds)
	assert.False(t, math.IsInf(*log.Evaluations[0].TrainSeconds, 0))
}

// An MLLOG log numbered by metadata.step without global_batch_size keeps every evaluation, each at
// the step its eval events print.
func TestMLLOGEvaluationsWithoutBatchSize(t *testing.T) {
	ev := func(ms int, key, value, meta string) string {
		return fmt.Sprintf(`:::MLLOG {"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": %q, "value": %s, "metadata": {%s}}`, ms, key, value, meta)
	}
	log, err := Parse(strings.NewReader(strings.Join([]string{
		ev(0, "submission_benchmark", `"llama31_8b"`, ""),
		ev(1000, "run_start", "null", ""),
		ev(1000, "block_start", "null", `"samples_count": 100, "step": 0`),
		ev(5000, "block_stop", "null", `"samples_count": 100, "step": 10`),
		ev(5000, "eval_start", "null", `"samples_count": 100, "step": 10`),
		ev(6000, "eval_accuracy", "5.0", `"step": 10`),
		ev(6000, "block_start", "null", `"samples_count": 100, "step": 10`),
		ev(9000, "block_stop", "null", `"samples_count": 100, "step": 20`),
		ev(9000, "eval_start", "null", `"samples_count": 200, "step": 20`),
		ev(9500, "eval_accuracy", "4.0", `"step": 20`),
	}, "\n")), "")
	require.NoError(t, err)
	require.Len(t, log.Evaluations, 2)
	assert.Equal(t, 10, log.Evaluations[0].Step)
	assert.Equal(t, 20, log.Evaluations[1].Step)
	assert.Equal(t, int64(200), *log.Evaluations[1].Samples)
}
