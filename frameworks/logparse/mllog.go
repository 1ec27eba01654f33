package logparse

import (
	"fmt"
	"math"
	"strings"
)

// MLPerf is the MLPerf training reference's logging format (mlcommons/logging's mllog): one
// ":::MLLOG {json}" event per line, with namespace, time_ms, event_type (POINT_IN_TIME,
// INTERVAL_START, INTERVAL_END), key, value and metadata. Submissions such as AMD's Primus-based
// llama31_8b print no per-iteration line: training is timed in blocks (block_start ..
// block_stop, metadata.samples_count) between evaluations, and tracked_stats gives the block's
// throughput in samples per second.
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
		m.benchmark = stringValue(ev.value)
	case "submission_platform":
		m.platform = stringValue(ev.value)
	case "block_start":
		if ev.hasTime && ev.hasSamples {
			t := ev.timeMS
			m.blockAt, m.blockFrom = &t, ev.samples
		}
	case "block_stop":
		if m.blockAt != nil && ev.hasTime && ev.hasSamples {
			p.mllogBlock(*m.blockAt, ev.timeMS, m.blockFrom, ev.samples)
		}
		m.blockAt = nil
	case "tracked_stats":
		if v, ok := objectNumber(ev.value, "throughput"); ok && v > 0 {
			m.throughput = append(m.throughput, v)
		}
	}
	return true
}

// stringValue is a JSON string value's text (cloned: the line is not kept), or "" for any other.
func stringValue(raw string) string {
	if len(raw) < 2 || raw[0] != '"' {
		return ""
	}
	return strings.Clone(jsonString(raw))
}

// objectNumber is the finite number under key in a JSON object value.
func objectNumber(raw, key string) (float64, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return 0, false
	}
	var v float64
	var has bool
	sc := jsonScan{s: raw}
	err := sc.object(func(k string) error {
		if k == key {
			return sc.number64(&v, &has, k)
		}
		return sc.value()
	})
	return v, err == nil && has
}

// mllogBlock adds a finished block as one step: its number is the iteration the block ends
// at, its time the block's wall time over its iterations (a mean: MLLOG prints no single
// step). A block needs the global batch size, printed before run_start.
func (p *parser) mllogBlock(fromMS, toMS, fromSamples, toSamples float64) {
	m := &p.ml
	if m.gbs == nil {
		p.notef(-1, "skipped", "MLLOG block_stop before global_batch_size: its samples cannot be turned into iterations")
		return
	}
	gbs := float64(*m.gbs)
	iters := (toSamples - fromSamples) / gbs
	secs := (toMS - fromMS) / 1000
	if iters <= 0 || secs <= 0 || math.IsNaN(secs) || math.IsInf(secs, 0) || toSamples/gbs > math.MaxInt32 {
		p.notef(-1, "skipped", "MLLOG block from sample %g to %g in %g s: not a forward block", fromSamples, toSamples, secs)
		return
	}
	t := secs / iters
	st := Step{Step: int(math.Round(toSamples / gbs)), StepTimeSeconds: &t}
	p.notef(st.Step, "read", "MLLOG block of %g iterations (samples %g to %g) in %.3f s: mean step time %.4f s", iters, fromSamples, toSamples, secs, t)
	m.blocks.add(p, st, 0, false, 0)
}

// mllogFinish hands the MLLOG facts to the preamble when the MLLOG series is the one read.
func (p *parser) mllogFinish() {
	m := &p.ml
	if m.gbs != nil && p.pre.GlobalBatchSize == nil {
		p.pre.GlobalBatchSize = m.gbs
		p.factAt[&p.pre.GlobalBatchSize] = fmt.Sprintf("MLLOG global_batch_size, line %d", m.gbsLine)
	}
	if m.seqLen != nil && p.pre.SeqLength == nil {
		p.pre.SeqLength = m.seqLen
		p.factAt[&p.pre.SeqLength] = fmt.Sprintf("MLLOG max_sequence_length, line %d", m.seqLine)
	}
}
