package training

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The NeMo line is frameworks/logparse/testdata/real/nemo2-bionemo.log's: NeMo
// shows its global_step and reduced_train_loss, with the configured total.
func TestStepProgressNeMoLine(t *testing.T) {
	var b screen
	p := newStepProgress(&b, "train", 150, 128)
	t0 := time.Now()
	p.start, p.now = t0, func() time.Time { return t0.Add(20 * time.Second) }
	p.line("Training epoch 0, iteration 0/149 | lr: 3e-05 | consumed_samples: 1 | global_batch_size: 1 | global_step: 0 | reduced_train_loss: 1.3 | train_step_timing in s: 0.03146")
	b.Reset()
	p.now = func() time.Time { return t0.Add(140 * time.Second) } // 120 steps in 120 s
	p.line("Training epoch 0, iteration 120/149 | lr: 3e-05 | consumed_samples: 121 | global_batch_size: 1 | global_step: 120 | reduced_train_loss: 1.233 | train_step_timing in s: 0.03146 | val_loss: 4.106")
	assert.Equal(t, "\r\033[K  train: step 120/150, loss 1.233, ETA 30s", b.String())
}

// A TorchTitan validation line is not a training step: its loss is not the
// training loss the summary ends with.
func TestStepProgressSkipsTorchTitanValidation(t *testing.T) {
	var b bytes.Buffer
	p := newStepProgress(&b, "train", 10, 128)
	p.line("step: 10  loss: 5.0000  memory: 48.87GiB(51.44%)  tps: 4,376  tflops: 253.41  mfu: 25.62%")
	p.line("validate step: 10  loss: 3.2000  memory: 48.87GiB(51.44%)")
	p.finish(nil)
	assert.Contains(t, b.String(), "loss 5.000 → 5.000")
}
