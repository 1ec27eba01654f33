package training

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rivalbench/rival/result"
	"github.com/stretchr/testify/assert"
)

// megatronLine is a step line as Rival's fsdp trainer (and Megatron-LM) prints it.
func megatronLine(step, total int, ms float64, gbs int, loss float64) string {
	return fmt.Sprintf("[2026-11-23 19:30:%02d] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): %.1f | learning rate: 1.000000E-03 | global batch size: %5d | lm loss: %.6E | loss scale: 1.0 | grad norm: 1.000 |",
		step, step, total, step*gbs, ms, gbs, loss)
}

func TestStepProgressOffATerminalWritesOneLine(t *testing.T) {
	var b bytes.Buffer
	p := newStepProgress(&b, "train cpu fsdp mistral-proxy", 3, 128)
	p.unit = "process"
	for i := 1; i <= 3; i++ {
		p.line(megatronLine(i, 3, 250, 4, 10-float64(i)))
	}
	p.line("some other output")
	p.finish(&result.PerformanceMetrics{TokensPerSecond: 1322.2, TokensPerSecondPerGPU: 661.1})
	out := b.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.Contains(t, out, "train cpu fsdp mistral-proxy: 3 steps in ")
	assert.Contains(t, out, "loss 9.000 → 7.000")
	assert.Contains(t, out, ", 661.1 tokens/s/process,", "the result's figure, with its unit")
	assert.NotContains(t, out, "\r")
}

// The ETA is the time per step measured from the first step line on: the
// 25 s the interpreter took to start and load before step 1 do not repeat.
func TestStepProgressOnATerminalShowsRateLossAndETA(t *testing.T) {
	var b screen
	p := newStepProgress(&b, "train", 30, 128)
	t0 := time.Now()
	clock := t0
	p.start, p.now = t0, func() time.Time { return clock }
	at := func(d time.Duration, step int) string {
		clock = t0.Add(d)
		b.Reset()
		p.line(megatronLine(step, 30, 250, 4, 8.5))
		return b.String()
	}
	// Step 1 after 25 s of start-up: no step has been timed yet.
	assert.Equal(t, "\r\033[K  train: step 1/30, 250 ms/step, 2048 tokens/s, loss 8.500, ETA ?", at(25*time.Second, 1))
	// Steps 2-10 took 9 s, one a second: 20 steps left take 20 s (counting
	// from process start would say 34s/10 × 20 = 1m8s).
	assert.Equal(t, "\r\033[K  train: step 10/30, 250 ms/step, 2048 tokens/s, loss 8.500, ETA 20s", at(34*time.Second, 10))
	clock = t0.Add(54 * time.Second)
	b.Reset()
	p.finish(&result.PerformanceMetrics{TokensPerSecondPerGPU: 2048})
	assert.Equal(t, "\r\033[K  train: 10 steps in 54s, 2048.0 tokens/s/GPU, loss 8.500 → 8.500\n", b.String())
	b.Reset()
	p.finish(nil) // a run that left no result gives no throughput
	assert.NotContains(t, b.String(), "tokens/s")
}

// screen records what a terminal would be sent.
type screen struct{ bytes.Buffer }

func (*screen) IsTerminal() bool { return true }
