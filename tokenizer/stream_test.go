package tokenizer

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var streamLoaded = map[string]*Tokenizer{}

// loadStreamModel loads a model with LoadForStreaming (Mistral's normalizer
// sequence needs it).
func loadStreamModel(t testing.TB, model string) *Tokenizer {
	t.Helper()
	if tk, ok := streamLoaded[model]; ok {
		return tk
	}
	tk, err := LoadForStreaming(context.Background(), modelFile(t, model))
	require.NoError(t, err)
	streamLoaded[model] = tk
	return tk
}

// streamEncode feeds text to a Stream in pieces of the given sizes (cycled).
func streamEncode(t testing.TB, tk *Tokenizer, text string, special bool, sizes []int, maxPending int) ([]int32, error) {
	t.Helper()
	s, err := tk.NewStream(special, maxPending)
	require.NoError(t, err)
	var out []int32
	for k := 0; len(text) > 0; k++ {
		n := min(max(sizes[k%len(sizes)], 1), len(text))
		if out, err = s.Write(out, []byte(text[:n])); err != nil {
			return out, err
		}
		text = text[n:]
	}
	return s.Close(out)
}

// piecings are the ways each document is cut: whole, byte by byte, and
// seeded random sizes from 1 byte to 4 KiB.
func piecings(seed uint64) [][]int {
	r := rand.New(rand.NewPCG(seed, 1))
	out := [][]int{{1 << 30}, {1}, {2, 3, 1, 7}}
	for range 3 {
		var s []int
		for range 64 {
			s = append(s, 1+r.IntN(1+r.IntN(4096)))
		}
		out = append(out, s)
	}
	return out
}

// TestStreamMatchesWholeDocument is the differential test: for every corpus
// document of the golden set, and for every corpus joined into one document,
// a Stream fed in pieces gives the ids the whole-document path gives, with
// and without special tokens.
func TestStreamMatchesWholeDocument(t *testing.T) {
	for _, model := range models {
		t.Run(model, func(t *testing.T) {
			tk := loadStreamModel(t, model)
			var docs []string
			for _, file := range corpora(t) {
				d := readCorpus(t, file)
				docs = append(docs, d...)
				docs = append(docs, strings.Join(d, "\n"))
			}
			if opticks, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt")); err == nil {
				docs = append(docs, string(opticks))
			}
			bad := 0
			for i, doc := range docs {
				for _, special := range []bool{false, true} {
					want := tk.AppendEncode(nil, doc, special)
					for k, sizes := range piecings(uint64(i)) {
						if len(doc) > 1<<16 && len(sizes) == 1 && sizes[0] == 1 {
							continue // byte by byte on long documents only slows the test
						}
						got, err := streamEncode(t, tk, doc, special, sizes, 0)
						require.NoError(t, err)
						if !slicesEqual(got, want) {
							bad++
							if bad <= 3 {
								t.Errorf("doc %d %q special=%v piecing %d: stream and whole document differ\n got  %v\n want %v", i, clip(doc), special, k, clipIDs(got), clipIDs(want))
							}
						}
					}
				}
			}
			require.Zero(t, bad, "documents whose stream differs")
		})
	}
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func clipIDs(ids []int32) []int32 {
	if len(ids) > 40 {
		return ids[:40]
	}
	return ids
}

// TestStreamBoundsPending: a pre-token longer than the limit is refused with
// ErrPreTokenTooLong naming the position; text with cuts stays under it.
func TestStreamBoundsPending(t *testing.T) {
	for _, model := range models {
		t.Run(model, func(t *testing.T) {
			tk := loadStreamModel(t, model)
			cases := []struct {
				name string
				text string
				fail bool
			}{
				{"letters", strings.Repeat("a", 100_000), true},
				{"punctuation", strings.Repeat("=", 100_000), true},
				{"words", strings.Repeat("word ", 100_000), false},
				{"digits", strings.Repeat("1234567 ", 20_000), false},
			}
			for _, c := range cases {
				got, err := streamEncode(t, tk, c.text, true, []int{4096}, 16<<10)
				if c.fail {
					require.ErrorIs(t, err, ErrPreTokenTooLong, c.name)
					require.Contains(t, err.Error(), "16384 bytes", c.name)
					continue
				}
				require.NoError(t, err, c.name)
				require.Equal(t, tk.AppendEncode(nil, c.text, true), got, c.name)
			}
		})
	}
}

// TestStreamAPI: errors are sticky, Close twice fails, an empty document
// gets the template's tokens as the whole path gives them.
func TestStreamAPI(t *testing.T) {
	tk := loadStreamModel(t, "mistral-7b-v0.1")
	s, err := tk.NewStream(true, 0)
	require.NoError(t, err)
	ids, err := s.Close(nil)
	require.NoError(t, err)
	require.Equal(t, tk.AppendEncode(nil, "", true), ids)
	_, err = s.Close(nil)
	require.Error(t, err)
	_, err = s.Write(nil, []byte("x"))
	require.Error(t, err)

	// Loaded with Load, Mistral's normalizer sequence is unknown: refused.
	plain, err := Load(modelFile(t, "mistral-7b-v0.1"))
	require.NoError(t, err)
	_, err = plain.NewStream(true, 0)
	require.ErrorContains(t, err, "LoadForStreaming")
	// Qwen's NFC and Llama's missing normalizer need no second read.
	q, err := Load(modelFile(t, "qwen-2.5"))
	require.NoError(t, err)
	_, err = q.NewStream(true, 0)
	require.NoError(t, err)
}

// FuzzStream: any text cut into any pieces encodes as the whole text does,
// for every model present.
func FuzzStream(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, []byte{byte(i), 1, 2, 3})
	}
	f.Add("hello world<|endoftext|>foo<|im_start|> bar", []byte{5, 1, 1, 9})
	f.Add("a\u0301b\u0301 c 12345 '''ll <s></s>", []byte{1})
	var tks []*Tokenizer
	for _, m := range models {
		if m == "llama-3.1" {
			if _, ok := llamaPresent(); !ok {
				continue
			}
		}
		tks = append(tks, loadStreamModel(f, m))
	}
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		sizes := []int{1 << 30}
		if len(cuts) > 0 {
			sizes = sizes[:0]
			for _, c := range cuts {
				sizes = append(sizes, int(c)%17+1)
			}
		}
		for i, tk := range tks {
			for _, special := range []bool{false, true} {
				got, err := streamEncode(t, tk, text, special, sizes, 0)
				require.NoError(t, err)
				require.Equal(t, tk.AppendEncode(nil, text, special), got, "model %d special=%v sizes %v", i, special, sizes)
			}
		}
	})
}

// checkSplitCuts: at every position of s where splitBoundary allows a cut,
// the regex oracle's pieces of s end there, and the oracle's pieces of the
// two sides, each alone, are the pieces of the whole.
func checkSplitCuts(t *testing.T, s string) {
	for name, o := range map[string]oracle{"llama": llamaOracle, "qwen": qwenOracle} {
		whole := o.pieces(s)
		for c := 1; c < len(s); c++ {
			if !utf8.RuneStart(s[c]) {
				continue
			}
			_, nx := utf8.DecodeLastRuneInString(s[:c])
			cx, _ := classAt(s, c-nx)
			cy, _ := classAt(s, c)
			if !splitBoundary(cx, cy) {
				continue
			}
			joined := append(o.pieces(s[:c]), o.pieces(s[c:])...)
			require.Equal(t, whole, joined, "%s: cut at %d of %q", name, c, s)
		}
	}
}

func TestSplitBoundaryMatchesOracle(t *testing.T) {
	for _, s := range splitSamples {
		checkSplitCuts(t, s)
	}
	checkSplitCuts(t, "It's 12345 o'clock!  Then\n\n 9x 'll  ,.\t- ab1 2c (x) 中文，3。 ٣a")
}

// FuzzSplitBoundary: the cuts Stream takes in Llama 3 and Qwen 2 text hold
// for any text, by the regex oracle.
func FuzzSplitBoundary(f *testing.F) {
	for _, s := range splitSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = string(appendValidUTF8(nil, s))
		}
		checkSplitCuts(t, s)
	})
}

// TestStreamInfoFromJSON: the normalizers read from a tokenizer.json that
// streaming accepts, and those it refuses with the reason.
func TestStreamInfoFromJSON(t *testing.T) {
	tk := loadModel(t, "qwen-2.5")
	for _, tc := range []struct {
		normalizer string
		ok, nfc    bool
	}{
		{`{"type": "NFC"}`, true, true},
		{`{"type": "Sequence", "normalizers": [{"type": "NFC"}]}`, true, true},
		{`{"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Prepend", "prepend": "x"}]}`, false, false},
		{`{"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}`, true, false},
		{`{"type": "Replace", "pattern": {"String": "ab"}, "content": "c"}`, false, false},
	} {
		// The probe check compares with the loaded normalizer: give the
		// tokenizer the one the file describes.
		n, err := parseNormalizer([]byte(tc.normalizer), "normalizer")
		require.NoError(t, err)
		probe := &Tokenizer{normalize: n, split: tk.split, addedByName: tk.addedByName}
		info, err := streamInfoFromJSON(probe, []byte(`{"normalizer": `+tc.normalizer+`}`))
		require.NoError(t, err, tc.normalizer)
		require.Equal(t, tc.ok, info.ok, "%s: %s", tc.normalizer, info.why)
		require.Equal(t, tc.nfc, info.nfc, tc.normalizer)
	}
	// A file whose normalizer is not the loaded one: an error.
	_, err := streamInfoFromJSON(tk, []byte(`{"normalizer": {"type": "Prepend", "prepend": "x"}}`))
	require.ErrorContains(t, err, "differs from the loaded one")
}
