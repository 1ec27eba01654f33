package logparse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unsafe"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/safefile"
)

// MaxLineBytes bounds how much of one line is kept; the rest of a longer line is
// skipped (and counted in Stats.LongLines), so memory stays constant on any input.
const MaxLineBytes = 1 << 20

// NeMoRejoinAdvice is what to do with NeMo progress lines a terminal
// hard-wrapped: unlike Megatron's "|"-terminated iteration lines, they have
// no end marker, so the parser cannot rejoin them.
const NeMoRejoinAdvice = `NeMo's progress lines have no end marker, so a line hard-wrapped by a terminal cannot be rejoined by the parser (Megatron's "|"-terminated lines can); ` +
	`put each "Training epoch E, iteration i/N | ..." line back on one line, or use the log file NeMo's logger wrote rather than a terminal copy, and extract again`

// ErrNoSteps is wrapped by the error returned when a log holds no training step.
var ErrNoSteps = errors.New("no training steps found")

// aliases maps names to log families: the log formats' own names, then every framework of Rival's
// framework table (frameworks/core) and its aliases, read as the family its runs print. A format's
// own name wins: "nemo" reads NeMo 2 logs (train reads a nemo run, which prints Megatron-Bridge's
// lines, through its launch's log family).
var aliases = func() map[string]string {
	m := map[string]string{
		"": "", "auto": "",
		"megatron": Megatron, "megatron-lm": Megatron, "mlm": Megatron,
		"megatron-deepspeed": MegatronDeepSpeed, "mds": MegatronDeepSpeed,
		"primus":          Primus,
		"megatron-bridge": MegatronBridge, "bridge": MegatronBridge, "mbridge": MegatronBridge,
		"nemo": NeMo, "nemo2": NeMo, "nemo-2": NeMo,
		"torchtitan": TorchTitan,
		"mlperf":     MLPerf, "mllog": MLPerf,
	}
	for _, f := range core.Frameworks() {
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			if _, ok := m[n]; !ok {
				m[n] = f.LogFamily
			}
		}
	}
	return m
}()

// Canonical returns the family a framework name stands for ("" for auto-detection).
func Canonical(framework string) (string, error) {
	fam, ok := aliases[strings.ToLower(strings.TrimSpace(framework))]
	if !ok {
		names := make([]string, 0, len(aliases))
		for k := range aliases {
			if k != "" {
				names = append(names, k)
			}
		}
		sort.Strings(names)
		return "", fmt.Errorf("unknown framework %q: use one of %s, or leave it empty to detect it from the log",
			framework, strings.Join(names, ", "))
	}
	return fam, nil
}

// ParseFile parses the log at path; see Parse.
func ParseFile(path, framework string) (*Log, error) {
	return ParseFileTraced(path, framework, nil)
}

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

// ParseFileTraced is ParseFile that also reports every decision about step lines to
// trace (nil reports nothing).
func ParseFileTraced(path, framework string, trace func(Event)) (*Log, error) {
	// Streamed, so a log of any length is read in bounded memory; a FIFO
	// or device in its place is refused, not read without end.
	f, _, err := safefile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	return parse(f, framework, path, trace)
}

// Parse reads a training log from r. framework names the family to read the steps as
// (any name Canonical accepts); empty detects it from the log's signatures. It fails
// with an error wrapping ErrNoSteps when the log holds no training step.
func Parse(r io.Reader, framework string) (*Log, error) {
	return parse(r, framework, "input", nil)
}

func parse(r io.Reader, framework, source string, trace func(Event)) (*Log, error) {
	asked, err := Canonical(framework)
	if err != nil {
		return nil, err
	}
	p := newParser()
	p.trace = trace
	if err := p.read(r); err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	return p.finish(asked, source)
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

func newParser() *parser {
	return &parser{params: map[[2]int]int64{}, keys: map[string]string{}, nemoLast: map[string]printedValue{}, factAt: map[**int]string{}, argAt: map[string]int64{}}
}

// read splits the input into logical lines of at most MaxLineBytes and feeds them
// to line. Carriage returns end a logical line as newlines do, so a step printed
// after a progress bar redrawn with "\r" for megabytes is still read whole.
func (p *parser) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 0, 4096)
	long := false
	add := func(b []byte) {
		if room := MaxLineBytes - len(buf); room > 0 {
			if len(b) > room {
				buf = append(buf, b[:room]...)
				long = true
			} else {
				buf = append(buf, b...)
			}
		} else if len(b) > 0 {
			long = true
		}
	}
	flush := func() {
		if long {
			p.stats.LongLines++
			p.notef(-1, "flagged", "a line longer than %d bytes: only its start was read", MaxLineBytes)
		}
		if len(buf) > 0 {
			p.logical(buf)
		}
		buf, long = buf[:0], false
		if cap(buf) > 64<<10 {
			buf = make([]byte, 0, 4096) // give back the memory of one huge line
		}
	}
	for {
		chunk, err := br.ReadSlice('\n')
		if err == nil && len(buf) == 0 && !long && len(chunk) <= MaxLineBytes && bytes.IndexByte(chunk, '\r') < 0 {
			// a whole line in the read buffer, the common case: read in place, not
			// copied into buf first
			p.stats.Lines++
			p.lineNo = p.stats.Lines
			p.logical(chunk)
			continue
		}
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\r')
			if i < 0 {
				add(chunk)
				break
			}
			add(chunk[:i])
			chunk = chunk[i+1:]
			flush()
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil && err != io.EOF:
			return err
		}
		if len(buf) > 0 || err == nil {
			p.stats.Lines++
			p.lineNo = p.stats.Lines
		}
		flush()
		if err == io.EOF {
			p.endWrap()
			return nil
		}
	}
}

// logical handles one logical line: the newline is dropped, ANSI escapes too.
//
// The line is handed on as a view of b, not a copy, and b is overwritten by the
// next line: what the parser keeps beyond a line (a held iteration line, the
// argument block, keys, a kept step's timestamp and unmapped values) it copies
// (held, strings.Clone, Step.owned). TestLineViewsAreNotKept checks it by
// overwriting every line once it was read.
func (p *parser) logical(b []byte) {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if len(b) == 0 {
		return
	}
	if copyLines || bytes.IndexByte(b, 0x1b) >= 0 {
		p.line(stripANSI(b))
	} else {
		p.line(unsafe.String(unsafe.SliceData(b), len(b)))
	}
	if scribble != nil {
		scribble(b)
	}
}

// Set by tests: scribble overwrites a line's bytes once the parser is done with
// it; copyLines hands every line on as a copy.
var (
	scribble  func([]byte)
	copyLines bool
)

// held copies an iteration line or memory report that waits for the next line
// into the parser's own buffer (the line itself is a view of the read buffer).
func (p *parser) held(s string, w pendingLine) {
	p.endWrap()
	if scribble != nil {
		scribble(p.heldBuf)
	}
	p.heldBuf = append(p.heldBuf[:0], s...)
	w.text = unsafe.String(unsafe.SliceData(p.heldBuf), len(p.heldBuf))
	p.heldLine = w
	p.wrap = &p.heldLine
}

// stripANSI removes terminal escape sequences (CSI colours, OSC titles, two-byte escapes).
func stripANSI(b []byte) string {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return string(b)
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != 0x1b {
			out = append(out, c)
			continue
		}
		if i+1 >= len(b) {
			break
		}
		switch b[i+1] {
		case '[': // CSI: parameters then one final byte in 0x40..0x7e
			j := i + 2
			for j < len(b) && (b[j] < 0x40 || b[j] > 0x7e) {
				j++
			}
			i = j
		case ']': // OSC: up to BEL or ESC backslash
			j := i + 2
			for j < len(b) && b[j] != 0x07 && !(b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\') {
				j++
			}
			if j < len(b) && b[j] == 0x1b {
				j++
			}
			i = j
		default:
			i++
		}
	}
	return string(out)
}

// line dispatches one logical line to the family parsers. Lines of different
// families never look alike, so every family sees every line and the choice between
// them is made at the end.
func (p *parser) line(s string) {
	if p.wrap != nil {
		if p.continues(s) {
			return
		}
		p.endWrap()
	}
	rank, hasRank, rest := splitRank(s)
	p.world = 0
	if maybePrimusPrefix(rest) {
		p.primusPrefixed(rest, &rank, &hasRank)
	}
	p.dispatch(rest, rank, hasRank)
}

// maybePrimusPrefix is a cheap test that lets most lines skip primusPrefix.
func maybePrimusPrefix(s string) bool {
	t := trimBlank(s)
	return len(t) > 0 && t[0] == '[' && strings.Contains(t[:min(len(t), 160)], "[rank-")
}

func (p *parser) primusPrefixed(rest string, rank *int, hasRank *bool) {
	if m := primusPrefix.FindStringSubmatch(rest); m != nil {
		// The world size comes from the kept rank's own prefix (see series.world), so
		// lines of another run pasted into the log cannot set it.
		p.world, _ = integer(m[2])
		if r, ok := integer(m[1]); ok {
			*rank, *hasRank = r, true
		}
		p.primusSigns++
	}
}

// dispatch hands a line without its rank labels to the family parsers.
func (p *parser) dispatch(rest string, rank int, hasRank bool) {
	switch {
	case strings.Contains(rest, "Training epoch"):
		p.nemoSeen++
		if p.nemoLine(rest, rank, hasRank) {
			return
		}
	case strings.Contains(rest, "Step Time"):
		if p.bridgeStepTime(rest) {
			return
		}
	}
	if strings.Contains(rest, "iteration") {
		if strings.Contains(rest, "memory (") && p.memoryLine(rest) {
			return
		}
		if p.megatronLine(rest, rank, hasRank) {
			return
		}
	}
	if strings.Contains(rest, "step:") && strings.Contains(rest, "loss:") {
		if p.titanLine(rest, rank, hasRank) {
			return
		}
	}
	if strings.Contains(rest, ":::MLLOG") {
		p.mllog++
		p.mllogLine(rest)
		return
	}
	p.preambleLine(rest)
}

// finish chooses the family, assembles the Log and checks it has steps.
func (p *parser) finish(asked, source string) (*Log, error) {
	p.endWrap()
	if p.pendingBridge != nil {
		p.flushBridge()
	}
	if p.mega.n == 0 && p.bridgeOnly.n > 0 && p.megaCut > 0 {
		return nil, fmt.Errorf("%v in %s: its %d iteration line(s) are all cut (ended mid-way, hard-wrapped beyond repair or truncated) "+
			"and its %d \"Step Time\" line(s) carry no step number, so they are not numbered 1..%d in their place; "+
			"rejoin the wrapped lines (extract -v names them) and extract again: %w",
			ErrNoSteps, source, p.megaCut, p.bridgeOnly.n, p.bridgeOnly.n, ErrNoSteps)
	}
	if p.mega.n == 0 && p.bridgeOnly.n > 0 {
		p.mega = p.bridgeOnly
	} else {
		p.stats.CutLines += p.bridgeOnly.n
	}
	detected := ""
	best := 0
	for _, c := range []struct {
		fam string
		n   int
	}{{p.megaFamily(), p.mega.n}, {NeMo, p.nemo.n}, {TorchTitan, p.titan.n}, {MLPerf, p.ml.blocks.n}} {
		if c.n > best {
			detected, best = c.fam, c.n
		}
	}
	use := asked
	if use == "" {
		use = detected
	}
	var s *series
	switch use {
	case Megatron, Primus, MegatronBridge, MegatronDeepSpeed:
		s = &p.mega
	case NeMo:
		s = &p.nemo
	case MLPerf:
		s = &p.ml.blocks
		p.mllogFinish()
	case TorchTitan:
		s = &p.titan
	}
	if s == nil || s.n == 0 {
		msg := fmt.Sprintf("%v in %s", ErrNoSteps, source)
		switch {
		case asked != "" && detected != "":
			return nil, fmt.Errorf("%s: it was read as %s but its lines look like %s; set the framework to %s or leave it empty: %w",
				msg, asked, detected, detected, ErrNoSteps)
		case asked != "":
			return nil, fmt.Errorf("%s (read as %s; no line matched that framework's step format): %w", msg, asked, ErrNoSteps)
		case p.nemoSeen > 0:
			return nil, fmt.Errorf("%s: its %d NeMo progress line(s) are all cut; %s: %w", msg, p.nemoSeen, NeMoRejoinAdvice, ErrNoSteps)
		case p.mllog > 0:
			return nil, fmt.Errorf("%s: its %d lines are MLPerf MLLOG events (\":::MLLOG {...}\") but %s; "+
				"MLLOG prints no per-iteration line, so extract times the run by its blocks: it needs a global_batch_size event and "+
				"block_start/block_stop pairs with metadata.samples_count (the MLPerf reference's training loop prints them); "+
				"give the whole result file, or the trainer's own log of the same run: %w",
				msg, p.mllog, p.ml.missing(), ErrNoSteps)
		}
		return nil, fmt.Errorf("%s (no Megatron/Primus/Megatron-Bridge iteration line, NeMo progress line or TorchTitan step line): %w",
			msg, ErrNoSteps)
	}
	if p.pre.WorldSize == nil && s.world > 0 {
		p.pre.WorldSize = ptr(s.world)
		p.factAt[&p.pre.WorldSize] = "the rank prefix of the step lines"
	}
	p.finishPreamble(s.steps)
	st := p.stats
	st.DuplicateSteps += s.dup
	st.OtherRankLines += s.otherRank
	for _, step := range s.steps {
		st.NonFiniteValues += len(step.NonFinite)
	}
	st.NonFiniteValues += s.tail.NonFiniteValues
	log := &Log{
		Source:      source,
		Framework:   use,
		Detected:    detected,
		Preamble:    p.pre,
		StepCount:   s.n,
		Steps:       s.steps,
		Tail:        s.tail,
		Curve:       s.curve.points,
		CurveStride: max(1, s.curve.stride),
		Memory:      p.mem,
		Stats:       st,
	}
	if s.started && s.rank >= 0 {
		log.Rank = ptr(s.rank)
	}
	return log, nil
}

// megaFamily names the Megatron-format family from the signatures seen.
func (p *parser) megaFamily() string {
	switch {
	case p.deepspeedSigns > 0:
		return MegatronDeepSpeed
	case p.primusSigns > 0:
		return Primus
	case p.bridgeSigns > 0:
		return MegatronBridge
	}
	return Megatron
}

// keepExtra reports whether a step printed by rank would be kept in full, so
// that its unmapped keys are worth keeping.
func (p *parser) keepExtra(s *series, rank int, hasRank bool) bool {
	if !hasRank {
		rank = -1
	}
	return !s.started || rank > s.rank || len(s.steps) < HeadSteps
}

// HeadSteps is how many leading steps a Log keeps in full; every later step is
// folded into Log.Tail and the curve, so memory does not grow with the log.
const HeadSteps = 1024

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
