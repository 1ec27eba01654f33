package hub_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/hub/hubtest"
)

func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o644))
	return p
}

func gz(t testing.TB, parts ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	// Each part is its own gzip member: readers must follow multi-member streams.
	for _, p := range parts {
		w := gzip.NewWriter(&buf)
		_, err := w.Write([]byte(p))
		require.NoError(t, err)
		require.NoError(t, w.Close())
	}
	return buf.Bytes()
}

func collect(path string, format hub.Format, limit int) ([]string, error) {
	var out []string
	n, err := documents.Read(context.Background(), path, format, limit, func(s string) error {
		out = append(out, s)
		return nil
	})
	if n != len(out) {
		return out, fmt.Errorf("n=%d but fn saw %d", n, len(out))
	}
	return out, err
}

func TestReadJSONL(t *testing.T) {
	long := strings.Repeat("long ", 300_000) // 1.5 MB: longer than any read buffer
	cases := []struct {
		name    string
		file    string
		data    string
		limit   int
		want    []string
		wantErr string
	}{
		{name: "C4 records", file: "a.jsonl",
			data: `{"text":"Beginners BBQ Class.","timestamp":"2019-04-25T12:57:54Z","url":"https://example.org/bbq"}` + "\n" + `{"text":"Discussion in 'Mac OS X' started by x"}` + "\n",
			want: []string{"Beginners BBQ Class.", "Discussion in 'Mac OS X' started by x"}},
		{name: "blank lines, CRLF, no final newline", file: "b.json", data: "\n{\"text\":\"a\"}\r\n\r\n  \n{\"text\":\"b\\u00e9\\n\"}", want: []string{"a", "bé\n"}},
		{name: "empty text is a document", file: "c.jsonl", data: `{"text":""}` + "\n", want: []string{""}},
		{name: "limit", file: "d.jsonl", data: "{\"text\":\"1\"}\n{\"text\":\"2\"}\n{\"text\":\"3\"}\n", limit: 2, want: []string{"1", "2"}},
		{name: "long line", file: "e.jsonl", data: `{"text":"` + long + `"}` + "\n" + `{"text":"after"}`, want: []string{long, "after"}},
		{name: "empty file", file: "f.jsonl", data: "", want: nil},
		{name: "malformed JSON names the line", file: "g.jsonl", data: "{\"text\":\"ok\"}\n\n{\"text\":\"unterminated}\n", want: []string{"ok"}, wantErr: "g.jsonl:3: malformed JSON: unexpected end of line (unterminated string)"},
		{name: "missing text names the line", file: "h.jsonl", data: "{\"content\":\"x\"}\n", wantErr: "h.jsonl:1: no \"text\" field"},
		{name: "null text", file: "i.jsonl", data: "{\"text\":null}\n", wantErr: "i.jsonl:1: \"text\" is a JSON null, not a string"},
		{name: "text not a string", file: "j.jsonl", data: "{\"text\":42}\n", wantErr: "j.jsonl:1: \"text\" is a JSON number, not a string"},
		{name: "key matching is exact, as in Python", file: "l.jsonl", data: "{\"Text\":\"x\"}\n", wantErr: "l.jsonl:1: no \"text\" field"},
		{name: "invalid UTF-8 names the line and byte", file: "m.jsonl", data: "{\"text\":\"ok\"}\n{\"text\":\"\xff\"}\n", want: []string{"ok"}, wantErr: "m.jsonl:2: invalid UTF-8 at byte 9"},
		{name: "not an object", file: "k.jsonl", data: "[1,2]\n", wantErr: "k.jsonl:1: the line is a JSON array, not an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := writeFile(t, c.file, []byte(c.data))
			got, err := collect(p, hub.FormatAuto, c.limit)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, c.want, got)

			// The same records gzip'd read the same.
			gp := writeFile(t, c.file+".gz", gz(t, c.data))
			gotGz, errGz := collect(gp, hub.FormatAuto, c.limit)
			assert.Equal(t, c.want, gotGz)
			if c.wantErr != "" {
				require.ErrorContains(t, errGz, strings.Replace(c.wantErr, c.file, c.file+".gz", 1))
			} else {
				require.NoError(t, errGz)
			}
		})
	}
}

func TestReadGzipMultiMember(t *testing.T) {
	p := writeFile(t, "c4-train.00000-of-01024.json.gz", gz(t, "{\"text\":\"one\"}\n", "{\"text\":\"two\"}\n"))
	got, err := collect(p, hub.FormatJSONLGzip, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"one", "two"}, got)
}

func TestCallbackErrorStops(t *testing.T) {
	stop := errors.New("enough")
	p := writeFile(t, "a.jsonl", []byte("{\"text\":\"1\"}\n{\"text\":\"2\"}\n"))
	calls := 0
	n, err := documents.Read(context.Background(), p, hub.FormatAuto, 0, func(string) error {
		calls++
		return stop
	})
	require.ErrorIs(t, err, stop)
	assert.Contains(t, err.Error(), "a.jsonl:1")
	assert.Equal(t, 0, n)
	assert.Equal(t, 1, calls)
}

func TestDetectFormat(t *testing.T) {
	pq := hubtest.ParquetFile(t, []string{"x"}, 10)
	raw, err := os.ReadFile(pq)
	require.NoError(t, err)
	cases := []struct {
		name    string
		data    []byte
		want    hub.Format
		wantErr string
	}{
		{"c4-train.00000-of-01024.json.gz", gz(t, "{}"), hub.FormatJSONLGzip, ""},
		{"docs.jsonl.gz", gz(t, "{}"), hub.FormatJSONLGzip, ""},
		{"0000.parquet", raw, hub.FormatParquet, ""},
		{"no-extension", raw, hub.FormatParquet, ""},
		{"docs.jsonl", []byte(`{"text":"a"}`), hub.FormatJSONL, ""},
		{"docs.json", []byte(""), hub.FormatJSONL, ""},
		{"0000.parquet", []byte("<html>rate limited</html>"), hub.FormatAuto, "does not start with PAR1"},
		{"x.json.gz", []byte(`{"text":"a"}`), hub.FormatAuto, "is not gzip"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := hub.DetectFormat(writeFile(t, c.name, c.data))
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	_, err = hub.DetectFormat(filepath.Join(t.TempDir(), "missing.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestReadParquet(t *testing.T) {
	var texts []string
	for i := range 1000 {
		texts = append(texts, fmt.Sprintf("the sentence number %d , said he .", i))
	}
	p := hubtest.ParquetFile(t, texts, 128)
	pf := openParquet(t, p)
	require.Greater(t, len(pf.RowGroups()), 5, "the test must span row groups")

	got, err := collect(p, hub.FormatAuto, 0)
	require.NoError(t, err)
	assert.Equal(t, texts, got)

	for _, limit := range []int{1, 127, 128, 129, 999, 1000, 5000} {
		got, err := collect(p, hub.FormatParquet, limit)
		require.NoError(t, err)
		assert.Equal(t, texts[:min(limit, len(texts))], got, "limit %d", limit)
	}
}

func openParquet(t *testing.T, p string) *parquet.File {
	f, err := os.Open(p)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	fi, err := f.Stat()
	require.NoError(t, err)
	pf, err := parquet.OpenFile(f, fi.Size())
	require.NoError(t, err)
	return pf
}

func TestReadParquetBadInput(t *testing.T) {
	t.Run("no text column", func(t *testing.T) {
		type row struct {
			Body string `parquet:"body"`
		}
		p := filepath.Join(t.TempDir(), "x.parquet")
		require.NoError(t, parquet.WriteFile(p, []row{{"a"}}))
		_, err := collect(p, hub.FormatAuto, 0)
		require.ErrorContains(t, err, `no "text" column (columns: body)`)
	})
	t.Run("text is not a string", func(t *testing.T) {
		type row struct {
			Text int64 `parquet:"text"`
		}
		p := filepath.Join(t.TempDir(), "x.parquet")
		require.NoError(t, parquet.WriteFile(p, []row{{1}}))
		_, err := collect(p, hub.FormatAuto, 0)
		require.ErrorContains(t, err, "want a plain string column")
	})
	t.Run("null text names the row", func(t *testing.T) {
		type row struct {
			Text *string `parquet:"text,optional"`
		}
		a, c := "a", "c"
		p := filepath.Join(t.TempDir(), "x.parquet")
		require.NoError(t, parquet.WriteFile(p, []row{{&a}, {nil}, {&c}}))
		got, err := collect(p, hub.FormatAuto, 0)
		require.ErrorContains(t, err, `x.parquet: row 1: "text" is null`)
		assert.Equal(t, []string{"a"}, got)
	})
	t.Run("truncated file", func(t *testing.T) {
		raw, err := os.ReadFile(hubtest.ParquetFile(t, []string{"a", "b", "c"}, 10))
		require.NoError(t, err)
		p := writeFile(t, "cut.parquet", raw[:len(raw)/2])
		_, err = collect(p, hub.FormatAuto, 0)
		require.ErrorContains(t, err, "cut.parquet: not a readable parquet file")
	})
}

// FuzzReadJSONL checks the reader never panics and, when it succeeds, returns exactly what
// encoding/json finds under the exact key "text" of each non-blank line (map decoding: its key
// matching is exact, as Python's is; struct decoding would fold case).
func FuzzReadJSONL(f *testing.F) {
	for _, s := range []string{
		`{"text":"a"}` + "\n" + `{"text":"b"}`,
		"\n\r\n{\"text\":\"\\u00e9\"}\r\n",
		`{"text":null}`,
		`{"text":"x","text":"y"}`,
		"{\"text\":\"\xff\"}",
		`[]`,
		`{"text":"a"}{"text":"b"}`,
		`{"Text":"a"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.jsonl")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		got, err := collect(p, hub.FormatJSONL, 0)
		if err != nil {
			require.Contains(t, err.Error(), p+":")
			return
		}
		var want []string
		for _, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			require.True(t, utf8.Valid(line), "reader accepted invalid UTF-8 %q", line)
			var m map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(line, &m), "reader accepted %q", line)
			raw, ok := m["text"]
			require.True(t, ok && len(raw) > 0 && raw[0] == '"', "reader accepted %q", line)
			var text string
			require.NoError(t, json.Unmarshal(raw, &text))
			want = append(want, text)
		}
		require.Equal(t, want, got)
		for _, s := range got {
			require.True(t, utf8.ValidString(s))
		}
	})
}

func BenchmarkReadDocuments(b *testing.B) {
	texts := make([]string, 20000)
	var jsonl bytes.Buffer
	for i := range texts {
		texts[i] = fmt.Sprintf("document %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 20))
		line, _ := json.Marshal(map[string]string{"text": texts[i]})
		jsonl.Write(append(line, '\n'))
	}
	files := map[string]string{
		"jsonl":    writeFile(b, "docs.jsonl", jsonl.Bytes()),
		"jsonl.gz": writeFile(b, "docs.jsonl.gz", gz(b, jsonl.String())),
		"parquet":  hubtest.ParquetFile(b, texts, 4096),
	}
	for _, name := range []string{"jsonl", "jsonl.gz", "parquet"} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(jsonl.Len()))
			for b.Loop() {
				n, err := documents.Read(context.Background(), files[name], hub.FormatAuto, 0, func(string) error { return nil })
				if err != nil || n != len(texts) {
					b.Fatal(n, err)
				}
			}
		})
	}
}
