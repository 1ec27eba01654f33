package tasks

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

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
	for i := 1; i <= 3; i++ {
		p.line(megatronLine(i, 3, 250, 4, 10-float64(i)))
	}
	p.line("some other output")
	p.finish()
	out := b.String()
	assert.Equal(t, 1, strings.Count(out, "\n"), out)
	assert.Contains(t, out, "train cpu fsdp mistral-proxy: 3 steps in ")
	assert.Contains(t, out, "loss 9.000 → 7.000")
	assert.Contains(t, out, " tokens/s")
	assert.NotContains(t, out, "\r")
}

func TestStepProgressOnATerminalShowsRateLossAndETA(t *testing.T) {
	var b bytes.Buffer
	p := newStepProgress(&b, "train", 30, 128)
	p.live.tty = true
	p.start = time.Now().Add(-10 * time.Second)
	p.line(megatronLine(10, 30, 250, 4, 8.5))
	out := b.String()
	// 4 × 128 tokens in 0.25 s; 10 of 30 steps in 10 s leaves 20 s.
	assert.Equal(t, "\r\033[K  train: step 10/30, 250 ms/step, 2048 tokens/s, loss 8.500, ETA 20s", out)
	p.finish()
	assert.True(t, strings.HasSuffix(b.String(), "\r\033[K  train: 10 steps in 10s, 2048 tokens/s, loss 8.500 → 8.500\n"), b.String())
}

func TestETA(t *testing.T) {
	for _, tc := range []struct {
		done, total float64
		el          time.Duration
		want        string
	}{{0, 10, time.Second, "?"}, {5, 10, 10 * time.Second, "10s"}, {10, 10, time.Minute, "0s"}, {1, 100, time.Second, "1m39s"}} {
		assert.Equal(t, tc.want, eta(tc.done, tc.total, tc.el))
	}
}
