package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

var fuzzSeeds = []string{
	"", "Hello, world!", "it's 12345", " Việt", "e\u0301", "<|endoftext|>x<s>", "<|begin_of_text|>",
	"\xff\xfe", "a\xe2\x82b", "😀👨‍👩‍👧", "   \n\n\t ", "中文", "Z\u0300\u0301\u0302\u0316", "\u0d3b\u0301a\u0301\u0d3b",
}

// FuzzEncode: encoding never panics, every id is in the vocabulary, and for the
// byte-level models decoding gives back the text (NFC-normalized for Qwen).
func FuzzEncode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	var tks []*Tokenizer
	for _, m := range models {
		if m == "llama-3.1" {
			if _, ok := llamaPresent(); !ok {
				continue
			}
		}
		tks = append(tks, loadModel(f, m))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tk := range tks {
			ids := tk.EncodeWithSpecial(s)
			for _, id := range ids {
				_, ok := tk.Token(id)
				require.True(t, ok, "id %d not in the vocabulary", id)
			}
			plain := tk.AppendEncode(nil, s, false)
			require.Len(t, plain, len(ids)-len(tk.prefix)-len(tk.suffix))
			if !tk.byteLevel || !utf8.ValidString(s) {
				continue
			}
			want := s
			if tk.normalize != nil {
				want = string(appendNFC(nil, s))
			}
			require.Equal(t, want, tk.Decode(tk.Encode(s)), "model %d", i)
		}
	})
}

func llamaPresent() (string, bool) {
	p := sharedDir() + "/tokenizers/llama-3.1/tokenizer.json"
	return p, fileExists(p)
}

// FuzzNFC: where Unicode 9.0 and x/text's 15.0 agree (only characters that 9.0
// had, no run of more than 30 combining marks), appendNFC equals x/text's NFC.
func FuzzNFC(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, isNFC9Full(s), isNFC9(s), "the stable table's answer differs from the full check")
		require.Equal(t, string(appendNFCWhole(nil, s)), string(appendNFC(nil, s)), "normalizing by segments differs from the whole text")
		got := string(appendNFC(nil, s))
		require.True(t, utf8.ValidString(got) || !utf8.ValidString(s))
		if !utf8.ValidString(s) {
			return
		}
		run := 0
		for _, r := range s {
			if r >= 0xC0 && !assignedIn9(r) {
				return
			}
			if norm.NFD.PropertiesString(string(r)).CCC() != 0 {
				if run++; run > 30 {
					return
				}
			} else {
				run = 0
			}
		}
		// A character's decomposition can add marks: keep well clear of 30.
		if strings.Count(norm.NFD.String(s), "") > 8*len(s)+1 {
			return
		}
		if run > 20 {
			return
		}
		require.Equal(t, norm.NFC.String(s), got)
	})
}

// FuzzFromJSON: any tokenizer.json is an error or a tokenizer, never a panic.
func FuzzFromJSON(f *testing.F) {
	for _, s := range hostileSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := FromJSON(data)
		if err != nil {
			return
		}
		tk.EncodeWithSpecial("Hello <s> wörld 123 \xff")
		tk.Decode([]int{0, 1, 2, 3, -1, 1 << 40})
	})
}
