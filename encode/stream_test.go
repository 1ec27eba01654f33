package encode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runeStream is runeEncoder in pieces: a BOS before the first rune, then one
// id per rune. StreamText hands on whole UTF-8 sequences only.
type runeStream struct {
	started bool
	failAt  int // fail once this many bytes were written; 0: never
	n       int
}

func (s *runeStream) Write(dst []int32, text []byte) ([]int32, error) {
	s.n += len(text)
	if s.failAt > 0 && s.n >= s.failAt {
		return dst, errors.New("the stand-in encoder gives up")
	}
	if len(text) > 0 && !s.started {
		s.started = true
		dst = append(dst, 1)
	}
	for _, r := range string(text) {
		dst = append(dst, 3+int32(r)%60000)
	}
	return dst, nil
}

func (s *runeStream) Close(dst []int32) ([]int32, error) { return dst, nil }

func streaming(workers int) Options {
	opt := options(workers, 4096)
	opt.LongLine = 10_000
	opt.Stream = func() (DocumentEncoder, error) { return &runeStream{}, nil }
	return opt
}

// TestStreamedLinesMatchWhole: with long lines streamed, File and Split
// write the bytes they write when every line is read whole, for any number
// of workers, and report the same statistics and progress totals.
func TestStreamedLinesMatchWhole(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeCorpus(t, in, 600, 7, false)
	// A long line whose text is empty, and one with escapes only.
	long := `{"pad": "` + strings.Repeat("p", 30_000) + `", "text": ""}` + "\n" +
		`{"text": "` + strings.Repeat(`\u00e9\ud83d\ude00\n`, 3000) + `"}` + "\n"
	f, err := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("\n" + long)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	want := filepath.Join(dir, "want")
	wst, err := File(context.Background(), []string{in}, want, options(2, 4096))
	require.NoError(t, err)
	for _, workers := range []int{1, 2, 4} {
		got := filepath.Join(dir, fmt.Sprintf("got%d", workers))
		opt := streaming(workers)
		var streamed int
		opt.Stream = func() (DocumentEncoder, error) { streamed++; return &runeStream{}, nil }
		var docs, inBytes int64
		opt.Progress = func(d, b int64) { docs, inBytes = d, b }
		st, err := File(context.Background(), []string{in}, got, opt)
		require.NoError(t, err)
		require.Equal(t, wst, st)
		require.GreaterOrEqual(t, streamed, 5, "long lines streamed")
		assertSameFiles(t, want, got)
		fi, err := os.Stat(in)
		require.NoError(t, err)
		require.Equal(t, wst.Documents, docs)
		require.Equal(t, fi.Size(), inBytes)

		tr, te, err := Split(context.Background(), []string{in, in}, got+"-train", got+"-test", 0.7, opt)
		require.NoError(t, err)
		wtr, wte, err := Split(context.Background(), []string{in, in}, want+"-train", want+"-test", 0.7, options(workers, 4096))
		require.NoError(t, err)
		require.Equal(t, wtr, tr)
		require.Equal(t, wte, te)
		assertSameFiles(t, want+"-train", got+"-train")
		assertSameFiles(t, want+"-test", got+"-test")
	}
}

// TestStreamedLineErrors: a fault in a streamed line, or from its encoder,
// names the file, the line and the document, and publishes nothing; a bad
// line before a long one is the one reported.
func TestStreamedLineErrors(t *testing.T) {
	long := strings.Repeat("word ", 5000)
	for _, tc := range []struct {
		name, body, err string
		failAt          int
	}{
		{"malformed after the text", `{"text": "a"}` + "\n" + `{"text": "` + long + `", }` + "\n", `line 2 (document 2 of the input): malformed JSON at byte 25013: expected a string key`, 0},
		{"invalid UTF-8", `{"text": "a"}` + "\n" + `{"text": "` + long + "\xff" + `"}` + "\n", `line 2 (document 2 of the input): invalid UTF-8 at byte 25010`, 0},
		{"duplicate text", `{"text": "` + long + `", "text": "b"}` + "\n", `line 1 (document 1 of the input): a second "text" key`, 0},
		{"bad line before a long one", "{}\n" + `{"text": "` + long + `"}` + "\n", `line 1: no "text" field`, 0},
		{"stream fails", `{"text": "x"}` + "\n" + `{"text": "` + long + `"}` + "\n", `line 2 (document 2 of the input): the stand-in encoder gives up`, 5000},
		{"unterminated at EOF", `{"text": "x"}` + "\n" + `{"text": "` + long, `line 2 (document 2 of the input): malformed JSON: unexpected end of line (unterminated string)`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			require.NoError(t, os.WriteFile(in, []byte(tc.body), 0o644))
			opt := streaming(2)
			opt.Stream = func() (DocumentEncoder, error) { return &runeStream{failAt: tc.failAt}, nil }
			out := filepath.Join(dir, "out")
			_, err := File(context.Background(), []string{in}, out, opt)
			require.ErrorContains(t, err, "encode: "+in+" "+tc.err)
			_, statErr := os.Stat(out + ".bin")
			require.True(t, os.IsNotExist(statErr))
		})
	}
}

// TestStreamedLineCancel: cancelling stops a streamed line.
func TestStreamedLineCancel(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text": "`+strings.Repeat("word ", 200_000)+`"}`), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	opt := streaming(2)
	opt.Stream = func() (DocumentEncoder, error) { cancel(); return &runeStream{}, nil }
	_, err := File(ctx, []string{in}, filepath.Join(dir, "out"), opt)
	require.ErrorIs(t, err, context.Canceled)
}

// TestStreamedLastLine: a long last line without a newline, and a file that
// is one long line, are streamed whole.
func TestStreamedLastLine(t *testing.T) {
	dir := t.TempDir()
	long := `{"text": "` + strings.Repeat("données ", 5000) + `"}`
	for i, body := range []string{long, `{"text": "a"}` + "\n" + long, long + "\n" + long + "\n\n"} {
		in := filepath.Join(dir, fmt.Sprintf("in%d.jsonl", i))
		require.NoError(t, os.WriteFile(in, []byte(body), 0o644))
		want, got := filepath.Join(dir, fmt.Sprintf("want%d", i)), filepath.Join(dir, fmt.Sprintf("got%d", i))
		_, werr := File(context.Background(), []string{in, in}, want, options(2, 4096))
		_, err := File(context.Background(), []string{in, in}, got, streaming(2))
		if werr != nil {
			require.EqualError(t, err, werr.Error())
			continue
		}
		require.NoError(t, err)
		assertSameFiles(t, want, got)
	}
}
