package tasks

import (
	"fmt"
	"io"
	"time"

	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/frameworks/logparse"
)

// stepProgress follows a trainer's step lines, as logparse.ProgressLine
// reads them (Megatron-format, NeMo and TorchTitan lines): on a terminal one live line with the step, ms/step,
// tokens/s, the current loss and the ETA; at the end (and, off a terminal,
// only then) one line with the steps, time, tokens/s and the loss from
// first to last step.
type stepProgress struct {
	live      *liveLine
	label     string
	total     int
	seqLen    int
	start     time.Time
	step      int
	ms        float64
	tps       float64 // tokens/s of the last step
	tokens    float64 // tokens of all steps seen
	busy      float64 // their step times, seconds
	loss      float64
	firstLoss float64
	hasLoss   bool
}

func newStepProgress(w io.Writer, label string, total, seqLen int) *stepProgress {
	return &stepProgress{live: newLiveLine(w), label: label, total: total, seqLen: seqLen, start: time.Now()}
}

func (p *stepProgress) line(l string) {
	pr, ok := logparse.ProgressLine(l)
	if !ok {
		return
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
			p.tokens += float64(pr.GlobalBatchSize * p.seqLen)
			p.busy += p.ms / 1000
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
	p.live.Update(s + ", ETA " + eta(float64(p.step), float64(p.total), time.Since(p.start)))
}

func (p *stepProgress) finish() {
	if p.step == 0 {
		p.live.Clear()
		return
	}
	took := time.Since(p.start)
	s := fmt.Sprintf("%s: %s in %s", p.label, english.Plural(p.step, "step"), took.Round(100*time.Millisecond))
	if p.busy > 0 {
		s += fmt.Sprintf(", %.0f tokens/s", p.tokens/p.busy)
	}
	if p.hasLoss {
		s += fmt.Sprintf(", loss %.3f → %.3f", p.firstLoss, p.loss)
	}
	p.live.Done(s)
}
