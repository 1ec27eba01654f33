package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/tokenizer"
)

func loadMistral(t *testing.T) *tokenizer.Tokenizer {
	tk, err := tokenizer.Load(filepath.Join("..", "..", "testdata", "mistral-7b-v0.1", "tokenizer.json"))
	require.NoError(t, err)
	return tk
}

func TestRunKeepsOrderAndAddsSpecial(t *testing.T) {
	tk := loadMistral(t)
	var in strings.Builder
	var docs []string
	for i := 0; i < 3000; i++ { // several batches
		d := strings.Repeat("word ", i%7) + "line"
		docs = append(docs, d)
		in.WriteString(`{"text": "` + d + `", "id": 1}` + "\n")
	}
	for _, special := range []bool{false, true} {
		var out bytes.Buffer
		require.NoError(t, run(tk, strings.NewReader(in.String()), &out, special, 3))
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		require.Len(t, lines, len(docs))
		for i, d := range docs {
			want := tk.Encode(d)
			if special {
				want = tk.EncodeWithSpecial(d)
			}
			require.Equal(t, ints(want), lines[i], "line %d", i+1)
		}
	}
}

func ints(ids []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteByte(']')
	return b.String()
}

func TestRunErrorsNameTheLine(t *testing.T) {
	tk := loadMistral(t)
	cases := map[string]string{
		"{\"text\": \"a\"}\nnot json\n":              "line 2",
		"{\"text\": \"a\"}\n{\"text\": \"b\"}\n{}\n": `line 3: no "text" field`,
		"{\"text\": 5}\n":                            "line 1",
		"{\"text\": \"a\"}\n\n":                      "line 2",
	}
	for in, want := range cases {
		err := run(tk, strings.NewReader(in), &bytes.Buffer{}, false, 2)
		require.ErrorContains(t, err, want, "input %q", in)
	}
}

func TestRunInvalidUTF8AndSurrogates(t *testing.T) {
	tk := loadMistral(t)
	in := "{\"text\": \"a\xe2\x82b\"}\n{\"text\": \"x\\ud800y\"}\n{\"text\": \"\"}"
	var out bytes.Buffer
	require.NoError(t, run(tk, strings.NewReader(in), &out, true, 1))
	want := ints(tk.EncodeWithSpecial("a\uFFFDb")) + "\n" + ints(tk.EncodeWithSpecial("x\uFFFDy")) + "\n" + ints(tk.EncodeWithSpecial("")) + "\n"
	require.Equal(t, want, out.String())
}

// TestMatchesGolden runs the committed corpora through the command's reader and
// compares with the reference's ids.
func TestMatchesGolden(t *testing.T) {
	tk := loadMistral(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "corpora", "multilingual.jsonl"))
	require.NoError(t, err)
	gold, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", "mistral-7b-v0.1", "multilingual.jsonl"))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run(tk, bytes.NewReader(data), &out, true, 2))
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	for i, line := range strings.Split(strings.TrimSpace(string(gold)), "\n") {
		start := strings.Index(line, `"special":`) + len(`"special":`)
		end := strings.Index(line, `,"decoded"`)
		require.Equal(t, line[start:end], got[i], "document %d", i+1)
	}
}
