package tokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"
	"unsafe"

	"github.com/rivalbench/rival/safefile"
)

// DefaultMaxPending is the most text a Stream holds back by default: the
// longest pre-token (a run of letters with no space, digit or punctuation, a
// Mistral word with no space) it accepts. Real text never comes near it; a
// document that does is refused with ErrPreTokenTooLong rather than merged in
// gigabytes of scratch (BPE needs about 24 bytes per byte of the word).
const DefaultMaxPending = 8 << 20

// ErrPreTokenTooLong is the error (wrapped, with the position) a Stream
// returns when the text it must hold back grows past its limit.
var ErrPreTokenTooLong = errors.New("pre-token too long")

// Stream encodes one document handed over in pieces, with exactly the ids
// Encode (or EncodeWithSpecial) gives for the whole document, while holding
// back only the text that a later piece could still change: the bytes after
// the last point where the document can be cut. Memory is a constant plus the
// longest pre-token, never the document. Obtain one with NewStream, call
// Write for each piece in order, then Close. A Stream is not safe for
// concurrent use; the Tokenizer stays shareable.
//
// The cuts, and why nothing can join across them:
//   - The input is first made valid UTF-8 (as Encode does) only up to the last
//     byte that is not a continuation byte: a maximal ill-formed subpart never
//     extends past such a byte.
//   - Added tokens are matched in the raw text. A cut at c is used only when
//     no added token that occurs in the text starts before c and ends after c,
//     so leftmost-longest matching on each side equals matching on the whole.
//   - The normalizer runs on each side of a cut separately. That is exact for
//     no normalizer; for NFC when the character after the cut is ASCII (a
//     starter that composes with nothing before it, so neither reordering nor
//     composition crosses it); and for Prepend and Replace steps whose pattern
//     is one character (Prepend applies only at the start of a segment, and a
//     one-character pattern cannot straddle a character boundary).
//   - Pre-tokenizer pieces: the Llama 3 and Qwen 2 patterns always end a piece
//     between a letter and a following non-letter, between a number and a
//     following non-number, and between punctuation ([^\s\p{L}\p{N}]) and a
//     following number or non-newline space; the piece before such a point
//     looks at most one character past it and the pieces after it depend only
//     on the text after it (TestSplitBoundaryMatchesOracle and
//     FuzzSplitBoundary check this against the regex oracle). For Mistral (no
//     pre-tokenizer, cutAtMeta) the word boundaries are the "▁" that follow
//     other text, as Encode cuts them.
type Stream struct {
	t       *Tokenizer
	info    *streamInfo
	st      *encState
	special bool
	max     int

	tail  []byte // raw bytes that may begin an incomplete UTF-8 sequence
	raw   []byte // valid text not yet cut into segments
	norm  []byte // normalized text of the current segment not yet encoded
	inSeg bool   // the current segment has received text: no Prepend again
	// normScanned: norm[:normScanned] holds no usable cut, so the backward
	// search for one stops there (a long word is scanned once, not per Write).
	normScanned int
	rawScanned  int
	offset      int64 // raw bytes handed to Write so far
	err         error
	started     bool
	closed      bool
}

// NewStream starts encoding one document in pieces; with special, the
// template's special tokens are added as EncodeWithSpecial adds them. It
// fails for a tokenizer whose normalizer it cannot cut exactly (see
// LoadForStreaming); maxPending <= 0 means DefaultMaxPending.
func (t *Tokenizer) NewStream(special bool, maxPending int) (*Stream, error) {
	if err := t.CanStream(); err != nil {
		return nil, err
	}
	info := t.streamInfo()
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	return &Stream{t: t, info: info, st: t.getState(), special: special, max: maxPending}, nil
}

// CanStream reports why NewStream would fail, or nil when it would not.
func (t *Tokenizer) CanStream() error {
	if info := t.streamInfo(); !info.ok {
		return fmt.Errorf("tokenizer: cannot encode in pieces: %s", info.why)
	}
	return nil
}

// streamInfo describes the tokenizer for streaming. A normalizer is known
// when there is none, when it is NFC itself, or when LoadForStreaming read
// its steps from the tokenizer.json.
func (t *Tokenizer) streamInfo() *streamInfo {
	t.streamOnce.Do(func() {
		if t.stream != nil {
			return
		}
		info := &streamInfo{ok: true}
		switch {
		case t.normalize == nil:
		case reflect.ValueOf(t.normalize).Pointer() == reflect.ValueOf(normalizeFunc(appendNFC)).Pointer():
			info.nfc, info.start, info.cont = true, appendNFC, appendNFC
		default:
			info.ok, info.why = false, "its normalizer is a sequence whose steps are known only from the tokenizer.json (load it with LoadForStreaming)"
		}
		t.finishStreamInfo(info)
		t.stream = info
	})
	return t.stream
}

func (t *Tokenizer) finishStreamInfo(info *streamInfo) {
	for s := range t.addedByName {
		info.maxAdded = max(info.maxAdded, len(s))
	}
	info.canCutWord = t.split != nil || t.cutAtMeta
}

// LoadForStreaming is LoadContext for a caller that will also encode
// documents in pieces with NewStream. A Tokenizer keeps its normalizer as a
// function; when that function is a sequence of steps, which pieces it may be
// cut into depends on the steps, so they are read from the same bytes' own
// "normalizer". Streaming is refused (NewStream fails) for steps it cannot
// cut exactly.
func LoadForStreaming(ctx context.Context, path string) (*Tokenizer, error) {
	data, err := safefile.ReadFile(ctx, path, safefile.LimitTokenizer)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer %s: %w", path, err)
	}
	t, err := FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	if t.streamInfo().ok {
		return t, nil
	}
	info, err := streamInfoFromJSON(t, data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s for streaming: %w", path, err)
	}
	t.stream = info
	return t, nil
}

// streamInfoFromJSON reads the normalizer steps of data. Supported for
// streaming: NFC alone; Prepend, and Replace with a one-character pattern,
// in any sequence. The normalizer built from them must behave as t's on probes, so
// a file that changed since Load is an error, not a silent mismatch.
func streamInfoFromJSON(t *Tokenizer, data []byte) (*streamInfo, error) {
	var raw json.RawMessage
	r := &jsonReader{data: data}
	err := r.object(func(key string) error {
		v, err := r.skipValue()
		if err == nil && key == "normalizer" {
			raw = v
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var steps []json.RawMessage
	if err := flattenNormalizer(raw, &steps); err != nil {
		return nil, err
	}
	info := &streamInfo{ok: true}
	var cont []json.RawMessage
	for i, s := range steps {
		var n struct {
			Type    string `json:"type"`
			Pattern struct {
				String *string `json:"String"`
			} `json:"pattern"`
		}
		if err := json.Unmarshal(s, &n); err != nil {
			return nil, fmt.Errorf("normalizer step %d: %w", i, err)
		}
		switch n.Type {
		case "NFC":
			if len(steps) == 1 { // cut before ASCII only
				info.nfc = true
			} else {
				info.ok, info.why = false, fmt.Sprintf("normalizer step %d (NFC) inside a sequence cannot be cut exactly", i)
			}
		case "Prepend":
			continue // a segment's first piece only
		case "Replace":
			if n.Pattern.String == nil || utf8.RuneCountInString(*n.Pattern.String) != 1 || !utf8.ValidString(*n.Pattern.String) {
				info.ok, info.why = false, fmt.Sprintf("normalizer step %d: a Replace pattern of more than one character could straddle a cut", i)
			}
		default:
			info.ok, info.why = false, fmt.Sprintf("normalizer step %d (%s) inside a sequence cannot be cut exactly", i, n.Type)
		}
		cont = append(cont, s)
	}
	if !info.ok {
		t.finishStreamInfo(info)
		return info, nil
	}
	start, err := parseNormalizer(raw, "normalizer")
	if err != nil {
		return nil, err
	}
	info.start = start
	if len(cont) > 0 {
		seq, _ := json.Marshal(map[string]any{"type": "Sequence", "normalizers": cont})
		if info.cont, err = parseNormalizer(seq, "normalizer"); err != nil {
			return nil, err
		}
	}
	for _, probe := range []string{"a", " a b  c ", "\u2581x y", "Hello, world!\n", "é e\u0301"} {
		if string(start(nil, probe)) != string(t.normalize(nil, probe)) {
			return nil, errors.New("the normalizer read for streaming differs from the loaded one: the file changed while loading; load it again")
		}
	}
	t.finishStreamInfo(info)
	return info, nil
}

func flattenNormalizer(raw json.RawMessage, out *[]json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var n struct {
		Type        string            `json:"type"`
		Normalizers []json.RawMessage `json:"normalizers"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return fmt.Errorf("normalizer: %w", err)
	}
	if n.Type != "Sequence" {
		*out = append(*out, raw)
		return nil
	}
	for _, s := range n.Normalizers {
		if err := flattenNormalizer(s, out); err != nil {
			return err
		}
	}
	return nil
}

// Write encodes what it can of the next piece of the document and appends
// those ids to dst. After an error the Stream is unusable and every call
// returns the same error.
func (s *Stream) Write(dst []int32, p []byte) ([]int32, error) {
	if s.err != nil {
		return dst, s.err
	}
	if s.closed {
		return dst, errors.New("tokenizer: Write after Close")
	}
	if !s.started {
		s.started = true
		if s.special {
			dst = append(dst, s.t.prefix...)
		}
	}
	s.offset += int64(len(p))
	// Stage 0: valid UTF-8, holding back a sequence that may be incomplete.
	if len(s.tail) > 0 {
		s.tail = append(s.tail, p...)
		p = s.tail
	}
	keep := incompleteSuffix(p)
	s.raw = appendValid(s.raw, p[:len(p)-keep])
	s.tail = append(s.tail[:0], p[len(p)-keep:]...)
	// Stage 1: added tokens and the normalizer, up to the last raw cut.
	c := s.rawCut()
	dst = s.segments(dst, s.raw[:c])
	s.raw = s.raw[:copy(s.raw, s.raw[c:])]
	s.rawScanned = max(0, min(s.rawScanned-c, len(s.raw)))
	return dst, s.tooLong()
}

// tooLong fails the Stream when the text it holds back passes the limit.
func (s *Stream) tooLong() error {
	if len(s.raw) <= s.max && len(s.norm) <= s.max {
		return nil
	}
	s.err = fmt.Errorf("tokenizer: %w: more than %d bytes of the document before byte %d have no point where encoding may be cut (one run of letters, digits or punctuation, or for Mistral one word without a space); split the document or raise the limit", ErrPreTokenTooLong, s.max, s.offset)
	s.release()
	return s.err
}

// Close encodes the rest of the document, appends the template's closing
// special tokens, and releases the Stream's scratch state.
func (s *Stream) Close(dst []int32) ([]int32, error) {
	if s.err != nil {
		return dst, s.err
	}
	if s.closed {
		return dst, errors.New("tokenizer: Close called twice")
	}
	if !s.started && s.special {
		dst = append(dst, s.t.prefix...)
	}
	s.started = true
	s.raw = appendValid(s.raw, s.tail)
	s.tail = s.tail[:0]
	dst = s.segments(dst, s.raw)
	if err := s.tooLong(); err != nil {
		return dst, err
	}
	dst = s.endSegment(dst)
	if s.special {
		dst = append(dst, s.t.suffix...)
	}
	s.closed = true
	s.release()
	return dst, nil
}

func (s *Stream) release() {
	if s.st != nil {
		s.t.putState(s.st)
		s.st = nil
	}
	s.raw, s.norm, s.tail = nil, nil, nil
}

// incompleteSuffix is the length of the end of p that could be the start of
// a UTF-8 sequence completed by the next piece.
func incompleteSuffix(p []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(p); k++ {
		b := p[len(p)-k]
		if b < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(b) {
			if utf8.FullRune(p[len(p)-k:]) {
				return 0
			}
			return k
		}
	}
	return 0
}

func appendValid(dst, p []byte) []byte {
	if utf8.Valid(p) {
		return append(dst, p...)
	}
	return appendValidUTF8(dst, unsafe.String(unsafe.SliceData(p), len(p)))
}

// rawCut is the last position of s.raw where stage 1 may stop: the bytes
// after it can still be part of an added token that starts before it, or (for
// NFC) combine with what precedes.
func (s *Stream) rawCut() int {
	lo := s.rawScanned
	// The cut needs the character after it, and every byte an added token
	// starting before it could reach.
	end := len(s.raw) - max(s.info.maxAdded-1, 1)
	for c := end; c > lo; c-- {
		if s.rawCutOK(c) {
			s.rawScanned = c
			return c
		}
	}
	s.rawScanned = max(lo, end)
	return 0
}

func (s *Stream) rawCutOK(c int) bool {
	b := s.raw[c]
	if !utf8.RuneStart(b) || s.info.nfc && b >= utf8.RuneSelf {
		return false
	}
	tr := s.t.added
	if !tr.any {
		return true
	}
	for j := max(0, c-s.info.maxAdded+1); j < c; j++ {
		if !tr.first[s.raw[j]] {
			continue
		}
		node := int32(0)
		for k := j; k < len(s.raw); k++ {
			child, ok := tr.edges[uint64(node)<<8|uint64(s.raw[k])]
			if !ok {
				break
			}
			node = child
			if k+1 > c && tr.ids[node] >= 0 {
				return false // an added token spans the cut
			}
		}
	}
	return true
}

// segments runs added-token matching over text, which ends at a raw cut.
func (s *Stream) segments(dst []int32, text []byte) []int32 {
	str := unsafe.String(unsafe.SliceData(text), len(text))
	for i := 0; i < len(str); {
		start, end, id := s.t.added.find(str, i)
		if start < 0 {
			dst = s.piece(dst, text[i:])
			break
		}
		if start > i {
			dst = s.piece(dst, text[i:start])
		}
		dst = s.endSegment(dst)
		dst = append(dst, id)
		i = end
	}
	return dst
}

// piece normalizes the next part of the current segment and encodes the
// words that can no longer change.
func (s *Stream) piece(dst []int32, text []byte) []int32 {
	if len(text) == 0 {
		return dst
	}
	str := unsafe.String(unsafe.SliceData(text), len(text))
	switch {
	case s.info.start == nil:
		s.norm = append(s.norm, text...)
	case !s.inSeg:
		s.norm = s.info.start(s.norm, str)
	case s.info.cont != nil:
		s.norm = s.info.cont(s.norm, str)
	default:
		s.norm = append(s.norm, text...)
	}
	s.inSeg = true
	if !s.info.canCutWord {
		return dst
	}
	c := s.wordCut()
	if c == 0 {
		return dst
	}
	dst = s.words(dst, s.norm[:c])
	s.norm = s.norm[:copy(s.norm, s.norm[c:])]
	s.normScanned = 0
	return dst
}

// endSegment encodes the rest of the segment: its end is the text's end for
// the pre-tokenizer.
func (s *Stream) endSegment(dst []int32) []int32 {
	dst = s.words(dst, s.norm)
	s.norm = s.norm[:0]
	s.normScanned = 0
	s.inSeg = false
	return dst
}

// words encodes normalized text that ends at a word cut (or the segment's end).
func (s *Stream) words(dst []int32, norm []byte) []int32 {
	t, st := s.t, s.st
	w := unsafe.String(unsafe.SliceData(norm), len(norm))
	switch {
	case t.split != nil:
		for i := 0; i < len(w); {
			j := t.split.next(w, i)
			dst = t.encodeWord(st, dst, w[i:j])
			i = j
		}
	case t.cutAtMeta:
		for len(w) > 0 {
			j := cutBeforeMeta(w)
			dst = t.encodeWord(st, dst, w[:j])
			w = w[j:]
		}
	default:
		dst = t.encodeWord(st, dst, w)
	}
	return dst
}

// wordCut is the last position in s.norm where the pre-tokenizer provably
// ends a piece whatever follows, or 0.
func (s *Stream) wordCut() int {
	n := s.norm
	lo := s.normScanned
	defer func() { s.normScanned = max(lo, len(n)-utf8.UTFMax) }()
	if s.t.split == nil { // cutAtMeta: before a "▁" that follows other text
		for c := len(n) - len(metaSpace); c > lo && c > 0; c-- {
			if bytes.HasPrefix(n[c:], []byte(metaSpace)) && !bytes.HasSuffix(n[:c], []byte(metaSpace)) {
				return c
			}
		}
		return 0
	}
	str := unsafe.String(unsafe.SliceData(n), len(n))
	c := len(n)
	for c > lo {
		_, ny := utf8.DecodeLastRune(n[:c])
		y := c - ny // the character after the candidate cut starts at y
		if y <= lo || y == 0 {
			return 0
		}
		cy, _ := classAt(str, y)
		_, nx := utf8.DecodeLastRune(n[:y])
		cx, _ := classAt(str, y-nx)
		if splitBoundary(cx, cy) {
			return y
		}
		c = y
	}
	return 0
}

// splitBoundary reports whether the Llama 3 and Qwen 2 patterns end a piece
// between a character of class x and a following one of class y, whatever
// surrounds them.
func splitBoundary(x, y uint8) bool {
	switch x {
	case clsLetter:
		return y != clsLetter
	case clsNumber:
		return y != clsNumber
	case clsOther:
		return y == clsNumber || y == clsSpace
	}
	return false
}
