package tokenizer

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Decode turns ids back into text with the tokenizer's decoder, keeping special
// tokens (skip_special_tokens=False). Unknown ids are skipped. For the byte-level
// models Decode(Encode(s)) == s for valid UTF-8 s (after NFC for Qwen).
func (t *Tokenizer) Decode(ids []int) string {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if tok, ok := t.Token(id); ok {
			toks = append(toks, tok)
		}
	}
	for _, d := range t.decoders {
		toks = d.apply(toks)
	}
	return strings.Join(toks, "")
}

func (d decoderStep) apply(toks []string) []string {
	switch d.kind {
	case "ByteLevel":
		var b []byte
		for _, tok := range toks {
			if raw, ok := byteLevelDecode(tok); ok {
				b = append(b, raw...)
			} else {
				b = append(b, tok...) // not in the byte alphabet: its own UTF-8
			}
		}
		return []string{string(appendValidUTF8(nil, string(b)))}
	case "Replace":
		for i, tok := range toks {
			toks[i] = strings.ReplaceAll(tok, d.old, d.new)
		}
		return toks
	case "ByteFallback":
		return byteFallbackDecode(toks)
	case "Fuse":
		return []string{strings.Join(toks, "")}
	case "Strip":
		for i, tok := range toks {
			toks[i] = stripChars(tok, d.strip, d.start, d.end)
		}
		return toks
	}
	return toks
}

// byteFallbackDecode joins runs of <0xXX> tokens into text; a run that is not
// valid UTF-8 becomes one U+FFFD per byte token.
func byteFallbackDecode(toks []string) []string {
	out := make([]string, 0, len(toks))
	var run []byte
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			out = append(out, strings.Repeat("\uFFFD", n))
		}
		run, n = run[:0], 0
	}
	for _, tok := range toks {
		if len(tok) == 6 && strings.HasPrefix(tok, "<0x") && tok[5] == '>' {
			if v, err := strconv.ParseUint(tok[3:5], 16, 8); err == nil {
				run = append(run, byte(v))
				n++
				continue
			}
		}
		flush()
		out = append(out, tok)
	}
	flush()
	return out
}

// stripChars removes up to start leading and end trailing copies of c.
func stripChars(s, c string, start, end int) string {
	for ; start > 0 && strings.HasPrefix(s, c); start-- {
		s = s[len(c):]
	}
	for ; end > 0 && strings.HasSuffix(s, c); end-- {
		s = s[:len(s)-len(c)]
	}
	return s
}
