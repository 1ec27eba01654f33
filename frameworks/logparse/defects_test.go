package logparse

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bridgeLine is a Megatron-Bridge iteration line in the format of its training_log
// (2025), for step n of 50.
func bridgeLine(n int, ms float64) string {
	return fmt.Sprintf(" [2025-08-20 10:%02d:12] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): 663.5 | learning rate: 1.000000E-04 | global batch size:   512 | lm loss: 1.093504E+01 | loss scale: 1.0 | grad norm: 5.123 | number of skipped iterations:   0 | number of nan iterations:   0 |",
		n, n, 50, n*512, ms)
}

// wrap hard-wraps s at width columns, as a terminal paste does.
func wrap(s string, width int) string {
	var b strings.Builder
	for len(s) > width {
		b.WriteString(s[:width])
		b.WriteByte('\n')
		s = s[width:]
	}
	b.WriteString(s)
	return b.String()
}

func iv[T any](t *testing.T, p *T) T {
	t.Helper()
	require.NotNil(t, p)
	return *p
}

func TestHardWrappedLines(t *testing.T) {
	t.Run("85-column wrap is rejoined", func(t *testing.T) {
		var lines []string
		for n := 1; n <= 5; n++ {
			lines = append(lines, wrap(bridgeLine(n, 9000+float64(n)), 85))
		}
		log, err := Parse(strings.NewReader(strings.Join(lines, "\n")+"\n"), "")
		require.NoError(t, err)
		require.Len(t, log.Steps, 5)
		for i, s := range log.Steps {
			assert.Equal(t, i+1, s.Step)
			assert.InDelta(t, 9+float64(i+1)/1000, f64(t, s.StepTimeSeconds), 1e-9)
			assert.InDelta(t, 10.93504, f64(t, s.Loss), 1e-9)
		}
		assert.Equal(t, 0, log.Stats.CutLines)
	})
	t.Run("wrap at a segment boundary is rejoined", func(t *testing.T) {
		l := bridgeLine(10, 9093.2)
		i := strings.Index(l, " elapsed")
		in := l[:i] + "\n" + l[i:] + "\n"
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		require.Len(t, log.Steps, 1)
		assert.InDelta(t, 9.0932, f64(t, log.Steps[0].StepTimeSeconds), 1e-9)
	})
	t.Run("Megatron-Bridge PR #841 paste (no trailing spaces)", func(t *testing.T) {
		// the pasted log breaks keys inside words: "global batch" + "size:",
		// "number of s" + "kipped", "max alloca" + "ted:"
		log, err := ParseFile("testdata/corpus/megatron-bridge-pr841-wrapped.log", "")
		require.NoError(t, err)
		require.Len(t, log.Steps, 2)
		assert.Equal(t, 10, log.Steps[0].Step)
		assert.Equal(t, 20, log.Steps[1].Step)
		assert.False(t, log.Steps[0].NumberInferred)
		assert.InDelta(t, 13.2127, f64(t, log.Steps[0].StepTimeSeconds), 1e-9)
		assert.InDelta(t, 14.2603, f64(t, log.Steps[1].StepTimeSeconds), 1e-9)
		assert.Equal(t, 512, iv(t, log.Steps[1].GlobalBatchSize))
		assert.InDelta(t, 0.08797448, f64(t, log.Steps[1].Loss), 1e-12)
		// the excerpt ends with the Step Time line of step 30, whose iteration line
		// it does not hold
		assert.Equal(t, 1, log.Stats.CutLines)
		require.Len(t, log.Memory, 1)
		assert.InDelta(t, 12712.43603515625, f64(t, log.Memory[0].MaxAllocatedMiB), 1e-9)
		assert.Equal(t, MegatronBridge, log.Framework)
	})
	t.Run("Step Time lines are not numbered when iteration lines were cut", func(t *testing.T) {
		l := bridgeLine(10, 9093.2)
		i := strings.Index(l, " elapsed")
		// the fragment ends inside "consumed samples: 5120 |"
		in := "Step Time : 9.09s GPU utilization: 58.2TFLOP/s/GPU\n" + l[:i-4] + "\nunrelated\n" +
			"Step Time : 9.10s GPU utilization: 58.2TFLOP/s/GPU\n"
		_, err := Parse(strings.NewReader(in), "")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "iteration line")
	})
	t.Run("fragment without its continuation is flagged cut", func(t *testing.T) {
		l := bridgeLine(10, 9093.2)
		i := strings.Index(l, " elapsed")
		in := l[:i] + "\nsome other output\n" + bridgeLine(11, 9000) + "\n"
		var events []Event
		log, err := parse(strings.NewReader(in), "", "input", func(e Event) { events = append(events, e) })
		require.NoError(t, err)
		require.Len(t, log.Steps, 1)
		assert.Equal(t, 11, log.Steps[0].Step)
		assert.Equal(t, 1, log.Stats.CutLines)
		require.NotEmpty(t, events)
		assert.Equal(t, "cut", events[0].Action)
		assert.Equal(t, 10, events[0].Step)
	})
}

func nemoLine(it, total int, timing, tflops string) string {
	return fmt.Sprintf("Training epoch 0, iteration %d/%d | lr: 3e-05 | global_batch_size: 128 | global_step: %d | reduced_train_loss: 6.512 | train_step_timing in s: %s | consumed_samples: %d | TFLOPS_per_GPU: %s",
		it, total, it, timing, (it+1)*128, tflops)
}

func TestNeMoCutValues(t *testing.T) {
	t.Run("TFLOPS cut inside 1.253e+03", func(t *testing.T) {
		in := strings.Join([]string{
			nemoLine(0, 99, "6.251", "1.25e+03"),
			nemoLine(1, 99, "6.262", "1.251e+03"),
			nemoLine(2, 99, "6.243", "1.252e+03"),
			nemoLine(3, 99, "6.254", "1.2"), // cut: "1.253e+03"
		}, "\n")
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Len(t, log.Steps, 3)
		assert.Equal(t, 1, log.Stats.CutLines)
	})
	t.Run("step time cut after its point", func(t *testing.T) {
		in := nemoLine(0, 99, "6.251", "1.25e+03") + "\n" + strings.TrimSuffix(nemoLine(1, 99, "6.", ""), " | TFLOPS_per_GPU: ")
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Len(t, log.Steps, 1)
		assert.Equal(t, 1, log.Stats.CutLines)
	})
	t.Run("iteration 45/99 is step 46 of 100", func(t *testing.T) {
		log, err := Parse(strings.NewReader(nemoLine(45, 99, "6.251", "1.25e+03")), "")
		require.NoError(t, err)
		assert.Equal(t, 100, iv(t, log.Preamble.TrainIters))
		assert.Equal(t, 46, log.Steps[0].Step, "iteration 45 counts from 0")
	})
	t.Run("tokens per second and memory in bytes", func(t *testing.T) {
		line := nemoLine(5, 99, "6.251", "1.25e+03") + " | tokens_per_sec_per_gpu: 2.62e+03 | max_memory_reserved: 6.5e+10 | max_memory_allocated: 5.9e+10"
		log, err := Parse(strings.NewReader(line), "")
		require.NoError(t, err)
		s := log.Steps[0]
		assert.InDelta(t, 2620, f64(t, s.TokensPerSecondPerGPU), 1e-9)
		assert.InDelta(t, 6.5e10/(1<<20), f64(t, s.MemMaxReservedMiB), 1e-6)
		assert.InDelta(t, 5.9e10/(1<<20), f64(t, s.MemMaxAllocatedMiB), 1e-6)
		assert.Empty(t, s.Extra["tokens_per_sec_per_gpu"])
	})
}

func TestSequenceLengthPrinted(t *testing.T) {
	t.Run("primus: prefixed arguments", func(t *testing.T) {
		in := "[20260110 08:00:01][rank-0/8][INFO ] [-------arguments.py:412] :   seq_length ...................................... 4096\n" +
			"[20260110 08:00:01][rank-0/8][INFO ] [-------arguments.py:412] :   global_batch_size ............................... 256\n" +
			bridgeLine(1, 500) + "\n"
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Equal(t, 4096, iv(t, log.Preamble.SeqLength))
		assert.Equal(t, 256, iv(t, log.Preamble.GlobalBatchSize))
	})
	t.Run("primus: throughput extension", func(t *testing.T) {
		in := "[20260110 08:01:02][rank-0/8][INFO ] [---------trainer.py:1432] : [Patch:megatron.training_log] ThroughputAverageExtension initialized with seq_len: 4096 world_size: 8 log_avg_skip_iterations: 2 log_avg_reset_interval: 1000\n" +
			bridgeLine(1, 500) + "\n"
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Equal(t, 4096, iv(t, log.Preamble.SeqLength))
	})
	t.Run("torchtitan 2026 trainer line", func(t *testing.T) {
		in := "[rank0]:[titan] 2026-02-03 10:00:00,123 - root - INFO - Trainer is initialized with local batch size 160, global batch size 1280, gradient accumulation steps 1, sequence length 128, total steps 10 (warmup 2)\n" +
			"[rank0]:[titan] 2026-02-03 10:00:05,123 - root - INFO - step:  1  loss: 10.8125  grad_norm:  3.1250  memory:  5.12GiB(6.45%)  tps: 12,345  tflops: 10.21  mfu: 1.03%\n"
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Equal(t, 128, iv(t, log.Preamble.SeqLength))
		assert.Equal(t, 1280, iv(t, log.Preamble.GlobalBatchSize))
		assert.Equal(t, 160, iv(t, log.Preamble.MicroBatchSize))
	})
}

func TestFieldsPrinted(t *testing.T) {
	t.Run("bridge GPU utilization without MODEL_", func(t *testing.T) {
		in := "Step Time : 1.05s GPU utilization: 58.2TFLOP/s/GPU\n" + bridgeLine(1, 1050) + "\n"
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		assert.Equal(t, 0, log.Stats.CutLines)
		assert.Equal(t, MegatronBridge, log.Framework)
	})
	t.Run("step glued to a megabyte of progress bar", func(t *testing.T) {
		bar := strings.Repeat("Loading shards: 42%|████      | 42/100\r", (2<<20)/48)
		in := bar + strings.TrimPrefix(bridgeLine(1, 1050), " ") + "\n" + bridgeLine(2, 1040) + "\n"
		log, err := Parse(strings.NewReader(in), "")
		require.NoError(t, err)
		require.Len(t, log.Steps, 2)
		assert.Equal(t, 1, log.Steps[0].Step)
		assert.Equal(t, 0, log.Stats.LongLines)
	})
}

func TestLabels(t *testing.T) {
	mds := " iteration       10/     100 | consumed samples:          640 | consumed tokens:      1310720 | elapsed time per iteration (ms): 2071.2 | learning rate: 1.500E-04 | global batch size:    64 | lm loss: 7.801432E+00 | loss scale: 4096.0 | actual seqlen:  2048 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 30.900 | TFLOPs: 152.07 |\n"
	log, err := Parse(strings.NewReader(mds), "")
	require.NoError(t, err)
	assert.Equal(t, MegatronDeepSpeed, log.Framework)
	assert.InDelta(t, 152.07, f64(t, log.Steps[0].TFLOPsPerGPU), 1e-9)
	assert.Equal(t, 2048, iv(t, log.Preamble.SeqLength))
	fam, err := Canonical("megatron-deepspeed")
	require.NoError(t, err)
	assert.Equal(t, MegatronDeepSpeed, fam)
}

func TestMoEParameterCount(t *testing.T) {
	in := " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 3228954112\n" +
		"Number of parameters in transformer block in billions:  15.31\nTotal number of parameters in billions: 15.82\n" +
		bridgeLine(1, 500) + "\n"
	log, err := Parse(strings.NewReader(in), "")
	require.NoError(t, err)
	assert.Equal(t, int64(15_820_000_000), iv(t, log.Preamble.ParameterCount))
	assert.False(t, log.Preamble.ParameterCountExact)

	dense := " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 8030261248\nTotal number of parameters in billions: 8.03\n" + bridgeLine(1, 500) + "\n"
	log, err = Parse(strings.NewReader(dense), "")
	require.NoError(t, err)
	assert.Equal(t, int64(8030261248), iv(t, log.Preamble.ParameterCount))
	assert.True(t, log.Preamble.ParameterCountExact)
}

// TestMatchIteration checks the hand-written header matcher against the expression
// that specifies it.
func TestMatchIteration(t *testing.T) {
	for _, s := range []string{
		" [2024-04-06 02:55:45] iteration        2/     100 | consumed",
		"[2026-01-05 09:00:01.123457] iteration 1/ 2 |",
		" iteration      122/  250000 | consumed samples",
		"[2025-01-01T10:00:00,5]   iteration 3 /4|",
		"xiteration 1/ 2 |", "iteration1/2 |", "iteration 1/2", "iteration 1/ x |",
		"[not a time] iteration 5/ 6 |", "iteration 1234567890/ 2 |",
		"Validation: iteration 1/5", "foo iteration 7/8 | iteration 9/10 |",
	} {
		m := megatronIteration.FindStringSubmatchIndex(s)
		h, ok := matchIteration(s)
		if m != nil && (m[5]-m[4] > 9 || m[7]-m[6] > 9) {
			assert.False(t, ok, "numbers too long for a step: %s", s)
			continue
		}
		require.Equal(t, m != nil, ok, s)
		if !ok {
			continue
		}
		n, _ := integer(s[m[4]:m[5]])
		total, _ := integer(s[m[6]:m[7]])
		ts := ""
		if m[2] >= 0 {
			ts = s[m[2]:m[3]]
		}
		assert.Equal(t, iterationHeader{timestamp: ts, n: n, total: total, end: m[1]}, h, s)
	}
}

func FuzzMatchIteration(f *testing.F) {
	f.Add(" [2024-04-06 02:55:45] iteration        2/     100 |")
	f.Add("iteration 1/ 2 |")
	f.Fuzz(func(t *testing.T, s string) {
		m := megatronIteration.FindStringSubmatchIndex(s)
		h, ok := matchIteration(s)
		if m == nil {
			if ok {
				t.Fatalf("matcher accepts %q", s)
			}
			return
		}
		n, ok1 := integer(s[m[4]:m[5]])
		total, ok2 := integer(s[m[6]:m[7]])
		if !ok1 || !ok2 || m[5]-m[4] > 9 || m[7]-m[6] > 9 {
			return // numbers too long for a step: the matcher may refuse them
		}
		if !ok || h.n != n || h.total != total || h.end != m[1] {
			t.Fatalf("%q: matcher %+v, expression %v", s, h, m)
		}
	})
}
