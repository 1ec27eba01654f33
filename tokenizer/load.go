package tokenizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/rivalbench/rival/safefile"
)

// fileJSON is the top level of a Hugging Face tokenizer.json. Components stay raw
// until their "type" says how to read them.
type fileJSON struct {
	Truncation    json.RawMessage  `json:"truncation"`
	Padding       json.RawMessage  `json:"padding"`
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         json.RawMessage  `json:"model"`
}

type addedTokenJSON struct {
	ID         *int   `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// stringPattern is the {"String": "..."} or {"Regex": "..."} pattern object.
type stringPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// Load reads and parses a Hugging Face tokenizer.json file.
func Load(path string) (*Tokenizer, error) {
	return LoadContext(context.Background(), path)
}

// LoadContext is Load that stops reading when ctx ends. The file must be a
// regular file of at most safefile.LimitTokenizer bytes: a FIFO, a device
// or a larger file is refused, never read whole.
func LoadContext(ctx context.Context, path string) (*Tokenizer, error) {
	data, err := safefile.ReadFile(ctx, path, safefile.LimitTokenizer)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer %s: %w", path, err)
	}
	t, err := FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer %s: %w", path, err)
	}
	return t, nil
}

// FromJSON parses the contents of a Hugging Face tokenizer.json. Components this
// package does not implement are an error naming them, never an approximation.
func FromJSON(data []byte) (*Tokenizer, error) {
	var f fileJSON
	r := &jsonReader{data: data}
	err := r.object(func(key string) error {
		raw, err := r.skipValue()
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		var dst any
		switch key {
		case "model":
			f.Model = raw
			return nil
		case "truncation":
			dst = &f.Truncation
		case "padding":
			dst = &f.Padding
		case "added_tokens":
			dst = &f.AddedTokens
		case "normalizer":
			dst = &f.Normalizer
		case "pre_tokenizer":
			dst = &f.PreTokenizer
		case "post_processor":
			dst = &f.PostProcessor
		case "decoder":
			dst = &f.Decoder
		default:
			return nil
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return nil
	})
	if err == nil && r.peek() != 0 {
		err = r.errorf("data after the top-level object")
	}
	if err != nil {
		return nil, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	if !isNull(f.Truncation) {
		return nil, errors.New("truncation: unsupported (set it to null; training data is never truncated)")
	}
	if !isNull(f.Padding) {
		return nil, errors.New("padding: unsupported (set it to null)")
	}
	t := &Tokenizer{}
	if t.normalize, err = parseNormalizer(f.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	if err = t.parsePreTokenizer(f.PreTokenizer, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if err = t.parseModel(f.Model); err != nil {
		return nil, err
	}
	if err = t.parseAddedTokens(f.AddedTokens); err != nil {
		return nil, err
	}
	if err = t.parsePostProcessor(f.PostProcessor, "post_processor"); err != nil {
		return nil, err
	}
	if t.decoders, err = parseDecoder(f.Decoder, "decoder"); err != nil {
		return nil, err
	}
	t.states = make(chan *encState, 2*runtime.GOMAXPROCS(0)+2)
	return t, nil
}

func parseNormalizer(raw json.RawMessage, where string) (normalizeFunc, error) {
	if isNull(raw) {
		return nil, nil
	}
	var n struct {
		Normalizers []json.RawMessage `json:"normalizers"`
		Prepend     string            `json:"prepend"`
		Pattern     stringPattern     `json:"pattern"`
		Content     string            `json:"content"`
	}
	ty, err := component(raw, where, &n)
	if err != nil {
		return nil, err
	}
	switch ty {
	case "NFC":
		return appendNFC, nil
	case "Prepend":
		p := n.Prepend
		return func(dst []byte, s string) []byte {
			if s == "" {
				return dst
			}
			return append(append(dst, p...), s...)
		}, nil
	case "Replace":
		if n.Pattern.String == nil || *n.Pattern.String == "" {
			return nil, fmt.Errorf("%s (Replace): only a non-empty String pattern is supported", where)
		}
		old, repl := *n.Pattern.String, n.Content
		return func(dst []byte, s string) []byte {
			for {
				i := strings.Index(s, old)
				if i < 0 {
					return append(dst, s...)
				}
				dst = append(append(dst, s[:i]...), repl...)
				s = s[i+len(old):]
			}
		}, nil
	case "Sequence":
		var steps []normalizeFunc
		for i, sub := range n.Normalizers {
			f, err := parseNormalizer(sub, fmt.Sprintf("%s.normalizers[%d]", where, i))
			if err != nil {
				return nil, err
			}
			if f != nil {
				steps = append(steps, f)
			}
		}
		switch len(steps) {
		case 0:
			return nil, nil
		case 1:
			return steps[0], nil
		}
		if f := fusePrependReplace(n.Normalizers); f != nil {
			return f, nil
		}
		// Intermediate results go through two scratch buffers taken from a pool.
		var scratch sync.Pool
		return func(dst []byte, s string) []byte {
			a, _ := scratch.Get().(*[2][]byte)
			if a == nil {
				a = new([2][]byte)
			}
			for k, f := range steps[:len(steps)-1] {
				buf := f(a[k%2][:0], s)
				a[k%2] = buf
				s = unsafe.String(unsafe.SliceData(buf), len(buf))
			}
			dst = steps[len(steps)-1](dst, s)
			scratch.Put(a)
			return dst
		}, nil
	}
	return nil, fmt.Errorf("%s: unsupported normalizer type %q (supported: NFC, Prepend, Replace, Sequence)", where, ty)
}

func (t *Tokenizer) parsePreTokenizer(raw json.RawMessage, where string) error {
	if isNull(raw) {
		return nil
	}
	var p struct {
		Pretokenizers  []json.RawMessage `json:"pretokenizers"`
		Pattern        stringPattern     `json:"pattern"`
		Behavior       string            `json:"behavior"`
		Invert         bool              `json:"invert"`
		AddPrefixSpace bool              `json:"add_prefix_space"`
		UseRegex       bool              `json:"use_regex"`
	}
	ty, err := component(raw, where, &p)
	if err != nil {
		return err
	}
	switch ty {
	case "Sequence":
		for i, sub := range p.Pretokenizers {
			if err := t.parsePreTokenizer(sub, fmt.Sprintf("%s.pretokenizers[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case "Split":
		if t.split != nil {
			return fmt.Errorf("%s (Split): only one Split pre-tokenizer is supported", where)
		}
		if p.Behavior != "Isolated" || p.Invert {
			return fmt.Errorf("%s (Split): unsupported behavior %q invert=%v (supported: Isolated, invert=false)", where, p.Behavior, p.Invert)
		}
		if p.Pattern.Regex == nil {
			return fmt.Errorf("%s (Split): unsupported pattern (supported: the Llama 3 and Qwen 2 regexes)", where)
		}
		switch *p.Pattern.Regex {
		case patternLlama3:
			t.split = &splitter{maxDigits: 3}
		case patternQwen2:
			t.split = &splitter{maxDigits: 1}
		default:
			return fmt.Errorf("%s (Split): unsupported regex %q (supported: the Llama 3 and Qwen 2 regexes)", where, *p.Pattern.Regex)
		}
		return nil
	case "ByteLevel":
		if p.AddPrefixSpace || p.UseRegex {
			return fmt.Errorf("%s (ByteLevel): unsupported add_prefix_space=%v use_regex=%v (supported: both false, after a Split)", where, p.AddPrefixSpace, p.UseRegex)
		}
		t.byteLevel = true
		return nil
	}
	return fmt.Errorf("%s: unsupported pre-tokenizer type %q (supported: Split, ByteLevel, Sequence)", where, ty)
}

type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

func (t *Tokenizer) parsePostProcessor(raw json.RawMessage, where string) error {
	if isNull(raw) {
		return nil
	}
	var p struct {
		Processors    []json.RawMessage `json:"processors"`
		Single        []templatePiece   `json:"single"`
		SpecialTokens map[string]struct {
			IDs []int `json:"ids"`
		} `json:"special_tokens"`
	}
	ty, err := component(raw, where, &p)
	if err != nil {
		return err
	}
	switch ty {
	case "Sequence":
		for i, sub := range p.Processors {
			if err := t.parsePostProcessor(sub, fmt.Sprintf("%s.processors[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case "ByteLevel":
		return nil // it only trims offsets; ids are unchanged
	case "TemplateProcessing":
		if t.hasTemplate {
			return fmt.Errorf("%s (TemplateProcessing): only one template is supported", where)
		}
		t.hasTemplate = true
		seen := false
		for i, piece := range p.Single {
			switch {
			case piece.Sequence != nil:
				if seen {
					return fmt.Errorf("%s (TemplateProcessing): single[%d]: the sequence appears twice", where, i)
				}
				seen = true
			case piece.SpecialToken != nil:
				st, ok := p.SpecialTokens[piece.SpecialToken.ID]
				if !ok {
					return fmt.Errorf("%s (TemplateProcessing): single[%d]: special token %q is not in special_tokens", where, i, piece.SpecialToken.ID)
				}
				for _, id := range st.IDs {
					if id < 0 || id > maxID {
						return fmt.Errorf("%s (TemplateProcessing): special token %q: id %d out of range", where, piece.SpecialToken.ID, id)
					}
					if seen {
						t.suffix = append(t.suffix, int32(id))
					} else {
						t.prefix = append(t.prefix, int32(id))
					}
				}
			default:
				return fmt.Errorf("%s (TemplateProcessing): single[%d]: neither SpecialToken nor Sequence", where, i)
			}
		}
		if !seen {
			return fmt.Errorf("%s (TemplateProcessing): the single template has no sequence", where)
		}
		return nil
	}
	return fmt.Errorf("%s: unsupported post-processor type %q (supported: TemplateProcessing, ByteLevel, Sequence)", where, ty)
}

func (t *Tokenizer) parseAddedTokens(list []addedTokenJSON) error {
	t.added = newTrie()
	t.addedByName = make(map[string]int32, len(list))
	for i, a := range list {
		where := fmt.Sprintf("added_tokens[%d]", i)
		if a.ID == nil {
			return fmt.Errorf("%s: missing id", where)
		}
		if *a.ID < 0 || *a.ID > maxID {
			return fmt.Errorf("%s: id %d out of range", where, *a.ID)
		}
		if a.Content == "" {
			return fmt.Errorf("%s: empty content", where)
		}
		if a.SingleWord || a.LStrip || a.RStrip || (a.Normalized && t.normalize != nil) {
			return fmt.Errorf("%s %q: unsupported flags single_word=%v lstrip=%v rstrip=%v normalized=%v (supported: all false)",
				where, a.Content, a.SingleWord, a.LStrip, a.RStrip, a.Normalized)
		}
		id := int32(*a.ID)
		if prev, ok := t.modelVocab[a.Content]; ok && prev != id {
			return fmt.Errorf("%s %q: id %d, but the vocab gives it id %d", where, a.Content, id, prev)
		}
		if _, dup := t.addedByName[a.Content]; dup {
			return fmt.Errorf("%s %q: the token is listed twice", where, a.Content)
		}
		if tok, ok := t.idToToken[id]; ok && tok != a.Content {
			return fmt.Errorf("%s %q: id %d already belongs to %q", where, a.Content, id, tok)
		}
		t.addedByName[a.Content] = id
		t.idToToken[id] = a.Content
		t.added.insert(a.Content, id)
	}
	return nil
}

func parseDecoder(raw json.RawMessage, where string) ([]decoderStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	var d struct {
		Decoders []json.RawMessage `json:"decoders"`
		Pattern  stringPattern     `json:"pattern"`
		Content  string            `json:"content"`
		Start    int               `json:"start"`
		Stop     int               `json:"stop"`
	}
	ty, err := component(raw, where, &d)
	if err != nil {
		return nil, err
	}
	switch ty {
	case "Sequence":
		var steps []decoderStep
		for i, sub := range d.Decoders {
			s, err := parseDecoder(sub, fmt.Sprintf("%s.decoders[%d]", where, i))
			if err != nil {
				return nil, err
			}
			steps = append(steps, s...)
		}
		return steps, nil
	case "ByteLevel", "ByteFallback", "Fuse":
		return []decoderStep{{kind: ty}}, nil
	case "Replace":
		if d.Pattern.String == nil || *d.Pattern.String == "" {
			return nil, fmt.Errorf("%s (Replace): only a non-empty String pattern is supported", where)
		}
		return []decoderStep{{kind: ty, old: *d.Pattern.String, new: d.Content}}, nil
	case "Strip":
		if len([]rune(d.Content)) != 1 || d.Start < 0 || d.Stop < 0 {
			return nil, fmt.Errorf("%s (Strip): content must be one character and start/stop non-negative", where)
		}
		return []decoderStep{{kind: ty, strip: d.Content, start: d.Start, end: d.Stop}}, nil
	}
	return nil, fmt.Errorf("%s: unsupported decoder type %q (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Sequence)", where, ty)
}

// fusePrependReplace returns one pass for Sequence[Prepend, Replace] where the
// pattern is one byte (Mistral's "▁" then " " → "▁"), else nil. A one-byte
// pattern cannot straddle the prefix and the text, so replacing in each
// separately equals replacing in their concatenation, without the scratch copy.
func fusePrependReplace(subs []json.RawMessage) normalizeFunc {
	if len(subs) != 2 {
		return nil
	}
	var pre, rep struct {
		Type    string        `json:"type"`
		Prepend string        `json:"prepend"`
		Pattern stringPattern `json:"pattern"`
		Content string        `json:"content"`
	}
	if json.Unmarshal(subs[0], &pre) != nil || json.Unmarshal(subs[1], &rep) != nil ||
		pre.Type != "Prepend" || rep.Type != "Replace" ||
		rep.Pattern.String == nil || len(*rep.Pattern.String) != 1 {
		return nil
	}
	p, old, repl := pre.Prepend, (*rep.Pattern.String)[0], rep.Content
	replace := func(dst []byte, s string) []byte {
		for {
			i := strings.IndexByte(s, old)
			if i < 0 {
				return append(dst, s...)
			}
			dst = append(append(dst, s[:i]...), repl...)
			s = s[i+1:]
		}
	}
	return func(dst []byte, s string) []byte {
		if s == "" {
			return dst
		}
		return replace(replace(dst, p), s)
	}
}
