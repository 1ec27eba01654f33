package logparse

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// MaxLineBytes bounds how much of one line is kept; the rest of a longer line is
// skipped (and counted in Stats.LongLines), so memory stays constant on any input.
const MaxLineBytes = 1 << 20

// HeadSteps is how many leading steps a Log keeps in full; every later step is
// folded into Log.Tail and the curve, so memory does not grow with the log.
const HeadSteps = 1024

// Event is one decision of the parser about a step line, for a reader who wants to
// see why a number is what it is (extract -v).
type Event struct {
	Line int64 `json:"line"` // 1-based physical line of the input
	// Step is the step number the line printed; -1 when not known.
	Step int `json:"step"`
	// Action is "read" (the step was kept), "skipped" (a duplicate, another rank's
	// line), "cut" (the line ends mid-way; skipped), "joined" (a hard-wrapped
	// continuation was joined to its line) or "flagged" (kept or read with a doubt).
	Action string `json:"action"`
	Detail string `json:"detail"`
}

// parser holds the streaming state: one series per family, the preamble, counters.
type parser struct {
	pre   Preamble
	stats Stats
	// mllog counts MLPerf MLLOG event lines (":::MLLOG {json}"): a log of
	// only those is refused with what extract would need. nemoSeen counts
	// NeMo progress lines, kept or not, for the advice on a log of cut ones.
	mllog, nemoSeen int
	ml              mllogState
	mega            series // Megatron, Primus and Megatron-Bridge iteration lines
	nemo            series
	titan           series

	// Megatron-Bridge prints "Step Time : ..." on rank 0 just before the iteration
	// line; it waits here for that line. bridgeOnly collects Step Time lines that never
	// got one (a log grepped for Step Time).
	pendingBridge *Step
	bridgeOnly    series
	// megaCut counts iteration lines skipped as cut; when there are any, Step Time
	// lines are never numbered in their place.
	megaCut int
	mem     []MemoryNote
	evals   []Evaluation
	// nemoVal is the last val_loss a NeMo line printed; nemoValidating is set by NeMo's
	// "Validation: iteration" lines until the next training line.
	nemoVal        *float64
	nemoValidating bool
	// params per (tensor, pipeline) model-parallel rank, as Megatron prints them.
	params map[[2]int]int64

	// billions is Megatron's "Total number of parameters in billions" when printed.
	billions *float64

	primusSigns, bridgeSigns, deepspeedSigns int
	// nemoKeys and nemoLast are the keys and last value of the previous complete
	// NeMo line, against which a cut line is recognised (see nemoCut).
	nemoKeys string
	nemoLast map[string]printedValue
	// segs and sigBuf are reused by every NeMo line.
	segs   []string
	sigBuf []byte
	keys   map[string]string
	world  int // world size in this line's Primus prefix, 0 if none

	// wrap is the iteration line held until the next line shows whether it continues.
	wrap *pendingLine
	// step is the buffer every step line is read into (see stepBuf).
	step stepBuf
	// heldLine and heldBuf hold the line wrap points to (see held).
	heldLine pendingLine
	heldBuf  []byte
	// actualSeq is Megatron-DeepSpeed's "actual seqlen" of the first step.
	actualSeq     *int
	actualSeqLine int64
	// factAt and argAt remember where facts and arguments were printed (Sources).
	factAt map[**int]string
	argAt  map[string]int64
	lineNo int64
	trace  func(Event)
}

// notef reports a decision to the trace, if any; the message is only formatted
// when someone listens.
func (p *parser) notef(step int, action, format string, args ...any) {
	if p.trace != nil {
		p.trace(Event{Line: p.lineNo, Step: step, Action: action, Detail: fmt.Sprintf(format, args...)})
	}
}

// keepExtra reports whether a step printed by rank would be kept in full, so
// that its unmapped keys are worth keeping.
func (p *parser) keepExtra(s *series, rank int, hasRank bool) bool {
	if !hasRank {
		rank = -1
	}
	return !s.started || rank > s.rank || len(s.steps) < HeadSteps
}

// newStep starts a step in the parser's stepBuf.
func (p *parser) newStep(st Step) *stepBuf {
	b := &p.step
	b.Step, b.nf, b.ni = st, 0, 0
	return b
}

// series keeps one rank's steps: the first HeadSteps in full, the rest folded into
// streaming statistics, and all of them in a decimated curve.
type series struct {
	started   bool
	rank      int // -1 when lines carry no rank label
	n         int
	last      int
	steps     []Step
	tail      Aggregate
	curve     curve
	dup       int
	otherRank int
	world     int // world size printed with the kept rank's lines (Primus)
	// secs is the training time the kept steps stand for: each step time times the iterations
	// since the step before it (a logged step averages its logging interval).
	secs float64
}

// add appends st printed by rank (hasRank false: unlabelled). A higher rank than the
// one kept replaces the series (see Log.Rank); a step number not above the last kept
// is a duplicate.
func (s *series) add(p *parser, st Step, rank int, hasRank bool, world int) {
	if !hasRank {
		rank = -1
	}
	switch {
	case !s.started:
		s.started, s.rank = true, rank
	case rank > s.rank:
		p.notef(st.Step, "flagged", "rank %d prints steps: its series replaces rank %d's (%d steps)", rank, s.rank, s.n)
		*s = series{started: true, rank: rank, otherRank: s.otherRank + s.n, dup: s.dup}
	case rank < s.rank:
		s.otherRank++
		p.notef(st.Step, "skipped", "printed by rank %d; rank %d's series is kept", rank, s.rank)
		return
	}
	if s.n > 0 && st.Step <= s.last {
		s.dup++
		p.notef(st.Step, "skipped", "duplicate: step %d is not above the last kept step %d", st.Step, s.last)
		return
	}
	if t := st.StepTimeSeconds; t != nil && *t > 0 && !math.IsInf(*t, 0) {
		from := 0
		if s.n > 0 {
			from = s.last
		}
		// A step time no run takes (1e308 s) would make every later total infinite: left out.
		if x := s.secs + *t*float64(st.Step-from); !math.IsInf(x, 0) {
			s.secs = x
		}
	}
	s.n++
	s.last = st.Step
	s.curve.add(&st)
	if len(s.steps) < HeadSteps {
		s.steps = append(s.steps, st.owned())
	} else {
		s.tail.AddStep(&st)
	}
	if world > 0 {
		s.world = world
	}
	if p.trace != nil {
		p.notef(st.Step, "read", "%s", describeStep(&st))
	}
}

// describeStep lists what a kept step printed, for the trace.
func describeStep(s *Step) string {
	var parts []string
	f := func(name string, v *float64) {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s=%g", name, *v))
		}
	}
	f("step_time_s", s.StepTimeSeconds)
	f("loss", s.Loss)
	f("lr", s.LearningRate)
	f("grad_norm", s.GradNorm)
	f("framework_tflops_per_gpu", s.TFLOPsPerGPU)
	f("framework_tokens_per_s_per_gpu", s.TokensPerSecondPerGPU)
	f("framework_mfu_percent", s.MFUPercent)
	f("mem_max_reserved_mib", s.MemMaxReservedMiB)
	f("mem_max_allocated_mib", s.MemMaxAllocatedMiB)
	f("mem_device_used_mib", s.MemDeviceUsedMiB)
	if len(s.NonFinite) > 0 {
		parts = append(parts, "non-finite: "+strings.Join(s.NonFinite, ","))
	}
	if len(s.Extra) > 0 {
		keys := make([]string, 0, len(s.Extra))
		for k := range s.Extra {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts = append(parts, "not mapped: "+strings.Join(keys, ","))
	}
	if s.NumberInferred {
		parts = append(parts, "step number counted (the line prints none)")
	}
	if len(parts) == 0 {
		return "no value"
	}
	return strings.Join(parts, " ")
}

// Set by tests: scribble overwrites a line's bytes once the parser is done with
// it; copyLines hands every line on as a copy.
var (
	scribble  func([]byte)
	copyLines bool
)

// pendingLine is an iteration line waiting for the next line, which may be its
// hard-wrapped continuation.
type pendingLine struct {
	text    string
	rank    int
	hasRank bool
	world   int
	line    int64
	joined  int
	// memory marks a memory report, which wraps like the iteration line
	memory bool
}

// printedValue is what nemoCut compares a value with: its printed length and its
// number.
type printedValue struct {
	len int
	x   float64
}

// mllogState is what the MLLOG events said so far.
type mllogState struct {
	events      int
	gbs, seqLen *int
	gbsLine     int64
	seqLine     int64
	run         MLPerfRun
	runStartMS  *float64
	// open is the block whose block_start was read and whose block_stop was not.
	open *mllogEdge
	// pending is a block stopped without an end sample (start-offset convention), closed by the
	// next event that gives a larger samples_count.
	pending *mllogPendingBlock
	// lossAt is the last reduced_train_loss of the open block.
	loss       *float64
	evalAt     *float64 // samples_count of the open eval_start
	blocks     series   // one Step per block: its mean step time
	blockPairs int      // block_start/block_stop pairs read, used or not
	malformed  int
}

// lossBenchmarks are the MLPerf benchmarks whose eval_accuracy is a held-out log-perplexity (lower is
// better, the mean cross-entropy per token): others (an image classifier's top-1, a recommender's
// AUC) are accuracies, not losses.
var lossBenchmarks = map[string]bool{"llama31_8b": true, "llama31_405b": true, "gpt3": true}

// mllogEdge is one end of a block: its clock and what its metadata numbered.
type mllogEdge struct {
	ms                  float64
	samples, step       float64
	hasSamples, hasStep bool
}

type mllogPendingBlock struct {
	fromMS, toMS float64
	first        float64 // samples before the block
	loss         *float64
}

// missing says why the MLLOG events gave no block, for the refusal.
func (m *mllogState) missing() string {
	var why []string
	if m.malformed > 0 {
		why = append(why, fmt.Sprintf("%d of them are not valid JSON", m.malformed))
	}
	switch {
	case m.blockPairs == 0:
		why = append(why, "no block_start/block_stop pair was found")
	case m.gbs == nil:
		why = append(why, fmt.Sprintf("its %d block_start/block_stop pair(s) number their samples but none gives global_batch_size, "+
			"so samples cannot be turned into iterations", m.blockPairs))
	default:
		why = append(why, fmt.Sprintf("none of its %d block_start/block_stop pair(s) says where the block ends "+
			"(metadata.step at both ends, a larger samples_count on block_stop, or a later event's samples_count)", m.blockPairs))
	}
	return strings.Join(why, ", ")
}
