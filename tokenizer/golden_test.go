package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sharedDir is the project's shared fixtures folder: $RIVAL_SHARED_DIR, else
// ../shared next to the repository root.
func sharedDir() string {
	if d := os.Getenv("RIVAL_SHARED_DIR"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared")
}

// modelFile returns the tokenizer.json of a model; Llama 3.1's file is not in the
// repository (its licence), so tests that need it skip when it is absent.
func modelFile(t testing.TB, model string) string {
	t.Helper()
	if model == "llama-3.1" {
		p := filepath.Join(sharedDir(), "tokenizers", "llama-3.1", "tokenizer.json")
		if _, err := os.Stat(p); err != nil {
			t.Skipf("Llama 3.1 tokenizer not found at %s: put tokenizer.json there (../shared/tokenizers/llama-3.1/ next to the repository) or set RIVAL_SHARED_DIR", p)
		}
		return p
	}
	return filepath.Join("testdata", model, "tokenizer.json")
}

var models = []string{"llama-3.1", "qwen-2.5", "mistral-7b-v0.1"}

var loaded = map[string]*Tokenizer{}

func loadModel(t testing.TB, model string) *Tokenizer {
	t.Helper()
	if tk, ok := loaded[model]; ok {
		return tk
	}
	tk, err := Load(modelFile(t, model))
	require.NoError(t, err)
	loaded[model] = tk
	return tk
}

// readCorpus returns a corpus's documents as the reference harness reads them.
func readCorpus(t testing.TB, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var docs []string
	if strings.HasSuffix(file, ".txt") {
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			require.GreaterOrEqual(t, i, 0, "%s: last line lacks a newline", file)
			docs = append(docs, string(data[:i])) // raw bytes, invalid UTF-8 kept
			data = data[i+1:]
		}
		return docs
	}
	for n, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		var doc struct{ Text string }
		require.NoError(t, json.Unmarshal([]byte(line), &doc), "%s:%d", file, n+1)
		docs = append(docs, doc.Text)
	}
	return docs
}

type goldenLine struct {
	Plain   []int  `json:"plain"`
	Special []int  `json:"special"`
	Decoded string `json:"decoded"`
}

func readGolden(t testing.TB, file string) []goldenLine {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	var out []goldenLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var g goldenLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &g))
		if g.Plain == nil {
			g.Plain = []int{}
		}
		if g.Special == nil {
			g.Special = []int{}
		}
		out = append(out, g)
	}
	require.NoError(t, sc.Err())
	return out
}

func corpora(t testing.TB) []string {
	files, err := filepath.Glob("testdata/corpora/*")
	require.NoError(t, err)
	sort.Strings(files)
	require.NotEmpty(t, files)
	return files
}

// TestGolden compares every document of every corpus with the ids the reference
// produced, with and without special tokens, and the decoded text.
func TestGolden(t *testing.T) {
	for _, model := range models {
		t.Run(model, func(t *testing.T) {
			tk := loadModel(t, model)
			for _, file := range corpora(t) {
				base := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".jsonl"), ".txt")
				docs := readCorpus(t, file)
				gold := readGolden(t, filepath.Join("testdata", "golden", model, base+".jsonl"))
				require.Len(t, gold, len(docs), "%s: regenerate the goldens (testdata/reference/README.md)", base)
				bad := 0
				for i, doc := range docs {
					plain, special := tk.Encode(doc), tk.EncodeWithSpecial(doc)
					if !equalInts(plain, gold[i].Plain) || !equalInts(special, gold[i].Special) {
						bad++
						if bad <= 3 {
							t.Errorf("%s doc %d %q:\n got  %v\n want %v\n got special  %v\n want special %v",
								base, i, clip(doc), plain, gold[i].Plain, special, gold[i].Special)
						}
						continue
					}
					if got := tk.Decode(plain); got != gold[i].Decoded {
						bad++
						if bad <= 3 {
							t.Errorf("%s doc %d decode: got %q want %q", base, i, clip(got), clip(gold[i].Decoded))
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s/%s: %d of %d documents differ from the reference", model, base, bad, len(docs))
				}
			}
		})
	}
}

func equalInts(a, b []int) bool {
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

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "..."
	}
	return s
}
