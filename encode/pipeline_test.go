package encode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rivalbench/rival/indexed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runeEncoder stands in for a tokenizer: a BOS id, then one id per rune;
// empty text yields no ids at all.
func runeEncoder(dst []int32, text string) []int32 {
	if text == "" {
		return dst
	}
	dst = append(dst, 1)
	for _, r := range text {
		dst = append(dst, 3+int32(r)%60000)
	}
	return dst
}

func options(workers, chunk int) Options {
	return Options{Encode: runeEncoder, EOD: 2, DType: indexed.Uint16, Workers: workers, ChunkBytes: chunk}
}

// writeCorpus writes n JSONL documents with varied content: empty texts,
// escapes, non-ASCII, extra fields, long lines.
func writeCorpus(t testing.TB, path string, n int, seed uint64, trailingNewline bool) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"the", "Megatron", "données", "日本語", "tab\there", "quote\"d", "back\\slash", "emoji 😀", "line\nbreak"}
	var b strings.Builder
	for i := 0; i < n; i++ {
		var text strings.Builder
		if r.IntN(10) > 0 {
			for k := r.IntN(200) + 1; k > 0; k-- {
				text.WriteString(words[r.IntN(len(words))])
				text.WriteByte(' ')
			}
		}
		if r.IntN(50) == 0 {
			text.WriteString(strings.Repeat("x", 20000))
		}
		js, err := json.Marshal(text.String())
		require.NoError(t, err)
		if r.IntN(2) == 0 {
			fmt.Fprintf(&b, `{"id": %d, "text": %s, "meta": {"text": 1}}`, i, js)
		} else {
			fmt.Fprintf(&b, `{"text":%s}`, js)
		}
		if i < n-1 || trailingNewline {
			b.WriteByte('\n')
		}
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// referenceDocs decodes inputs sequentially with encoding/json, the
// straightforward way, for comparison.
func referenceDocs(t testing.TB, inputs ...string) [][]int32 {
	t.Helper()
	var docs [][]int32
	for _, path := range inputs {
		f, err := os.Open(path)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			var v struct {
				Text string `json:"text"`
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &v))
			ids := runeEncoder(nil, v.Text)
			if len(ids) > 0 {
				ids = append(ids, 2)
			}
			docs = append(docs, ids)
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	return docs
}

func writeReference(t testing.TB, prefix string, docs [][]int32) {
	t.Helper()
	w, err := indexed.NewWriter(prefix, indexed.Uint16)
	require.NoError(t, err)
	for _, d := range docs {
		require.NoError(t, w.AddDocument(d))
	}
	require.NoError(t, w.Finalize())
}

func assertSameFiles(t *testing.T, want, got string) {
	t.Helper()
	for _, ext := range []string{".bin", ".idx"} {
		a, err := os.ReadFile(want + ext)
		require.NoError(t, err)
		b, err := os.ReadFile(got + ext)
		require.NoError(t, err)
		require.True(t, string(a) == string(b), "%s%s differs from %s%s", got, ext, want, ext)
	}
}

func TestEncodeFileDeterministic(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeCorpus(t, in, 700, 1, false)
	ref := filepath.Join(dir, "ref")
	writeReference(t, ref, referenceDocs(t, in))

	for _, tc := range []struct{ workers, chunk int }{
		{1, 0}, {2, 0}, {4, 100}, {8, 1}, {3, 4096}, {16, 64 << 10},
	} {
		t.Run(fmt.Sprintf("workers=%d,chunk=%d", tc.workers, tc.chunk), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			st, err := File(context.Background(), []string{in}, out, options(tc.workers, tc.chunk))
			require.NoError(t, err)
			assert.Equal(t, int64(700), st.Documents)
			assert.Equal(t, st.Documents, st.Sequences+st.EmptyDocuments)
			assertSameFiles(t, ref, out)
		})
	}
}

func TestEncodeFileSeveralInputs(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeCorpus(t, a, 50, 2, false) // no final newline: still its own document
	writeCorpus(t, b, 60, 3, true)
	ref := filepath.Join(dir, "ref")
	writeReference(t, ref, referenceDocs(t, a, b))
	out := filepath.Join(dir, "out")
	st, err := File(context.Background(), []string{a, b}, out, options(2, 300))
	require.NoError(t, err)
	assert.Equal(t, int64(110), st.Documents)
	assertSameFiles(t, ref, out)
}

func TestEmptyDocumentsAndEOD(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text": "ab"}`+"\n"+`{"text": ""}`+"\n"+`{"text": "c"}`+"\n"), 0o644))
	out := filepath.Join(dir, "out")
	st, err := File(context.Background(), []string{in}, out, options(2, 0))
	require.NoError(t, err)
	assert.Equal(t, Stats{Documents: 3, EmptyDocuments: 1, Sequences: 2, Tokens: 7}, st)
	d, err := indexed.Open(out)
	require.NoError(t, err)
	defer d.Close()
	s0, err := d.Sequence(0)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 3 + 'a', 3 + 'b', 2}, s0)
	s1, err := d.Sequence(1)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 3 + 'c', 2}, s1)
	assert.Equal(t, 3, d.Documents())
	for j, want := range []int64{0, 1, 1, 2} {
		assert.Equal(t, want, d.DocumentIndex(j))
	}
}

func TestTrainDocuments(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		split float64
		want  int64
	}{
		{10, 0.8, 8}, {10, 0.7, 7}, {100, 0.29, 29}, {3, 0.5, 1}, {1, 0.8, 0},
		{0, 0.8, 0}, {7, 1, 7}, {7, 0, 0}, {1_000_003, 0.9, 900_002},
	} {
		got, err := TrainDocuments(tc.n, tc.split)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "n=%d split=%v", tc.n, tc.split)
	}
	for _, bad := range []float64{-0.1, 1.5, math.NaN()} {
		_, err := TrainDocuments(10, bad)
		require.ErrorContains(t, err, "must be between 0 and 1")
	}
}

func TestCountDocuments(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a": "{}\n{}\n", "b": "{}\n{}", "c": "", "d": "{}"}
	var paths []string
	for _, name := range []string{"a", "b", "c", "d"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(files[name]), 0o644))
		paths = append(paths, p)
	}
	n, err := CountDocuments(paths)
	require.NoError(t, err)
	assert.Equal(t, int64(5), n)
	_, err = CountDocuments([]string{filepath.Join(dir, "missing")})
	require.ErrorContains(t, err, "missing")
}

func TestEncodeSplit(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeCorpus(t, in, 501, 4, true)
	docs := referenceDocs(t, in)
	k, err := TrainDocuments(int64(len(docs)), 0.8)
	require.NoError(t, err)
	require.Equal(t, int64(400), k)
	writeReference(t, filepath.Join(dir, "ref-train"), docs[:k])
	writeReference(t, filepath.Join(dir, "ref-test"), docs[k:])

	for _, workers := range []int{1, 3} {
		train, test := filepath.Join(dir, fmt.Sprint("train", workers)), filepath.Join(dir, fmt.Sprint("test", workers))
		tr, te, err := Split(context.Background(), []string{in}, train, test, 0.8, options(workers, 2000))
		require.NoError(t, err)
		assert.Equal(t, int64(400), tr.Documents)
		assert.Equal(t, int64(101), te.Documents)
		assertSameFiles(t, filepath.Join(dir, "ref-train"), train)
		assertSameFiles(t, filepath.Join(dir, "ref-test"), test)
	}
}

func listDir(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestBadInputWritesNothing(t *testing.T) {
	good := `{"text": "fine"}`
	for _, tc := range []struct {
		name  string
		lines []string
		msg   string
	}{
		{"malformed", []string{good, good, `{"text": "broken`, good}, "in.jsonl line 3: malformed JSON"},
		{"not a string", []string{good, `{"text": 42}`}, `in.jsonl line 2: "text" is a JSON number, not a string`},
		{"missing text", []string{`{"body": "x"}`}, `in.jsonl line 1: no "text" field`},
		{"blank line", []string{good, "", good}, "in.jsonl line 2: empty line"},
		{"invalid utf-8", []string{good, "{\"text\": \"\xc3\"}"}, "in.jsonl line 2: invalid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			require.NoError(t, os.WriteFile(in, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o644))
			_, err := File(context.Background(), []string{in}, filepath.Join(dir, "out"), options(2, 1))
			require.ErrorContains(t, err, tc.msg)
			_, _, err = Split(context.Background(), []string{in}, filepath.Join(dir, "train"), filepath.Join(dir, "test"), 0.5, options(2, 1))
			require.ErrorContains(t, err, tc.msg)
			assert.Equal(t, []string{"in.jsonl"}, listDir(t, dir), "nothing may be written")
		})
	}
}

// TestFirstBadLineReported: with many workers racing, the error reported is
// always the first bad line in input order.
func TestFirstBadLineReported(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := 0; i < 2000; i++ {
		switch i {
		case 1500, 1700:
			lines = append(lines, "{oops")
		default:
			lines = append(lines, fmt.Sprintf(`{"text": "document %d %s"}`, i, strings.Repeat("w ", i%50)))
		}
	}
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")), 0o644))
	for range 5 {
		_, err := File(context.Background(), []string{in}, filepath.Join(dir, "out"), options(8, 256))
		require.ErrorContains(t, err, "in.jsonl line 1501: malformed JSON")
	}
	// Line numbers restart in each file.
	_, err := File(context.Background(), []string{in, in}, filepath.Join(dir, "out"), options(2, 0))
	require.ErrorContains(t, err, "in.jsonl line 1501")
	assert.Equal(t, []string{"in.jsonl"}, listDir(t, dir))
}

func TestEncodeErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeCorpus(t, in, 100, 5, true)

	_, err := File(context.Background(), []string{in, filepath.Join(dir, "absent.jsonl")}, filepath.Join(dir, "out"), options(2, 0))
	require.ErrorContains(t, err, "absent.jsonl")

	big := options(2, 0)
	big.Encode = func(dst []int32, text string) []int32 { return append(dst, 70000) }
	_, err = File(context.Background(), []string{in}, filepath.Join(dir, "out"), big)
	require.ErrorContains(t, err, "token id 70000 at position 0 of sequence 0 does not fit dtype uint16")

	noEnc := options(2, 0)
	noEnc.Encode = nil
	_, err = File(context.Background(), []string{in}, filepath.Join(dir, "out"), noEnc)
	require.ErrorContains(t, err, "no encoder")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = File(ctx, []string{in}, filepath.Join(dir, "out"), options(2, 100))
	require.ErrorIs(t, err, context.Canceled)

	_, _, err = Split(context.Background(), []string{in}, filepath.Join(dir, "tr"), filepath.Join(dir, "te"), 2, options(2, 0))
	require.ErrorContains(t, err, "must be between 0 and 1")
	assert.Equal(t, []string{"in.jsonl"}, listDir(t, dir))
}

func TestProgress(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeCorpus(t, in, 300, 6, true)
	st, err := os.Stat(in)
	require.NoError(t, err)
	var lastDocs, lastBytes int64
	opt := options(2, 1000)
	opt.Progress = func(docs, bytes int64) {
		assert.GreaterOrEqual(t, docs, lastDocs)
		assert.Greater(t, bytes, lastBytes)
		lastDocs, lastBytes = docs, bytes
	}
	_, err = File(context.Background(), []string{in}, filepath.Join(dir, "out"), opt)
	require.NoError(t, err)
	assert.Equal(t, int64(300), lastDocs)
	assert.Equal(t, st.Size(), lastBytes)
}
