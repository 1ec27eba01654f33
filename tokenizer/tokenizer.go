// Package tokenizer encodes text to token ids exactly as Hugging Face tokenizers
// (the Rust library, 0.22) does for the byte-level BPE tokenizers of Llama 3.1 and
// Qwen 2.5 and the sentencepiece-style BPE tokenizer of Mistral 7B, reading their
// tokenizer.json files, and does it faster.
//
// A Tokenizer is immutable after loading and safe for concurrent use.
//
// [Load] (or [FromJSON]) reads a tokenizer.json; [Tokenizer.Encode], [Tokenizer.AppendEncode] and
// [Tokenizer.EncodeBatch] turn text into ids, [Tokenizer.Decode] turns them back. It imports
// nothing else from Rival; the encode targets in package tasks and the command in cmd/tokenize
// use it.
package tokenizer

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// Tokenizer turns text into token ids and back.
type Tokenizer struct {
	normalize normalizeFunc // nil: none
	split     *splitter     // nil: the whole normalized segment is one word
	byteLevel bool          // ByteLevel pre-tokenizer: BPE runs on raw bytes

	vocab        map[string]int32 // lookup form: raw bytes for byte-level models
	modelVocab   map[string]int32 // as written in tokenizer.json
	merges       map[uint64]merge
	byteToken    [256]int32 // byte-level: the token of each byte; byte fallback: <0xXX>, or -1
	ignoreMerges bool
	// cutAtMeta: no token has "▁" after other text, so no merge can join a
	// symbol ending in other text to one starting with "▁", and a whole-segment
	// word can be cut before each such "▁" without changing the result.
	cutAtMeta    bool
	byteFallback bool
	fuseUnk      bool
	unk          int32 // -1: none

	added       *trie
	addedByName map[string]int32 // added tokens by content
	idToToken   map[int32]string // every token, model and added

	hasTemplate    bool
	prefix, suffix []int32 // ids the template puts around a single sequence

	decoders []decoderStep

	// stream describes how documents may be cut for NewStream; set once.
	stream     *streamInfo
	streamOnce sync.Once

	// states holds idle scratch states. Unlike a sync.Pool it survives garbage
	// collections, so each state's word cache stays warm.
	states chan *encState
}

// Encode returns the ids of text without special tokens (add_special_tokens=False).
// Added tokens written in the text (such as "<|endoftext|>") are recognized, as
// the reference does. Invalid UTF-8 is first replaced as ValidUTF8 does.
func (t *Tokenizer) Encode(text string) []int {
	return t.toInts(text, false)
}

// EncodeWithSpecial returns the ids of text with the tokenizer's special tokens
// added by its template (add_special_tokens=True), e.g. Llama 3.1's BOS.
func (t *Tokenizer) EncodeWithSpecial(text string) []int {
	return t.toInts(text, true)
}

func (t *Tokenizer) toInts(text string, special bool) []int {
	st := t.getState()
	st.out = t.appendEncode(st, st.out[:0], text, special)
	ids := make([]int, len(st.out))
	for i, id := range st.out {
		ids[i] = int(id)
	}
	t.putState(st)
	return ids
}

// AppendEncode appends the ids of text to dst and returns the extended slice; with
// special, the template's special tokens are added as in EncodeWithSpecial. In
// steady state it allocates nothing beyond growing dst.
func (t *Tokenizer) AppendEncode(dst []int32, text string, special bool) []int32 {
	st := t.getState()
	dst = t.appendEncode(st, dst, text, special)
	t.putState(st)
	return dst
}

// EncodeBatch encodes every text (without special tokens) on workers goroutines,
// all cores when workers <= 0, and returns the ids in input order.
func (t *Tokenizer) EncodeBatch(texts []string, workers int) [][]int {
	return t.batch(texts, workers, false)
}

// EncodeBatchWithSpecial is EncodeBatch with special tokens added.
func (t *Tokenizer) EncodeBatchWithSpecial(texts []string, workers int) [][]int {
	return t.batch(texts, workers, true)
}

func (t *Tokenizer) batch(texts []string, workers int, special bool) [][]int {
	out := make([][]int, len(texts))
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(texts))
	if workers <= 1 {
		// One worker: encode in the caller's goroutine, sparing a goroutine
		// start and its wake-up per batch, which show up on small batches.
		for i, text := range texts {
			out[i] = t.toInts(text, special)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(texts) {
					return
				}
				out[i] = t.toInts(texts[i], special)
			}
		}()
	}
	wg.Wait()
	return out
}

// VocabSize is the number of distinct token ids, added tokens included.
func (t *Tokenizer) VocabSize() int { return len(t.idToToken) }

// TokenID returns the id of a token given as written in tokenizer.json, such as
// "<|begin_of_text|>" or "<s>".
func (t *Tokenizer) TokenID(name string) (int, bool) {
	if id, ok := t.addedByName[name]; ok {
		return int(id), true
	}
	id, ok := t.modelVocab[name]
	return int(id), ok
}

// Token returns the token with the given id as written in tokenizer.json.
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id > maxID {
		return "", false
	}
	s, ok := t.idToToken[int32(id)]
	return s, ok
}

// SpecialIDs returns the ids the template adds before and after a sequence when
// special tokens are requested.
func (t *Tokenizer) SpecialIDs() (prefix, suffix []int) {
	for _, id := range t.prefix {
		prefix = append(prefix, int(id))
	}
	for _, id := range t.suffix {
		suffix = append(suffix, int(id))
	}
	return prefix, suffix
}

// encState is per-goroutine scratch space, reused through the pool.
type encState struct {
	out   []int32
	norm  []byte
	text  []byte
	syms  []int32
	ranks []int32
	heap  mergeHeap
	links []link
	cache map[string]cacheEntry
	arena []int32
	keys  int // bytes of cached words, bounding the cache's memory
}

type cacheEntry struct{ off, n uint32 }

const (
	cacheWordMax   = 256     // longer words are not cached (bytes)
	cacheArenaMax  = 1 << 20 // ids kept before the cache starts afresh
	cacheKeysMax   = 8 << 20 // word bytes kept before the cache starts afresh
	heapWordLength = 48      // words with more symbols merge through a heap
)

func (t *Tokenizer) getState() *encState {
	select {
	case st := <-t.states:
		return st
	default:
		return &encState{cache: make(map[string]cacheEntry, 4096)}
	}
}

func (t *Tokenizer) putState(st *encState) {
	if cap(st.out) > 1<<20 {
		st.out = nil
	}
	if cap(st.norm) > 1<<20 {
		st.norm, st.text = nil, nil
	}
	if cap(st.syms) > 1<<16 {
		st.syms, st.ranks, st.links, st.heap = nil, nil, nil, nil
	}
	select {
	case t.states <- st:
	default: // enough idle states already
	}
}

func (t *Tokenizer) appendEncode(st *encState, dst []int32, text string, special bool) []int32 {
	if !utf8.ValidString(text) {
		st.text = appendValidUTF8(st.text[:0], text)
		text = unsafe.String(unsafe.SliceData(st.text), len(st.text))
	}
	if special {
		dst = append(dst, t.prefix...)
	}
	for i := 0; i < len(text); {
		start, end, id := t.added.find(text, i)
		if start < 0 {
			dst = t.encodeSegment(st, dst, text[i:])
			break
		}
		if start > i {
			dst = t.encodeSegment(st, dst, text[i:start])
		}
		dst = append(dst, id)
		i = end
	}
	if special {
		dst = append(dst, t.suffix...)
	}
	return dst
}

// encodeSegment encodes text that holds no added token.
func (t *Tokenizer) encodeSegment(st *encState, dst []int32, s string) []int32 {
	if t.normalize != nil {
		st.norm = t.normalize(st.norm[:0], s)
		s = unsafe.String(unsafe.SliceData(st.norm), len(st.norm))
	}
	if t.split == nil {
		if !t.cutAtMeta {
			return t.encodeWord(st, dst, s)
		}
		for len(s) > 0 {
			j := cutBeforeMeta(s)
			dst = t.encodeWord(st, dst, s[:j])
			s = s[j:]
		}
		return dst
	}
	for i := 0; i < len(s); {
		j := t.split.next(s, i)
		dst = t.encodeWord(st, dst, s[i:j])
		i = j
	}
	return dst
}

// encodeWord runs BPE on one pre-tokenized word.
func (t *Tokenizer) encodeWord(st *encState, dst []int32, w string) []int32 {
	if len(w) == 0 {
		return dst
	}
	if t.ignoreMerges {
		if id, ok := t.vocab[w]; ok {
			return append(dst, id)
		}
	}
	if len(w) <= cacheWordMax {
		if e, ok := st.cache[w]; ok {
			return append(dst, st.arena[e.off:e.off+e.n]...)
		}
	}
	syms := t.initialSymbols(st.syms[:0], w)
	if len(syms) > heapWordLength {
		syms = t.mergeHeap(st, syms)
	} else {
		syms = t.mergeSmall(st, syms)
	}
	st.syms = syms
	if len(w) <= cacheWordMax {
		if len(st.arena)+len(syms) > cacheArenaMax || st.keys+len(w) > cacheKeysMax {
			clear(st.cache)
			st.arena = st.arena[:0]
			st.keys = 0
		}
		st.keys += len(w)
		st.cache[strings.Clone(w)] = cacheEntry{off: uint32(len(st.arena)), n: uint32(len(syms))}
		st.arena = append(st.arena, syms...)
	}
	return append(dst, syms...)
}

// initialSymbols splits a word into the tokens BPE starts from: bytes for
// byte-level models; characters otherwise, falling back to <0xXX> byte tokens or
// the unknown token for characters outside the vocabulary.
func (t *Tokenizer) initialSymbols(syms []int32, w string) []int32 {
	if t.byteLevel {
		for i := 0; i < len(w); i++ {
			syms = append(syms, t.byteToken[w[i]])
		}
		return syms
	}
	unkPending := false
	for i := 0; i < len(w); {
		_, n := utf8.DecodeRuneInString(w[i:])
		if id, ok := t.vocab[w[i:i+n]]; ok {
			if unkPending {
				syms = append(syms, t.unk)
				unkPending = false
			}
			syms = append(syms, id)
			i += n
			continue
		}
		if t.byteFallback && t.hasByteTokens(w[i:i+n]) {
			if unkPending {
				syms = append(syms, t.unk)
				unkPending = false
			}
			for k := i; k < i+n; k++ {
				syms = append(syms, t.byteToken[w[k]])
			}
			i += n
			continue
		}
		if t.unk >= 0 {
			if unkPending && !t.fuseUnk {
				syms = append(syms, t.unk)
			}
			unkPending = true
		}
		i += n
	}
	if unkPending {
		syms = append(syms, t.unk)
	}
	return syms
}

func (t *Tokenizer) hasByteTokens(s string) bool {
	for i := 0; i < len(s); i++ {
		if t.byteToken[s[i]] < 0 {
			return false
		}
	}
	return true
}

const noRank = int32(1<<31 - 1)

func (t *Tokenizer) rank(a, b int32) (int32, int32) {
	if m, ok := t.merges[pairKey(a, b)]; ok {
		return m.rank, m.id
	}
	return noRank, 0
}

// mergeSmall applies merges lowest rank first, leftmost on ties, rescanning a
// short array of pair ranks.
func (t *Tokenizer) mergeSmall(st *encState, syms []int32) []int32 {
	if len(syms) < 2 {
		return syms
	}
	ranks := st.ranks[:0]
	for k := 0; k+1 < len(syms); k++ {
		r, _ := t.rank(syms[k], syms[k+1])
		ranks = append(ranks, r)
	}
	for len(syms) > 1 {
		best, bi := noRank, -1
		for k, r := range ranks {
			if r < best {
				best, bi = r, k
			}
		}
		if bi < 0 {
			break
		}
		_, id := t.rank(syms[bi], syms[bi+1])
		syms[bi] = id
		syms = append(syms[:bi+1], syms[bi+2:]...)
		ranks = append(ranks[:bi], ranks[bi+1:]...)
		if bi > 0 {
			ranks[bi-1], _ = t.rank(syms[bi-1], syms[bi])
		}
		if bi < len(ranks) {
			ranks[bi], _ = t.rank(syms[bi], syms[bi+1])
		}
	}
	st.ranks = ranks
	return syms
}

// link is a symbol in the doubly linked list mergeHeap works on.
type link struct {
	id         int32
	prev, next int32 // -1 at the ends
	dead       bool
}

type heapItem struct {
	rank int32
	pos  int32 // left symbol
}

// mergeHeap is a binary min-heap on (rank, pos).
type mergeHeap []heapItem

func (h mergeHeap) less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].pos < h[j].pos
}

func (h *mergeHeap) push(it heapItem) {
	*h = append(*h, it)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.less(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *mergeHeap) pop() heapItem {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s.less(l, m) {
			m = l
		}
		if r < len(s) && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// mergeHeap applies the same merges as mergeSmall in O(n log n), for long words
// (a sentencepiece model sees a whole document as one word).
func (t *Tokenizer) mergeHeap(st *encState, syms []int32) []int32 {
	links := st.links[:0]
	for k, id := range syms {
		links = append(links, link{id: id, prev: int32(k - 1), next: int32(k + 1)})
	}
	links[len(links)-1].next = -1
	h := st.heap[:0]
	for k := 0; k+1 < len(syms); k++ {
		if r, _ := t.rank(syms[k], syms[k+1]); r != noRank {
			h.push(heapItem{rank: r, pos: int32(k)})
		}
	}
	for len(h) > 0 {
		it := h.pop()
		a := &links[it.pos]
		if a.dead || a.next < 0 {
			continue
		}
		r, id := t.rank(a.id, links[a.next].id)
		if r != it.rank {
			continue // the pair changed since it was queued
		}
		b := &links[a.next]
		a.id = id
		b.dead = true
		a.next = b.next
		if b.next >= 0 {
			links[b.next].prev = it.pos
		}
		if a.prev >= 0 {
			if r, _ := t.rank(links[a.prev].id, a.id); r != noRank {
				h.push(heapItem{rank: r, pos: a.prev})
			}
		}
		if a.next >= 0 {
			if r, _ := t.rank(a.id, links[a.next].id); r != noRank {
				h.push(heapItem{rank: r, pos: it.pos})
			}
		}
	}
	syms = syms[:0]
	for k := int32(0); k >= 0; k = links[k].next {
		syms = append(syms, links[k].id)
	}
	st.links, st.heap = links, h
	return syms
}

// appendValidUTF8 appends s with every ill-formed sequence replaced by U+FFFD,
// one replacement per maximal subpart (Unicode §3.9, the WHATWG decoder, Rust's
// from_utf8_lossy): what the reference receives when such bytes are read as text.
func appendValidUTF8(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r != utf8.RuneError || n > 1 {
			dst = append(dst, s[i:i+n]...)
			i += n
			continue
		}
		dst = append(dst, "\uFFFD"...)
		i += maximalSubpart(s[i:])
	}
	return dst
}

// maximalSubpart returns the length of the ill-formed prefix of s that counts as
// one error: a lead byte and the continuation bytes that may follow it.
func maximalSubpart(s string) int {
	c := s[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(s); n++ {
		b := s[n]
		if b < lo || b > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}

// metaSpace is the sentencepiece word marker that stands for a space.
const metaSpace = "\u2581"

// cutBeforeMeta returns the end of the first piece of s: the position of the
// first "▁" that follows other text, or len(s).
func cutBeforeMeta(s string) int {
	i := 0
	for i < len(s) && strings.HasPrefix(s[i:], metaSpace) {
		i += len(metaSpace)
	}
	if k := strings.Index(s[i:], metaSpace); k >= 0 {
		return i + k
	}
	return len(s)
}

// ValidUTF8 returns s with every ill-formed UTF-8 sequence replaced by U+FFFD,
// one per maximal subpart: the text the reference sees when such bytes are read
// as UTF-8, and what Encode does to invalid input.
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(appendValidUTF8(nil, s))
}

// maxID bounds token ids so they fit int32 with room to spare.
const maxID = 1 << 30

// normalizeFunc appends the normalized form of s to dst.
type normalizeFunc func(dst []byte, s string) []byte

type decoderStep struct {
	kind       string
	old, new   string // Replace
	start, end int    // Strip
	strip      string // Strip content
}

// merge is what a pair of adjacent tokens becomes: the new token and the rank
// (lower merges first).
type merge struct {
	rank, id int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// streamInfo is what streaming needs to know of a tokenizer beyond what
// Encode uses: how to normalize a segment's first piece and its later ones.
type streamInfo struct {
	ok         bool
	why        string        // when !ok: what makes the tokenizer unstreamable
	nfc        bool          // the normalizer is NFC: cuts before ASCII only
	start      normalizeFunc // a segment's first piece
	cont       normalizeFunc // every later piece
	maxAdded   int           // longest added token, bytes
	canCutWord bool          // pre-tokenizer cuts exist (split or cutAtMeta)
}
