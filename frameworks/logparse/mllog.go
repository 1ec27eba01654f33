package logparse

import (
	"encoding/json"
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

// mllogEvent is one MLLOG line's JSON.
type mllogEvent struct {
	TimeMS    *float64        `json:"time_ms"`
	EventType string          `json:"event_type"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Metadata  struct {
		SamplesCount *float64 `json:"samples_count"`
		Step         *float64 `json:"step"`
	} `json:"metadata"`
}

// mllogLine reads one ":::MLLOG" event; it reports false when the JSON is unreadable.
func (p *parser) mllogLine(rest string) bool {
	i := strings.Index(rest, ":::MLLOG")
	body := strings.TrimSpace(rest[i+len(":::MLLOG"):])
	var ev mllogEvent
	if err := json.Unmarshal([]byte(body), &ev); err != nil {
		p.ml.malformed++
		p.notef(-1, "skipped", "MLLOG event is not valid JSON: %v", err)
		return false
	}
	m := &p.ml
	m.events++
	intValue := func() (int, bool) {
		var f float64
		if json.Unmarshal(ev.Value, &f) != nil || f <= 0 || f > math.MaxInt32 || f != math.Trunc(f) {
			return 0, false
		}
		return int(f), true
	}
	switch ev.Key {
	case "global_batch_size":
		if n, ok := intValue(); ok {
			m.gbs, m.gbsLine = &n, p.lineNo
		}
	case "max_sequence_length":
		if n, ok := intValue(); ok {
			m.seqLen, m.seqLine = &n, p.lineNo
		}
	case "submission_benchmark":
		json.Unmarshal(ev.Value, &m.benchmark)
	case "submission_platform":
		json.Unmarshal(ev.Value, &m.platform)
	case "block_start":
		if ev.TimeMS != nil && ev.Metadata.SamplesCount != nil {
			t := *ev.TimeMS
			m.blockAt, m.blockFrom = &t, *ev.Metadata.SamplesCount
		}
	case "block_stop":
		if m.blockAt != nil && ev.TimeMS != nil && ev.Metadata.SamplesCount != nil {
			p.mllogBlock(*m.blockAt, *ev.TimeMS, m.blockFrom, *ev.Metadata.SamplesCount)
		}
		m.blockAt = nil
	case "tracked_stats":
		var v struct {
			Throughput *float64 `json:"throughput"`
		}
		if json.Unmarshal(ev.Value, &v) == nil && v.Throughput != nil && *v.Throughput > 0 && !math.IsInf(*v.Throughput, 0) {
			m.throughput = append(m.throughput, *v.Throughput)
		}
	}
	return true
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
