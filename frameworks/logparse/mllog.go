package logparse

import (
	"fmt"
	"math"
	"strings"
)

// MLPerf is the MLPerf training reference's logging format (mlcommons/logging's mllog): one
// ":::MLLOG {json}" event per line, with namespace, time_ms, event_type (POINT_IN_TIME,
// INTERVAL_START, INTERVAL_END), key, value and metadata. Training is timed in blocks
// (block_start .. block_stop) between evaluations (eval_accuracy: the held-out loss).
//
// Submitters number blocks three ways (MLPerf Training v5.1, llama31_8b):
//   - NVIDIA's NeMo callbacks (NVIDIA, Dell, University of Florida): metadata.step is the
//     iteration at each end and samples_count is the block's length;
//   - AMD's Primus trainer: samples_count is the samples done before (block_start) and after
//     (block_stop) the block;
//   - Cisco's older NeMo callbacks: samples_count is the samples done before the block on both
//     events; its end is the next event's samples_count (eval_start, eval_accuracy, the next block).
//
// Periodic tracked_stats events carry train_step_time and reduced_train_loss (NVIDIA every 32
// steps, Cisco every step), a per-block train_step_time summary, or (AMD) the block's throughput.
// A block is one step here: numbered by the iteration it ends at, its time the block's wall time
// over its iterations, which is what the per-block summaries print.
const MLPerf = "mlperf"

// mllogLine reads one ":::MLLOG" event; it reports false when the JSON is unreadable.
func (p *parser) mllogLine(rest string) bool {
	i := strings.Index(rest, ":::MLLOG")
	ev, err := scanMLLOG(rest[i+len(":::MLLOG"):])
	if err != nil {
		p.ml.malformed++
		p.notef(-1, "skipped", "MLLOG event is not valid JSON: %v", err)
		return false
	}
	m := &p.ml
	m.events++
	if m.pending != nil && ev.hasSamples && ev.samples > m.pending.first && ev.key != "tracked_stats" {
		b := m.pending
		m.pending = nil
		p.mllogBlock(b.fromMS, b.toMS, b.first, ev.samples, b.loss)
	}
	intValue := func() (int, bool) {
		var f float64
		var ok bool
		if numberField(ev.value, &f, &ok, "value") != nil || !ok || f <= 0 || f > math.MaxInt32 || f != math.Trunc(f) {
			return 0, false
		}
		return int(f), true
	}
	switch ev.key {
	case "global_batch_size":
		if n, ok := intValue(); ok {
			m.gbs, m.gbsLine = &n, p.lineNo
		}
	case "max_sequence_length":
		if n, ok := intValue(); ok {
			m.seqLen, m.seqLine = &n, p.lineNo
		}
	case "submission_benchmark":
		m.run.Benchmark = stringValue(ev.value)
	case "submission_org":
		m.run.Org = stringValue(ev.value)
	case "submission_platform":
		m.run.Platform = stringValue(ev.value)
	case "target_accuracy":
		var f float64
		var ok bool
		if numberField(ev.value, &f, &ok, "value") == nil && ok {
			m.run.TargetLoss = &f
		}
	case "run_start":
		if ev.hasTime {
			t := ev.timeMS
			m.runStartMS = &t
		}
	case "run_stop":
		m.run.Status = strings.Clone(ev.status)
		if ev.hasTime && m.runStartMS != nil {
			if s := (ev.timeMS - *m.runStartMS) / 1000; s >= 0 && !math.IsInf(s, 0) {
				m.run.RunSeconds = &s
			}
		}
	case "block_start":
		m.loss = nil
		if ev.hasTime {
			m.open = &mllogEdge{ms: ev.timeMS, samples: ev.samples, step: ev.step, hasSamples: ev.hasSamples, hasStep: ev.hasStep}
		}
	case "block_stop":
		if m.open != nil && ev.hasTime {
			m.blockPairs++
			p.mllogStop(*m.open, mllogEdge{ms: ev.timeMS, samples: ev.samples, step: ev.step, hasSamples: ev.hasSamples, hasStep: ev.hasStep})
		}
		m.open = nil
	case "eval_start":
		if ev.hasSamples {
			x := ev.samples
			m.evalAt = &x
		}
	case "eval_stop":
		m.evalAt = nil
	case "eval_accuracy":
		if lossBenchmarks[m.run.Benchmark] {
			p.mllogEval(ev)
		} else if p.trace != nil {
			p.notef(-1, "skipped", "MLLOG eval_accuracy of benchmark %q: not a held-out loss Rival knows (%s)", m.run.Benchmark, "llama31_8b, llama31_405b, gpt3")
		}
	case "tracked_stats":
		// The per-block train_step_time and throughput are the log's own cross-checks of the
		// block's time (tests hold the two together); the periodic loss is the block's.
		st := trackedStats(ev.value)
		if st.hasLoss && m.open != nil {
			l := st.loss
			m.loss = &l
		}
	}
	return true
}

// mllogStop reads a finished block by its convention (see MLPerf).
func (p *parser) mllogStop(from, to mllogEdge) {
	m := &p.ml
	switch {
	case from.hasStep && to.hasStep:
		m.run.BlockConvention = "step"
		p.mllogSteps(from.ms, to.ms, from.step, to.step, m.loss)
	case m.gbs == nil:
		p.notef(-1, "skipped", "MLLOG block_stop before global_batch_size: its samples cannot be turned into iterations")
	case from.hasSamples && to.hasSamples && to.samples > from.samples:
		m.run.BlockConvention = "cumulative"
		p.mllogBlock(from.ms, to.ms, from.samples, to.samples, m.loss)
	case from.hasSamples:
		m.run.BlockConvention = "start-offset"
		m.pending = &mllogPendingBlock{fromMS: from.ms, toMS: to.ms, first: from.samples, loss: m.loss}
	default:
		p.notef(-1, "skipped", "MLLOG block without samples_count or step: where it starts and ends is unknown")
	}
	m.loss = nil
}

// mllogBlock adds a block numbered by samples (needs the global batch size).
func (p *parser) mllogBlock(fromMS, toMS, fromSamples, toSamples float64, loss *float64) {
	gbs := float64(*p.ml.gbs)
	p.mllogSteps(fromMS, toMS, fromSamples/gbs, toSamples/gbs, loss)
}

// mllogSteps adds a finished block of iterations fromStep..toStep as one step: its number the
// iteration it ends at, its time the block's wall time over its iterations (a mean: MLLOG prints
// no single step), its loss the last reduced_train_loss printed in it.
func (p *parser) mllogSteps(fromMS, toMS, fromStep, toStep float64, loss *float64) {
	iters := toStep - fromStep
	secs := (toMS - fromMS) / 1000
	if iters <= 0 || secs <= 0 || math.IsNaN(secs) || math.IsInf(secs, 0) || toStep > math.MaxInt32 {
		p.notef(-1, "skipped", "MLLOG block from iteration %g to %g in %g s: not a forward block", fromStep, toStep, secs)
		return
	}
	t := secs / iters
	st := Step{Step: int(math.Round(toStep)), StepTimeSeconds: &t, Loss: loss}
	if p.trace != nil {
		p.notef(st.Step, "read", "MLLOG block of %g iterations (%g to %g) in %.3f s: mean step time %.4f s", iters, fromStep, toStep, secs, t)
	}
	p.ml.blocks.add(p, st, 0, false, 0)
}

// mllogEval records an eval_accuracy event: its samples are those of the eval_start around it
// (the block's end), else its own samples_count.
func (p *parser) mllogEval(ev mllogFields) {
	m := &p.ml
	var loss float64
	var ok bool
	if numberField(ev.value, &loss, &ok, "value") != nil || !ok {
		p.notef(-1, "skipped", "MLLOG eval_accuracy without a number")
		return
	}
	samples, has := ev.samples, ev.hasSamples
	if m.evalAt != nil {
		samples, has = *m.evalAt, true
	} else if !has && ev.hasEpoch {
		samples, has = ev.epoch, true
	}
	e := Evaluation{Loss: loss, Set: "validation", Line: p.lineNo}
	switch {
	case has && samples >= 0 && samples < 1<<53:
		n := int64(math.Round(samples))
		e.Samples = &n
		if m.gbs != nil {
			e.Step = int(math.Round(samples / float64(*m.gbs)))
		} else if ev.hasStep && ev.step >= 0 && ev.step < math.MaxInt32 {
			e.Step = int(math.Round(ev.step))
		}
	case ev.hasStep && ev.step >= 0 && ev.step < math.MaxInt32:
		e.Step = int(math.Round(ev.step))
	}
	if ev.hasTime && m.runStartMS != nil {
		c := (ev.timeMS - *m.runStartMS) / 1000
		e.ClockSeconds = &c
	}
	if m.blocks.secs > 0 {
		t := m.blocks.secs
		e.TrainSeconds = &t
	}
	p.addEval(e)
}

// trackedFields is what a tracked_stats value holds that Rival reads.
type trackedFields struct {
	throughput, loss, stepTime          float64
	hasThroughput, hasLoss, hasStepTime bool
}

// trackedStats reads a tracked_stats value (a JSON object).
func trackedStats(raw string) trackedFields {
	var f trackedFields
	if len(raw) == 0 || raw[0] != '{' {
		return f
	}
	sc := jsonScan{s: raw}
	err := sc.object(func(k string) error {
		switch k {
		case "throughput":
			return sc.number64(&f.throughput, &f.hasThroughput, k)
		case "reduced_train_loss":
			return sc.number64(&f.loss, &f.hasLoss, k)
		case "train_step_time":
			return sc.number64(&f.stepTime, &f.hasStepTime, k)
		}
		return sc.value()
	})
	if err != nil {
		return trackedFields{}
	}
	return f
}

// stringValue is a JSON string value's text (cloned: the line is not kept), or "" for any other.
func stringValue(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	return strings.Clone(jsonString(raw))
}

// mllogFinish hands the MLLOG facts to the preamble when the MLLOG series is the one read.
func (p *parser) mllogFinish() {
	m := &p.ml
	if m.pending != nil {
		p.notef(-1, "skipped", "MLLOG block from sample %g: no later event says where it ended", m.pending.first)
		m.pending = nil
	}
	if m.gbs != nil && p.pre.GlobalBatchSize == nil {
		p.pre.GlobalBatchSize = m.gbs
		p.factAt[&p.pre.GlobalBatchSize] = fmt.Sprintf("MLLOG global_batch_size, line %d", m.gbsLine)
	}
	if m.seqLen != nil && p.pre.SeqLength == nil {
		p.pre.SeqLength = m.seqLen
		p.factAt[&p.pre.SeqLength] = fmt.Sprintf("MLLOG max_sequence_length, line %d", m.seqLine)
	}
}
