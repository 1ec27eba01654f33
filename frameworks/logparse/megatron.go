package logparse

import (
	"regexp"
	"strings"
	"unsafe"
)

// Megatron's iteration line, as training_log prints it (print_rank_last):
//
//	[2024-04-06 02:55:45] iteration        2/     100 | consumed samples: 256 | ... |
//
// The timestamp is absent before 2024 and may carry microseconds in forks. The
// header is matched by hand (matchIteration): it is on the hot path of every log.
var megatronIteration = regexp.MustCompile(`(?:\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)\]\s*)?\biteration\s+(\d+)\s*/\s*(\d+)\s*\|`)

// iterationHeader is a matched "[timestamp] iteration N/ T |".
type iterationHeader struct {
	timestamp string
	n, total  int
	end       int // index just after the "|"
}

// matchIteration finds the first iteration header in s, as megatronIteration
// would (the expression stays as its specification and is checked against this
// function in the tests).
func matchIteration(s string) (iterationHeader, bool) {
	for off := 0; off < len(s); {
		i := strings.Index(s[off:], "iteration")
		if i < 0 {
			break
		}
		i += off
		off = i + len("iteration")
		if i > 0 && isWord(s[i-1]) {
			continue
		}
		j := off
		k := skipSpace(s, j)
		if k == j {
			continue
		}
		n, k2, ok := digits(s, k)
		if !ok {
			continue
		}
		k = skipSpace(s, k2)
		if k >= len(s) || s[k] != '/' {
			continue
		}
		total, k2, ok := digits(s, skipSpace(s, k+1))
		if !ok {
			continue
		}
		k = skipSpace(s, k2)
		if k >= len(s) || s[k] != '|' {
			continue
		}
		h := iterationHeader{n: n, total: total, end: k + 1}
		h.timestamp = timestampBefore(s[:i])
		return h, true
	}
	return iterationHeader{}, false
}

// skipSpace skips what RE2 calls \s: space, \t, \n, \f and \r (not \v).
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\f' || s[i] == '\r') {
		i++
	}
	return i
}

// digits reads a decimal number of at most 9 digits at s[i:].
func digits(s string, i int) (n, end int, ok bool) {
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		if j-i >= 9 {
			return 0, 0, false
		}
		n = n*10 + int(s[j]-'0')
		j++
	}
	return n, j, j > i
}

// timestampBefore returns the "YYYY-MM-DD HH:MM:SS[.ffffff]" in a "[...]" that ends
// just before the iteration keyword (spaces between allowed), or "".
func timestampBefore(s string) string {
	e := len(s)
	for e > 0 && (s[e-1] == ' ' || s[e-1] == '\t') {
		e--
	}
	if e == 0 || s[e-1] != ']' {
		return ""
	}
	b := strings.LastIndexByte(s[:e-1], '[')
	if b < 0 {
		return ""
	}
	ts := s[b+1 : e-1]
	const shape = "dddd-dd-dd dd:dd:dd"
	if len(ts) < len(shape) {
		return ""
	}
	for i := 0; i < len(shape); i++ {
		c := ts[i]
		switch shape[i] {
		case 'd':
			if c < '0' || c > '9' {
				return ""
			}
		case ' ':
			if c != ' ' && c != 'T' {
				return ""
			}
		default:
			if c != shape[i] {
				return ""
			}
		}
	}
	frac := ts[len(shape):]
	if frac == "" {
		return ts
	}
	if len(frac) < 2 || (frac[0] != '.' && frac[0] != ',') {
		return ""
	}
	for i := 1; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return ""
		}
	}
	return ts
}

// megatronLine recognises an iteration line of the Megatron family (Megatron-LM,
// Megatron-DeepSpeed, Primus, Megatron-Bridge, Rival's fsdp trainer) and holds it
// until the next line shows whether it was hard-wrapped (see continues). It reports
// whether the line was one.
func (p *parser) megatronLine(s string, rank int, hasRank bool) bool {
	// Run the expression only near the first "iteration", where the step number is.
	at := strings.Index(s, "iteration")
	if at < 0 {
		return false
	}
	at = max(0, at-48)
	for at > 0 && s[at] != '[' && s[at] != ' ' {
		at--
	}
	s = s[at:]
	if _, ok := matchIteration(s); !ok {
		return false
	}
	p.held(s, pendingLine{rank: rank, hasRank: hasRank, world: p.world, line: p.lineNo})
	return true
}

// continues joins s to the held line when s is its hard-wrapped continuation (a
// terminal or a paste tool breaks long lines at a fixed column, often inside a word
// and without a trailing space). The pieces prove it when
//   - the segment that spans the break has a key the held line prints, compared with
//     whitespace removed ("consumed samp" + "les: 5120 |", "global batch" + "size:",
//     "max alloca" + "ted: 12712.4"), or the break fell after a whole segment
//     ("... |" + " elapsed time per iteration (ms): 9093.2 |");
//   - or s holds a whole "|"-delimited segment with such a key;
//   - or the held line ends inside a value and s starts with the rest of the number;
//
// and s starts no line of its own.
func (p *parser) continues(s string) bool {
	w := p.wrap
	if w == nil || len(w.text)+len(s) > MaxLineBytes || w.joined >= 16 {
		return false
	}
	if strings.Contains(s, "iteration") {
		if _, ok := matchIteration(s); ok {
			return false
		}
		var mbuf [8]int
		if memoryHeaderMatch(s, &mbuf) != nil {
			return false
		}
	}
	if strings.Contains(s, "Step Time") || strings.Contains(s, "Training epoch") {
		return false
	}
	known := knownSegment
	if w.memory {
		known = knownMemoryKey
	}
	head := w.text[strings.LastIndexByte(w.text, '|')+1:]
	tail, after, hasBar := strings.Cut(s, "|")
	ok := false
	if hk, _, inValue := strings.Cut(head, ":"); inValue {
		// the break fell inside the value of a whole key: s must start with the rest
		// of the number and go on with more segments
		ok = known[squeeze(p.canonicalKey(hk))] && hasBar && numberFragment(tail) && !strings.HasSuffix(head, " ")
	} else if key, _, found := strings.Cut(head+tail, ":"); found && known[squeeze(p.canonicalKey(key))] {
		ok = true
	}
	if !ok && hasBar {
		// a whole segment of s has a known key
		for rest := after; !ok; {
			seg, more, whole := strings.Cut(rest, "|")
			if !whole {
				break
			}
			if key, _, found := strings.Cut(seg, ":"); found && known[squeeze(p.canonicalKey(key))] {
				ok = true
			}
			rest = more
		}
	}
	if !ok {
		return false
	}
	w.text += s
	w.joined++
	what := "iteration line"
	if w.memory {
		what = "memory report"
	}
	p.notef(-1, "joined", "line %d continues the %s of line %d (hard-wrapped)", p.lineNo, what, w.line)
	return true
}

// numberFragment reports whether s (spaces trimmed) is the rest of a number.
func numberFragment(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' || c == '/') {
			return false
		}
	}
	return true
}

// squeeze removes every space, so keys split by a wrap compare equal.
func squeeze(k string) string {
	if !strings.Contains(k, " ") {
		return k
	}
	return strings.ReplaceAll(k, " ", "")
}

// knownSegment lists the keys of the iteration line's segments, spaces removed, the
// proof that a line continues a wrapped one; squeezedKey maps each back to its
// canonical form.
var knownSegment, squeezedKey = squeezed(
	"consumed samples", "consumed tokens", "elapsed time per iteration (ms)",
	"throughput per gpu (tflop/s/gpu)", "learning rate", "global batch size",
	"lm loss", "loss", "total loss", "loss scale", "grad norm", "num zeros",
	"params norm", "number of skipped iterations", "number of nan iterations",
	"actual seqlen", "samples per second", "tflops", "mtp_1 loss",
	"load_balancing_loss", "z_loss", "decoupled learning rate",
	"compute per gpu (tflop/s/gpu)", "tokens per gpu (tokens/s/gpu)",
	"tokens/s/gpu inst/harmonic mean", "mem usages",
	"hip mem usage/free/total/usage_ratio", "rocm mem usage/free/total/usage_ratio",
)

// knownMemoryKey lists the keys of Megatron's memory report, spaces removed.
var knownMemoryKey, squeezedMemoryKey = squeezed(
	"allocated", "max allocated", "reserved", "max reserved",
	"mem-allocated-gigabytes", "mem-active-gigabytes", "mem-inactive-gigabytes",
	"mem-reserved-gigabytes", "mem-max-allocated-gigabytes", "mem-max-active-gigabytes",
	"mem-max-inactive-gigabytes", "mem-max-reserved-gigabytes",
)

func squeezed(keys ...string) (map[string]bool, map[string]string) {
	set, back := map[string]bool{}, map[string]string{}
	for _, k := range keys {
		set[squeeze(k)] = true
		back[squeeze(k)] = k
	}
	return set, back
}

// endWrap reads the held iteration line, if any, as a step.
func (p *parser) endWrap() {
	w := p.wrap
	if w == nil {
		return
	}
	p.wrap = nil
	if w.memory {
		p.memoryReport(w)
		return
	}
	p.megatronStep(w)
}

// megatronStep reads a whole iteration line into a step.
func (p *parser) megatronStep(w *pendingLine) {
	// events about this step name the line it started on
	defer func(l int64) { p.lineNo = l }(p.lineNo)
	p.lineNo = w.line
	s := w.text
	m, _ := matchIteration(s)
	n, total, rest := m.n, m.total, s[m.end:]
	if !megatronComplete(rest) {
		p.stats.CutLines++
		p.megaCut++
		p.notef(n, "cut", "the iteration line ends mid-way (no closing \"|\"); step skipped")
		return
	}
	st := p.newStep(Step{Step: n, Timestamp: m.timestamp})
	st.TotalSteps = st.int(total)
	lossRank := 0
	// only the steps kept in full keep their unmapped keys
	keepExtra := p.keepExtra(&p.mega, w.rank, w.hasRank)
	for rest != "" {
		seg := rest
		if i := strings.IndexByte(rest, '|'); i >= 0 {
			seg, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		raw, val, found := strings.Cut(seg, ":")
		if !found {
			continue
		}
		lk := p.canonicalKey(raw)
		key := strings.TrimSpace(raw)
		if p.primusSegment(st, lk, val) {
			continue
		}
		switch lk {
		case "consumed samples":
			st.setFloat(&st.ConsumedSamples, "consumed_samples", val, 1)
		case "elapsed time per iteration (ms)":
			if strings.Contains(val, "/") {
				p.primusSigns++ // Primus prints "this iteration/running average"
			}
			st.setFloat(&st.StepTimeSeconds, "step_time_s", val, 1e-3)
		case "throughput per gpu (tflop/s/gpu)":
			if strings.Contains(val, "/") {
				p.primusSigns++
			}
			st.setFloat(&st.TFLOPsPerGPU, "framework_tflops_per_gpu", val, 1)
		case "tflops":
			// Megatron-DeepSpeed's per-GPU figure ("TFLOPs: 123.45")
			p.deepspeedSigns++
			st.setFloat(&st.TFLOPsPerGPU, "framework_tflops_per_gpu", val, 1)
		case "consumed tokens", "samples per second":
			p.deepspeedSigns++
			if keepExtra {
				st.extra(key, val)
			}
		case "actual seqlen":
			p.deepspeedSigns++
			if n, ok := integer(val); ok && p.actualSeq == nil {
				p.actualSeq = ptr(n)
				p.actualSeqLine = w.line
			}
			// mapped: the sequence length, not an unmapped extra
		case "learning rate":
			st.setFloat(&st.LearningRate, "learning_rate", val, 1)
		case "global batch size":
			st.setInt(&st.GlobalBatchSize, val)
		case "lm loss", "loss", "total loss":
			// "lm loss" is the language-model loss; other spellings only when it is absent.
			r := 1
			switch lk {
			case "lm loss":
				r = 3
			case "loss":
				r = 2
			}
			if r > lossRank {
				lossRank = r
				st.setFloat(&st.Loss, "loss", val, 1)
			}
			if lk != "lm loss" {
				if keepExtra {
					st.extra(key, val)
				}
			}
		case "loss scale":
			st.setFloat(&st.LossScale, "loss_scale", val, 1)
		case "grad norm":
			st.setFloat(&st.GradNorm, "grad_norm", val, 1)
		case "number of skipped iterations":
			st.setInt(&st.SkippedIterations, val)
		case "number of nan iterations":
			st.setInt(&st.NaNIterations, val)
		default:
			if keepExtra {
				st.extra(key, val)
			}
		}
	}
	if p.pendingBridge != nil {
		b := p.pendingBridge
		p.pendingBridge = nil
		if st.StepTimeSeconds == nil && !hasNonFinite(st.Step, "step_time_s") {
			st.StepTimeSeconds = b.StepTimeSeconds
		}
		if st.TFLOPsPerGPU == nil && !hasNonFinite(st.Step, "framework_tflops_per_gpu") {
			st.TFLOPsPerGPU = b.TFLOPsPerGPU
		}
		if st.TokensPerSecondPerGPU == nil {
			st.TokensPerSecondPerGPU = b.TokensPerSecondPerGPU
		}
		st.NonFinite = append(st.NonFinite, b.NonFinite...)
	}
	if st.StepTimeSeconds == nil && st.Loss == nil && st.TFLOPsPerGPU == nil && st.TokensPerSecondPerGPU == nil && len(st.NonFinite) == 0 {
		// "iteration 10/ 50 | consumed samples: 5120 |" and nothing after: the rest of
		// the line was lost (a wrap whose continuation did not follow).
		p.stats.CutLines++
		p.notef(n, "cut", "the iteration line has no step time, loss or throughput (the rest of a wrapped line is missing); step skipped")
		return
	}
	p.mega.add(p, st.Step, w.rank, w.hasRank, w.world)
}

func hasNonFinite(st Step, name string) bool {
	for _, n := range st.NonFinite {
		if n == name {
			return true
		}
	}
	return false
}

// megatronComplete reports whether an iteration line's segments all arrived:
// Megatron ends each segment with " |"; Primus may end the line with its memory
// segment instead ("... usage_ratio: 153.81GB/102.17GB/255.98GB/60.09%").
func megatronComplete(rest string) bool {
	t := strings.TrimRight(rest, " \t")
	if strings.HasSuffix(t, "|") {
		return true
	}
	last := t[strings.LastIndexByte(t, '|')+1:]
	return strings.Contains(last, "mem usage") && strings.HasSuffix(last, "%") && strings.Count(last, "/") >= 2
}

// canonicalKey lower-cases a printed key and collapses runs of spaces. Keys repeat on
// every line, so the result is cached (boundedly).
func (p *parser) canonicalKey(k string) string {
	if c, ok := p.keys[k]; ok {
		return c
	}
	c := strings.Join(strings.Fields(strings.ToLower(k)), " ")
	if known, ok := squeezedKey[squeeze(c)]; ok {
		// a key rejoined from a wrap without its space ("global batchsize")
		c = known
	}
	if len(p.keys) < 1024 {
		// k and c may be views of the line
		c = strings.Clone(c)
		p.keys[strings.Clone(k)] = c
	}
	return c
}

// Megatron's memory report: "[Rank 1] (after 1 iterations) memory (MB) | allocated: ...".
// Megatron-LM prints MB (really MiB: bytes/1024/1024); Megatron-Bridge prints
// "memory (GB)" with "mem-...-gigabytes" keys of 10^9 bytes. The header is found
// by memoryHeaderMatch (match.go), which returns what
// `\[Rank (\d+)\] \(after (\d+) iterations\) memory \(([A-Za-z]+)\)` finds.
func (p *parser) memoryLine(s string) bool {
	var mbuf [8]int
	if memoryHeaderMatch(s, &mbuf) == nil {
		return false
	}
	p.held(s, pendingLine{line: p.lineNo, memory: true})
	return true
}

// memoryReport reads a whole memory report.
func (p *parser) memoryReport(w *pendingLine) {
	s := w.text
	var mbuf [8]int
	m := memoryHeaderMatch(s, &mbuf)
	if m == nil {
		return
	}
	rank, _ := integer(s[m[2]:m[3]])
	after, _ := integer(s[m[4]:m[5]])
	unit := s[m[6]:m[7]]
	scale := 1.0 // MB and MiB
	switch strings.ToLower(unit) {
	case "gb":
		scale = mibPerGB
	case "gib":
		scale = mibPerGiB
	}
	note := MemoryNote{Rank: rank, AfterIterations: after}
	for _, seg := range strings.Split(s[m[1]:], "|") {
		key, val, found := strings.Cut(seg, ":")
		if !found {
			continue
		}
		key = strings.TrimSpace(key)
		lk := strings.ToLower(key)
		if k, ok := squeezedMemoryKey[squeeze(lk)]; ok {
			lk = k // rejoined from a wrap without its space
		}
		f, finite, ok := number(val)
		if !ok || !finite {
			note.setExtra(key, val)
			continue
		}
		sc := scale
		base := lk
		switch {
		case strings.HasSuffix(lk, "-gigabytes"):
			sc, base = mibPerGB, strings.TrimSuffix(strings.TrimPrefix(lk, "mem-"), "-gigabytes")
		case strings.HasSuffix(lk, "-bytes"):
			sc, base = mibPerB, strings.TrimSuffix(strings.TrimPrefix(lk, "mem-"), "-bytes")
		}
		v := ptr(f * sc)
		switch base {
		case "allocated":
			note.AllocatedMiB = v
		case "max allocated", "max-allocated":
			note.MaxAllocatedMiB = v
		case "reserved":
			note.ReservedMiB = v
		case "max reserved", "max-reserved":
			note.MaxReservedMiB = v
		default:
			note.setExtra(key, val)
		}
	}
	if strings.Contains(s, "-gigabytes") {
		p.bridgeSigns++
	}
	if len(p.mem) < maxMemoryNotes {
		p.mem = append(p.mem, note)
	}
}

// maxMemoryNotes bounds the memory reports kept (Megatron prints one per
// model-parallel rank, once).
const maxMemoryNotes = 4096

func (n *MemoryNote) setExtra(key, val string) {
	if n.Extra == nil {
		n.Extra = map[string]string{}
	}
	if len(n.Extra) < maxExtraKeys {
		n.Extra[strings.Clone(key)] = strings.Clone(strings.TrimSpace(val))
	}
}

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
