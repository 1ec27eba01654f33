package corpus

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/jsonl"
)

func TestFilter(t *testing.T) {
	long := strings.Repeat("word ", 25)
	in := strings.Join([]string{
		`{"text": "  ` + long + `  "}`,
		`{"text": "short"}`,
		`{"text": "` + strings.Repeat("x", 150) + `"}`,
		`not json`,
		`{"text": 42}`,
		`{"title": "no text"}`,
		``,
		`{"text": "<b>` + long + `&</b>", "meta": {"id": 7}}`,
	}, "\n")
	var out bytes.Buffer
	st, err := Filter(strings.NewReader(in), &out, FilterOptions{MinChars: 100, MinWords: 20})
	require.NoError(t, err)
	assert.Equal(t, FilterStats{Read: 7, Kept: 2, TooShort: 1, TooFewWords: 1, Malformed: 3,
		ShortLines: []int{2}, FewWordsLines: []int{3}, MalformedLines: []int{4, 5, 6}}, st)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, `{"text":"`+strings.TrimSpace(long)+`"}`, lines[0], "documents are trimmed")
	assert.Contains(t, lines[1], "<b>", "HTML is not escaped")
	assert.Equal(t, "kept 2 of 7 documents; dropped 1 under the character minimum (lines 2), 1 under the word minimum (lines 3), 3 malformed (lines 4, 5, 6)", st.String())
}

func TestFilterCountsCharactersNotBytes(t *testing.T) {
	doc := strings.Repeat("é", 60) // 60 characters, 120 bytes
	var out bytes.Buffer
	st, err := Filter(strings.NewReader(`{"text":"`+doc+`"}`), &out, FilterOptions{MinChars: 100})
	require.NoError(t, err)
	assert.Equal(t, 1, st.TooShort)
}

func TestReportListsFirstFewOffenders(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 9; i++ {
		b.WriteString("{\"text\":\"tiny\"}\n")
	}
	st, err := Filter(strings.NewReader(b.String()), &bytes.Buffer{}, FilterOptions{MinChars: 10})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4, 5}, st.ShortLines)
	assert.Contains(t, st.String(), "(lines 1, 2, 3, 4, 5, …)")
}

func FuzzFilter(f *testing.F) {
	f.Add([]byte(`{"text": "hello world"}` + "\n" + `{"text": 1}`))
	f.Add([]byte("\xff\xfe{\"text\":\"\\ud800\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		st, err := Filter(bytes.NewReader(data), &out, FilterOptions{MinChars: 3, MinWords: 1})
		if err != nil {
			t.Fatal(err)
		}
		if st.Kept+st.TooShort+st.TooFewWords+st.Malformed != st.Read {
			t.Fatalf("counts do not add up: %+v", st)
		}
		// Everything written must read back as well-formed documents.
		n := 0
		err = jsonl.ReadLines(&out, func(_ int, line []byte) error {
			n++
			_, err := DecodeText(line)
			return err
		})
		if err != nil || n != st.Kept {
			t.Fatalf("output not clean: %v, %d lines vs %d kept", err, n, st.Kept)
		}
	})
}

// TestFilterAgreesWithEncode: a line the encode step would refuse (a key that
// is "Text", not "text"; invalid UTF-8; a null text) is dropped as malformed
// here too, rather than passed on for encode to fail on or read differently.
func TestFilterAgreesWithEncode(t *testing.T) {
	long := strings.Repeat("word ", 25)
	in := strings.Join([]string{
		`{"Text": "` + long + `"}`,
		"{\"text\": \"" + long + "\xff\"}",
		`{"text": null}`,
		`{"t\u0065xt": "` + long + `"}`,
	}, "\n")
	var out bytes.Buffer
	st, err := Filter(strings.NewReader(in), &out, FilterOptions{})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3}, st.MalformedLines)
	assert.Equal(t, 1, st.Kept, "an escaped key is still the key text")
	for i, line := range []string{`{"Text": "x"}`, "{\"text\": \"\xff\"}", `{"text": null}`} {
		_, err := DecodeText([]byte(line))
		require.ErrorIs(t, err, ErrMalformed, "line %d", i)
	}
}
