package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

type modelJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// merge is what a pair of adjacent tokens becomes: the new token and the rank
// (lower merges first).
type merge struct {
	rank, id int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func (t *Tokenizer) parseModel(raw json.RawMessage) error {
	if isNull(raw) {
		return fmt.Errorf("model: missing")
	}
	var m modelJSON
	ty, err := component(raw, "model", &m)
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
	if len(m.Vocab) == 0 {
		return fmt.Errorf("model (BPE): vocab is missing or empty")
	}
	t.ignoreMerges = m.IgnoreMerges
	t.byteFallback = m.ByteFallback
	t.fuseUnk = m.FuseUnk
	t.modelVocab = make(map[string]int32, len(m.Vocab))
	t.tokenToID = make(map[string]int32, len(m.Vocab)+256)
	t.idToToken = make(map[int32]string, len(m.Vocab)+256)
	for tok, id := range m.Vocab {
		if id < 0 || id > maxID {
			return fmt.Errorf("model (BPE): vocab[%q]: id %d out of range", tok, id)
		}
		if other, dup := t.idToToken[int32(id)]; dup {
			a, b := min(other, tok), max(other, tok)
			return fmt.Errorf("model (BPE): vocab: id %d is used by both %q and %q", id, a, b)
		}
		t.modelVocab[tok] = int32(id)
		t.tokenToID[tok] = int32(id)
		t.idToToken[int32(id)] = tok
	}
	t.unk = -1
	if m.UnkToken != nil {
		id, ok := t.modelVocab[*m.UnkToken]
		if !ok {
			return fmt.Errorf("model (BPE): unk_token %q is not in the vocab", *m.UnkToken)
		}
		t.unk = id
	}
	// The lookup vocabulary: byte-level models compare raw bytes, so their
	// tokens are turned back from the printable byte alphabet into bytes.
	t.vocab = make(map[string]int32, len(m.Vocab))
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
		for tok, id := range t.modelVocab {
			t.vocab[tok] = id
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
	return t.parseMerges(m.Merges)
}

func (t *Tokenizer) parseMerges(raw json.RawMessage) error {
	if isNull(raw) {
		t.merges = map[uint64]merge{}
		return nil
	}
	var pairs [][2]string
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		pairs = make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return fmt.Errorf("model (BPE): merges[%d] %q: want two tokens separated by one space", i, s)
			}
			pairs[i] = [2]string{a, b}
		}
	} else if err2 := json.Unmarshal(raw, &pairs); err2 != nil {
		return fmt.Errorf("model (BPE): merges: want a list of \"a b\" strings or [\"a\", \"b\"] pairs: %w", err2)
	}
	t.merges = make(map[uint64]merge, len(pairs))
	for i, p := range pairs {
		a, okA := t.modelVocab[p[0]]
		b, okB := t.modelVocab[p[1]]
		if !okA || !okB {
			missing := p[0]
			if okA {
				missing = p[1]
			}
			return fmt.Errorf("model (BPE): merges[%d] [%q %q]: token %q is not in the vocab", i, p[0], p[1], missing)
		}
		id, ok := t.modelVocab[p[0]+p[1]]
		if !ok {
			return fmt.Errorf("model (BPE): merges[%d] [%q %q]: the merged token %q is not in the vocab", i, p[0], p[1], p[0]+p[1])
		}
		// A repeated pair takes its last rank, as the reference's map does.
		t.merges[pairKey(a, b)] = merge{rank: int32(i), id: id}
	}
	return nil
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
