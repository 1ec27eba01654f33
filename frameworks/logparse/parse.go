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
	if strings.Contains(rest, " loss at ") && p.megatronEvalLine(rest) {
		return
	}
	if strings.Contains(rest, "iteration") {
		if strings.HasPrefix(strings.TrimLeft(rest, " "), "Validation: iteration ") {
			p.nemoValidating = true
			return
		}
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
				"MLLOG prints no per-iteration line, so extract times the run by its blocks: it needs block_start/block_stop pairs "+
				"numbered by metadata.step or metadata.samples_count, and for samples a global_batch_size event (MLPerf training loops print them); "+
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
		Evaluations: p.evals,
		Stats:       st,
	}
	if use == MLPerf {
		run := p.ml.run
		log.MLPerf = &run
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
