package training

import (
	"fmt"
	"io"
	"time"

	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/internal/live"
	"github.com/rivalbench/rival/result"
)

// stepProgress follows a trainer's step lines, as logparse.ProgressLine
// reads them (Megatron-format, NeMo and TorchTitan lines): on a terminal one live line with the step, ms/step,
// tokens/s, the current loss and the ETA; at the end (and, off a terminal,
// only then) one line with the steps, time, the result's tokens/s/GPU and
// the loss from first to last step.
//
// The ETA is the time per step measured between step lines, from the first
// step line on: what came before it (the interpreter's start, imports,
// data loading, the first step's compilation) is not a step and does not
// repeat, so it does not count.
type stepProgress struct {
	live      *live.Line
	label     string
	unit      string // "GPU", or "process" for CPU runs
	total     int
	seqLen    int
	now       func() time.Time
	start     time.Time
	firstAt   time.Time // when the first step line came
	firstStep int       // its step
	step      int
	ms        float64
	tps       float64 // tokens/s of the last step
	loss      float64
	firstLoss float64
	hasLoss   bool
}

func newStepProgress(w io.Writer, label string, total, seqLen int) *stepProgress {
	p := &stepProgress{label: label, unit: "GPU", total: total, seqLen: seqLen, now: time.Now, start: time.Now()}
	p.live = live.NewClocked(w, func() time.Time { return p.now() })
	return p
}

func (p *stepProgress) line(l string) {
	pr, ok := logparse.ProgressLine(l)
	if !ok {
		return
	}
	at := p.now()
	if p.firstAt.IsZero() {
		p.firstAt, p.firstStep = at, pr.Step
	}
	p.step = pr.Step
	if pr.Total > 0 {
		p.total = pr.Total
	}
	if pr.Family == logparse.Megatron {
		// Its step time replaces the last one, and with the batch size
		// gives the tokens this step trained.
		p.ms = pr.StepTimeMs
		if pr.GlobalBatchSize > 0 && p.ms > 0 && p.seqLen > 0 {
			p.tps = float64(pr.GlobalBatchSize*p.seqLen) / (p.ms / 1000)
		}
	} else if pr.TokensPerSecond > 0 {
		p.tps = pr.TokensPerSecond
	}
	if pr.HasLoss {
		if !p.hasLoss {
			p.firstLoss = pr.Loss
		}
		p.loss, p.hasLoss = pr.Loss, true
	}
	s := fmt.Sprintf("%s: step %d/%d", p.label, p.step, p.total)
	if p.ms > 0 {
		s += fmt.Sprintf(", %.0f ms/step", p.ms)
	}
	if p.tps > 0 {
		s += fmt.Sprintf(", %.0f tokens/s", p.tps)
	}
	if p.hasLoss {
		s += fmt.Sprintf(", loss %.3f", p.loss)
	}
	p.live.Update(s + ", ETA " + live.ETA(float64(p.step-p.firstStep), float64(p.total-p.firstStep), at.Sub(p.firstAt)))
}

// finish writes the closing line. Its throughput is the result's own
// tokens_per_second_per_gpu (median step time after the warm-up, per GPU or
// per process), so the line and the result never disagree; pm is nil when
// the run left no result, and then the line gives none.
func (p *stepProgress) finish(pm *result.PerformanceMetrics) {
	if p.step == 0 {
		p.live.Clear()
		return
	}
	took := p.now().Sub(p.start)
	s := fmt.Sprintf("%s: %s in %s", p.label, english.Plural(p.step, "step"), took.Round(100*time.Millisecond))
	if pm != nil && pm.TokensPerSecondPerGPU > 0 {
		s += fmt.Sprintf(", %.1f tokens/s/%s", pm.TokensPerSecondPerGPU, p.unit)
	}
	if p.hasLoss {
		s += fmt.Sprintf(", loss %.3f → %.3f", p.firstLoss, p.loss)
	}
	p.live.Done(s)
}
