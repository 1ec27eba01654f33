package tokenizer

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVocabAndSpecialIDs(t *testing.T) {
	cases := []struct {
		model string
		size  int
		names map[string]int
		bos   []int
	}{
		{"llama-3.1", 128256, map[string]int{"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|eot_id|>": 128009}, []int{128000}},
		{"qwen-2.5", 151665, map[string]int{"<|endoftext|>": 151643, "<|im_end|>": 151645, "<tool_call>": 151657}, nil},
		{"mistral-7b-v0.1", 32000, map[string]int{"<s>": 1, "</s>": 2, "<unk>": 0, "<0x0A>": 13}, []int{1}},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			tk := loadModel(t, c.model)
			require.Equal(t, c.size, tk.VocabSize())
			for name, id := range c.names {
				got, ok := tk.TokenID(name)
				require.True(t, ok, name)
				require.Equal(t, id, got, name)
			}
			_, ok := tk.TokenID("no such token")
			require.False(t, ok)
			prefix, suffix := tk.SpecialIDs()
			require.Equal(t, c.bos, prefix)
			require.Empty(t, suffix)
		})
	}
}

// TestIgnoreMerges: a Llama vocabulary token that merges alone cannot reach.
func TestIgnoreMerges(t *testing.T) {
	tk := loadModel(t, "llama-3.1")
	require.Equal(t, []int{101798}, tk.Encode(" Việt"))
}

// TestMistralCutsAtWordMarkers: the Mistral vocabulary lets a segment be cut
// before each "▁" (see cutAtMeta); without it encoding is one BPE over the
// whole document: still exact, but slower and without the word cache.
func TestMistralCutsAtWordMarkers(t *testing.T) {
	require.True(t, loadModel(t, "mistral-7b-v0.1").cutAtMeta)
	require.Equal(t, []int{5, 8, 3, 3}, []int{cutBeforeMeta("▁ab▁c"), cutBeforeMeta("▁▁ab▁"), cutBeforeMeta("abc▁▁▁"), cutBeforeMeta("abc▁")})
	require.Equal(t, 0, cutBeforeMeta(""))
}

// TestConcurrentEncode: many goroutines on one Tokenizer give the serial result
// (run with -race).
func TestConcurrentEncode(t *testing.T) {
	tk := loadModel(t, "qwen-2.5")
	docs := readCorpus(t, "testdata/corpora/multilingual.jsonl")
	docs = append(docs, readCorpus(t, "testdata/corpora/mixed.jsonl")...)
	want := make([][]int, len(docs))
	for i, d := range docs {
		want[i] = tk.Encode(d)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, d := range docs {
				require.Equal(t, want[i], tk.Encode(d))
			}
		}()
	}
	wg.Wait()
	require.Equal(t, want, tk.EncodeBatch(docs, 0))
	require.Equal(t, want, tk.EncodeBatch(docs, 1)) // one worker runs in the caller
	require.Equal(t, want, tk.EncodeBatch(docs, 3))
	withBOS := tk.EncodeBatchWithSpecial(docs, 2)
	require.Equal(t, want, withBOS) // Qwen adds no special tokens
	require.Empty(t, tk.EncodeBatch(nil, 4))
}

// TestHugeDocument: a 100 MB document encodes in linear time and memory for each
// model, and equals the concatenation of its parts' encodings where the parts
// end at a line break (byte-level models) — a check that nothing is lost.
func TestHugeDocument(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB document: skipped with -short")
	}
	para := readCorpus(t, "testdata/corpora/prose.jsonl")[0] + "\n"
	for _, model := range []string{"qwen-2.5", "mistral-7b-v0.1"} {
		tk := loadModel(t, model)
		size := 100 << 20
		if raceEnabled {
			size = 10 << 20 // the race detector makes 100 MB take minutes
		}
		doc := strings.Repeat(para, size/len(para))
		ids := tk.AppendEncode(nil, doc, false)
		one := tk.AppendEncode(nil, para, false)
		if tk.byteLevel {
			require.Equal(t, len(one)*(len(doc)/len(para)), len(ids), model)
		} else {
			require.Greater(t, len(ids), len(doc)/len(para)*(len(one)-1), model)
		}
	}
}
