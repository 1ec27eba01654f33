package tokenizer

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// miniBPE is a small, valid byte-level tokenizer.json that the hostile cases
// below break one field at a time.
const miniBPE = `{
 "version": "1.0", "truncation": null, "padding": null,
 "added_tokens": [{"id": 6, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}],
 "normalizer": null,
 "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
   {"type": "Split", "pattern": {"Regex": "PATTERN"}, "behavior": "Isolated", "invert": false},
   {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
 "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
   "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [6], "tokens": ["<s>"]}}},
 "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
 "model": {"type": "BPE", "dropout": null, "unk_token": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": true,
   "vocab": {VOCAB}, "merges": [["a", "b"], "ab c"]}
}`

// miniVocab has every byte (the ByteLevel alphabet) plus "ab", "abc" and "<s>".
func miniVocab() string {
	var parts []string
	for b := 0; b < 256; b++ {
		parts = append(parts, quoteJSON(string(byteToRune[b]))+": "+strconv.Itoa(b+10))
	}
	parts = append(parts, `"ab": 300`, `"abc": 301`, `"<s>": 6`)
	return strings.Join(parts, ", ")
}

func quoteJSON(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	var b strings.Builder
	for _, c := range r.Replace(s) {
		if c < 0x20 {
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
			continue
		}
		b.WriteRune(c)
	}
	return `"` + b.String() + `"`
}

func mini() string {
	pat := strings.NewReplacer(`\`, `\\`).Replace(patternLlama3)
	return strings.NewReplacer("PATTERN", pat, "{VOCAB}", "{"+miniVocab()+"}").Replace(miniBPE)
}

func TestMiniTokenizer(t *testing.T) {
	tk, err := FromJSON([]byte(mini()))
	require.NoError(t, err)
	require.Equal(t, []int{6, 301, 42, 300}, tk.EncodeWithSpecial("abc ab"[:3]+" ab"[:0]+" ab"[:0]+"  ab"[1:]))
	require.Equal(t, "abc ab", tk.Decode(tk.Encode("abc ab")))
	require.Equal(t, 259, tk.VocabSize())
}

func hostileSeeds() []string {
	m := mini()
	return []string{
		m, m[:len(m)/2], "", "null", "[]", "{}", `{"model": 5}`, `{"model": {"type": "BPE", "vocab": []}}`,
		strings.Replace(m, `"ab c"`, `"ab zz"`, 1),
		strings.Replace(m, `"ab": 300`, `"ab": 301`, 1),
	}
}

// TestHostileTokenizerJSON: each broken file is an error that names the part at
// fault.
func TestHostileTokenizerJSON(t *testing.T) {
	m := mini()
	cases := []struct{ name, json, want string }{
		{"truncated", m[:len(m)/2], "parse tokenizer.json"},
		{"empty", "", "parse tokenizer.json"},
		{"not an object", "[1, 2]", "parse tokenizer.json"},
		{"trailing data", m + " {}", "data after the top-level object"},
		{"missing model", `{"added_tokens": []}`, "model: missing"},
		{"model wrong type", `{"model": 5}`, "model"},
		{"model type unsupported", strings.Replace(m, `"type": "BPE"`, `"type": "Unigram"`, 1), `unsupported model type "Unigram"`},
		{"vocab wrong type", strings.Replace(m, "{"+miniVocab()+"}", "[1, 2]", 1), "vocab"},
		{"vocab id not a number", strings.Replace(m, `"ab": 300`, `"ab": "300"`, 1), `vocab: "ab"`},
		{"vocab negative id", strings.Replace(m, `"ab": 300`, `"ab": -3`, 1), `vocab: "ab"`},
		{"vocab huge id", strings.Replace(m, `"ab": 300`, `"ab": 99999999999999999999`, 1), "out of range"},
		{"duplicate id", strings.Replace(m, `"ab": 300`, `"ab": 301`, 1), "id 301 is used by both"},
		{"merge unknown token", strings.Replace(m, `"ab c"`, `"ab zz"`, 1), `token "zz" is not in the vocab`},
		{"merge result unknown", strings.Replace(m, `"abc": 301`, `"abd": 301`, 1), `merged token "abc" is not in the vocab`},
		{"merge wrong shape", strings.Replace(m, `"ab c"`, `"abc"`, 1), "two tokens separated by one space"},
		{"merge wrong type", strings.Replace(m, `"ab c"`, `7`, 1), "merges: [1]"},
		{"merges not a list", strings.Replace(m, `"merges": [`, `"merges": {"x": [`, 1) + "}", "merges"},
		{"unsupported normalizer", strings.Replace(m, `"normalizer": null`, `"normalizer": {"type": "NFKC"}`, 1), `unsupported normalizer type "NFKC"`},
		{"normalizer wrong type", strings.Replace(m, `"normalizer": null`, `"normalizer": {"type": 3}`, 1), "normalizer"},
		{"unsupported pre-tokenizer", strings.Replace(m, `"type": "ByteLevel", "add_prefix_space": false`, `"type": "Whitespace", "add_prefix_space": false`, 1), `unsupported pre-tokenizer type "Whitespace"`},
		{"unsupported regex", strings.Replace(m, `\\p{N}{1,3}`, `\\p{N}{1,4}`, 1), "unsupported regex"},
		{"unsupported decoder", strings.Replace(m, `"decoder": {"type": "ByteLevel"`, `"decoder": {"type": "WordPiece"`, 1), `unsupported decoder type "WordPiece"`},
		{"unsupported post-processor", strings.Replace(m, `"type": "TemplateProcessing"`, `"type": "BertProcessing"`, 1), `unsupported post-processor type "BertProcessing"`},
		{"template names unknown token", strings.Replace(m, `{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence"`, `{"SpecialToken": {"id": "<x>", "type_id": 0}}, {"Sequence"`, 1), `special token "<x>"`},
		{"added token lstrip", strings.Replace(m, `"lstrip": false`, `"lstrip": true`, 1), "unsupported flags"},
		{"added token disagrees with vocab", strings.Replace(m, `{"id": 6, "content": "<s>"`, `{"id": 300, "content": "<s>"`, 1), "the vocab gives it id 6"},
		{"added token id clash", strings.Replace(m, `{"id": 6, "content": "<s>"`, `{"id": 300, "content": "<t>"`, 1), `id 300 already belongs to "ab"`},
		{"added tokens wrong type", strings.Replace(m, `"added_tokens": [`, `"added_tokens": [5, `, 1), "added_tokens"},
		{"truncation set", strings.Replace(m, `"truncation": null`, `"truncation": {"max_length": 5}`, 1), "truncation: unsupported"},
		{"dropout", strings.Replace(m, `"dropout": null`, `"dropout": 0.1`, 1), "dropout"},
		{"missing byte", strings.Replace(m, quoteJSON(string(byteToRune['z']))+": "+strconv.Itoa('z'+10)+",", "", 1), "no token for byte 0x7A"},
		{"bad escape", strings.Replace(m, `"ab": 300`, `"a\qb": 300`, 1), "invalid escape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk, err := FromJSON([]byte(c.json))
			require.Error(t, err)
			require.Nil(t, tk)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.json")
	require.ErrorContains(t, err, "does-not-exist.json")
}
