package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

type modelJSON struct {
	Type                    string   `json:"type"`
	Dropout                 *float64 `json:"dropout"`
	UnkToken                *string  `json:"unk_token"`
	ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
	FuseUnk                 bool     `json:"fuse_unk"`
	ByteFallback            bool     `json:"byte_fallback"`
	IgnoreMerges            bool     `json:"ignore_merges"`
}

func (t *Tokenizer) parseModel(raw json.RawMessage) error {
	if isNull(raw) {
		return fmt.Errorf("model: missing")
	}
	// The vocabulary and merges are read by jsonReader; the small fields by
	// encoding/json.
	var vocabRaw, mergesRaw json.RawMessage
	small := map[string]json.RawMessage{}
	r := &jsonReader{data: raw}
	err := r.object(func(key string) error {
		v, err := r.skipValue()
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		switch key {
		case "vocab":
			vocabRaw = v
		case "merges":
			mergesRaw = v
		default:
			small[key] = v
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	rest, err := json.Marshal(small)
	if err != nil {
		return fmt.Errorf("model: %w", err)
	}
	var m modelJSON
	ty, err := component(rest, "model", &m)
	if err != nil {
		return err
	}
	if ty != "BPE" {
		return fmt.Errorf("model: unsupported model type %q (supported: BPE)", ty)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return fmt.Errorf("model (BPE): dropout %v is unsupported (it makes encoding random); set it to null", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return fmt.Errorf("model (BPE): continuing_subword_prefix %q is unsupported", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return fmt.Errorf("model (BPE): end_of_word_suffix %q is unsupported", *m.EndOfWordSuffix)
	}
	t.ignoreMerges = m.IgnoreMerges
	t.byteFallback = m.ByteFallback
	t.fuseUnk = m.FuseUnk
	if err := t.parseVocab(vocabRaw); err != nil {
		return fmt.Errorf("model (BPE): vocab: %w", err)
	}
	t.unk = -1
	if m.UnkToken != nil {
		id, ok := t.modelVocab[*m.UnkToken]
		if !ok {
			return fmt.Errorf("model (BPE): unk_token %q is not in the vocab", *m.UnkToken)
		}
		t.unk = id
	}
	// Merges and the lookup vocabulary only read modelVocab: build them side by side.
	vocabErr := make(chan error, 1)
	go func() { vocabErr <- t.buildLookupVocab() }()
	mergeErr := t.parseMerges(mergesRaw)
	if err := <-vocabErr; err != nil {
		return err
	}
	if mergeErr != nil {
		return fmt.Errorf("model (BPE): merges: %w", mergeErr)
	}
	return nil
}

// buildLookupVocab fills vocab and byteToken.
func (t *Tokenizer) buildLookupVocab() error {
	// The lookup vocabulary: byte-level models compare raw bytes, so their
	// tokens are turned back from the printable byte alphabet into bytes.
	t.vocab = make(map[string]int32, len(t.modelVocab))
	if t.byteLevel {
		for i := range t.byteToken {
			t.byteToken[i] = -1
		}
		for tok, id := range t.modelVocab {
			b, ok := byteLevelDecode(tok)
			if !ok {
				continue // not made of byte symbols: BPE on bytes can never produce it
			}
			if prev, dup := t.vocab[b]; dup {
				return fmt.Errorf("model (BPE): vocab: tokens %d and %d are the same bytes %q", prev, id, b)
			}
			t.vocab[b] = id
			if len(b) == 1 {
				t.byteToken[b[0]] = id
			}
		}
		for i, id := range t.byteToken {
			if id < 0 {
				return fmt.Errorf("model (BPE): vocab has no token for byte 0x%02X, which a ByteLevel tokenizer needs", i)
			}
		}
	} else {
		// "▁" must be a token itself, or unknown characters around it could fuse.
		_, t.cutAtMeta = t.modelVocab[metaSpace]
		for tok, id := range t.modelVocab {
			t.vocab[tok] = id
			if i := strings.Index(tok, metaSpace); i > 0 && strings.TrimLeft(tok[:i], metaSpace) != "" {
				t.cutAtMeta = false // some token joins text to a following "▁"
			}
		}
		if t.byteFallback {
			for i := range t.byteToken {
				id, ok := t.modelVocab[fmt.Sprintf("<0x%02X>", i)]
				if !ok {
					id = -1
				}
				t.byteToken[i] = id
			}
		}
	}
	return nil
}

func (t *Tokenizer) parseVocab(raw json.RawMessage) error {
	if isNull(raw) {
		return fmt.Errorf("missing")
	}
	t.modelVocab = make(map[string]int32, 1<<16)
	t.idToToken = make(map[int32]string, 1<<16)
	r := &jsonReader{data: raw}
	err := r.object(func(tok string) error {
		id, err := r.integer()
		if err != nil {
			return fmt.Errorf("%q: %w", tok, err)
		}
		if other, dup := t.idToToken[int32(id)]; dup {
			a, b := min(other, tok), max(other, tok)
			return fmt.Errorf("id %d is used by both %q and %q", id, a, b)
		}
		if _, dup := t.modelVocab[tok]; dup {
			return fmt.Errorf("token %q appears twice", tok)
		}
		t.modelVocab[tok] = int32(id)
		t.idToToken[int32(id)] = tok
		return nil
	})
	if err != nil {
		return err
	}
	if len(t.modelVocab) == 0 {
		return fmt.Errorf("empty")
	}
	return nil
}

// parseMerges reads merges written as "a b" strings or ["a", "b"] pairs.
func (t *Tokenizer) parseMerges(raw json.RawMessage) error {
	t.merges = make(map[uint64]merge, len(raw)/16)
	if isNull(raw) {
		return nil
	}
	r := &jsonReader{data: raw}
	var first, cat []byte
	return r.array(func(i int) error {
		var a, b []byte
		if r.peek() == '[' {
			r.pos++
			s, err := r.str()
			if err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
			first = append(first[:0], s...)
			if err := r.expect(','); err != nil {
				return fmt.Errorf("[%d]: want a pair: %w", i, err)
			}
			if b, err = r.str(); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
			if err := r.expect(']'); err != nil {
				return fmt.Errorf("[%d]: want a pair: %w", i, err)
			}
			a = first
		} else {
			s, err := r.str()
			if err != nil {
				return fmt.Errorf("[%d]: want \"a b\" or [\"a\", \"b\"]: %w", i, err)
			}
			sp := -1
			for k, c := range s {
				if c == ' ' {
					if sp >= 0 {
						sp = -2
						break
					}
					sp = k
				}
			}
			if sp < 0 {
				return fmt.Errorf("[%d] %q: want two tokens separated by one space", i, s)
			}
			a, b = s[:sp], s[sp+1:]
		}
		ida, okA := t.modelVocab[string(a)]
		idb, okB := t.modelVocab[string(b)]
		if !okA || !okB {
			missing := a
			if okA {
				missing = b
			}
			return fmt.Errorf("[%d] [%q %q]: token %q is not in the vocab", i, a, b, missing)
		}
		cat = append(append(cat[:0], a...), b...)
		id, ok := t.modelVocab[string(cat)]
		if !ok {
			return fmt.Errorf("[%d] [%q %q]: the merged token %q is not in the vocab", i, a, b, cat)
		}
		// A repeated pair takes its last rank, as the reference's map does.
		t.merges[pairKey(ida, idb)] = merge{rank: int32(i), id: id}
		return nil
	})
}

// The ByteLevel alphabet: every byte is shown as a printable character. Bytes
// that are printable Latin-1 stand for themselves; the others take code points
// from U+0100 up, in byte order.
var byteToRune, runeToByte = buildByteAlphabet()

func buildByteAlphabet() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = next
			next++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}

// byteLevelDecode turns a token written in the ByteLevel alphabet into its bytes.
func byteLevelDecode(tok string) (string, bool) {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return "", false
		}
		out = append(out, b)
	}
	return string(out), utf8.RuneCountInString(tok) > 0
}
