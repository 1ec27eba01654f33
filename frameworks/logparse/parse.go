package logparse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// MaxLineBytes bounds how much of one line is kept; the rest of a longer line is
// skipped (and counted in Stats.LongLines), so memory stays constant on any input.
const MaxLineBytes = 1 << 20

// ErrNoSteps is wrapped by the error returned when a log holds no training step.
var ErrNoSteps = errors.New("no training steps found")

// aliases maps the framework names users and Rival's configs use to families. Rival's
// own fsdp trainer prints Megatron-format iteration lines.
var aliases = map[string]string{
	"": "", "auto": "",
	"megatron": Megatron, "megatron-lm": Megatron, "mlm": Megatron, "fsdp": Megatron,
	"primus": Primus, "prim": Primus,
	"megatron-bridge": MegatronBridge, "bridge": MegatronBridge, "mbridge": MegatronBridge,
	"nemo": NeMo, "nemo2": NeMo, "nemo-2": NeMo,
	"torchtitan": TorchTitan, "titan": TorchTitan,
}

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
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	return parse(f, framework, path)
}

// Parse reads a training log from r. framework names the family to read the steps as
// (any name Canonical accepts); empty detects it from the log's signatures. It fails
// with an error wrapping ErrNoSteps when the log holds no training step.
func Parse(r io.Reader, framework string) (*Log, error) {
	return parse(r, framework, "input")
}

func parse(r io.Reader, framework, source string) (*Log, error) {
	asked, err := Canonical(framework)
	if err != nil {
		return nil, err
	}
	p := newParser()
	if err := p.read(r); err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	return p.finish(asked, source)
}

// parser holds the streaming state: one series per family, the preamble, counters.
type parser struct {
	pre   Preamble
	stats Stats
	mega  series // Megatron, Primus and Megatron-Bridge iteration lines
	nemo  series
	titan series

	// Megatron-Bridge prints "Step Time : ..." on rank 0 just before the iteration
	// line; it waits here for that line. bridgeOnly collects Step Time lines that never
	// got one (a log grepped for Step Time).
	pendingBridge *Step
	bridgeOnly    series
	mem           []MemoryNote
	// params per (tensor, pipeline) model-parallel rank, as Megatron prints them.
	params map[[2]int]int64

	primusSigns, bridgeSigns int
	keys                     map[string]string
	world                    int // world size in this line's Primus prefix, 0 if none
}

func newParser() *parser {
	return &parser{params: map[[2]int]int64{}, keys: map[string]string{}}
}

// read splits the input into lines of at most MaxLineBytes and feeds them to line.
func (p *parser) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 0, 4096)
	long := false
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			if room := MaxLineBytes - len(buf); room > 0 {
				if len(chunk) > room {
					buf = append(buf, chunk[:room]...)
					long = true
				} else {
					buf = append(buf, chunk...)
				}
			} else {
				long = true
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil && err != io.EOF:
			return err
		}
		if len(buf) > 0 {
			if long {
				p.stats.LongLines++
			}
			p.rawLine(buf)
		}
		buf, long = buf[:0], false
		if err == io.EOF {
			return nil
		}
		if cap(buf) > 64<<10 {
			buf = make([]byte, 0, 4096) // give back the memory of one huge line
		}
	}
}

// rawLine handles one physical line: carriage returns (progress bars) separate
// logical lines too, and ANSI escapes are dropped.
func (p *parser) rawLine(b []byte) {
	p.stats.Lines++
	b = bytes.TrimRight(b, "\r\n")
	for len(b) > 0 {
		part := b
		if i := bytes.IndexByte(b, '\r'); i >= 0 {
			part, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(part) > 0 {
			p.line(stripANSI(part))
		}
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
	rank, hasRank, rest := splitRank(s)
	p.world = 0
	if m := primusPrefix.FindStringSubmatch(rest); m != nil {
		// The world size comes from the kept rank's own prefix (see series.world), so
		// lines of another run pasted into the log cannot set it.
		p.world, _ = integer(m[2])
		if r, ok := integer(m[1]); ok {
			rank, hasRank = r, true
		}
		p.primusSigns++
	}
	switch {
	case strings.Contains(rest, "Training epoch"):
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
	p.preambleLine(rest)
}

// finish chooses the family, assembles the Log and checks it has steps.
func (p *parser) finish(asked, source string) (*Log, error) {
	if p.pendingBridge != nil {
		p.flushBridge()
	}
	if len(p.mega.steps) == 0 && len(p.bridgeOnly.steps) > 0 {
		p.mega = p.bridgeOnly
	} else {
		p.stats.CutLines += len(p.bridgeOnly.steps)
	}
	detected := ""
	best := 0
	for _, c := range []struct {
		fam string
		n   int
	}{{p.megaFamily(), len(p.mega.steps)}, {NeMo, len(p.nemo.steps)}, {TorchTitan, len(p.titan.steps)}} {
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
	case Megatron, Primus, MegatronBridge:
		s = &p.mega
	case NeMo:
		s = &p.nemo
	case TorchTitan:
		s = &p.titan
	}
	if s == nil || len(s.steps) == 0 {
		msg := fmt.Sprintf("%v in %s", ErrNoSteps, source)
		switch {
		case asked != "" && detected != "":
			return nil, fmt.Errorf("%s: it was read as %s but its lines look like %s; set the framework to %s or leave it empty: %w",
				msg, asked, detected, detected, ErrNoSteps)
		case asked != "":
			return nil, fmt.Errorf("%s (read as %s; no line matched that framework's step format): %w", msg, asked, ErrNoSteps)
		}
		return nil, fmt.Errorf("%s (no Megatron/Primus/Megatron-Bridge iteration line, NeMo progress line or TorchTitan step line): %w",
			msg, ErrNoSteps)
	}
	if p.pre.WorldSize == nil && s.world > 0 {
		p.pre.WorldSize = ptr(s.world)
	}
	p.finishPreamble(s.steps)
	st := p.stats
	st.DuplicateSteps += s.dup
	st.OtherRankLines += s.otherRank
	for _, step := range s.steps {
		st.NonFiniteValues += len(step.NonFinite)
	}
	log := &Log{
		Source:    source,
		Framework: use,
		Detected:  detected,
		Preamble:  p.pre,
		Steps:     s.steps,
		Memory:    p.mem,
		Stats:     st,
	}
	if s.started && s.rank >= 0 {
		log.Rank = ptr(s.rank)
	}
	return log, nil
}

// megaFamily names the Megatron-format family from the signatures seen.
func (p *parser) megaFamily() string {
	switch {
	case p.primusSigns > 0:
		return Primus
	case p.bridgeSigns > 0:
		return MegatronBridge
	}
	return Megatron
}

// series keeps one rank's steps in order.
type series struct {
	started   bool
	rank      int // -1 when lines carry no rank label
	steps     []Step
	dup       int
	otherRank int
	world     int // world size printed with the kept rank's lines (Primus)
}

// add appends st printed by rank (hasRank false: unlabelled). A higher rank than the
// one kept replaces the series (see Log.Rank); a step number not above the last kept
// is a duplicate.
func (s *series) add(st Step, rank int, hasRank bool, world int) {
	if !hasRank {
		rank = -1
	}
	switch {
	case !s.started:
		s.started, s.rank = true, rank
	case rank > s.rank:
		s.otherRank += len(s.steps)
		s.steps, s.rank = s.steps[:0], rank
	case rank < s.rank:
		s.otherRank++
		return
	}
	if n := len(s.steps); n > 0 && st.Step <= s.steps[n-1].Step {
		s.dup++
		return
	}
	s.steps = append(s.steps, st)
	if world > 0 {
		s.world = world
	}
}
