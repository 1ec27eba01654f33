package data

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/tokenizer"
)

func llamaTokPath() string {
	d := os.Getenv("RIVAL_SHARED_DIR")
	if d == "" {
		d = filepath.Join("..", "..", "..", "shared")
	}
	return filepath.Join(d, "tokenizers", "llama-3.1", "tokenizer.json")
}

// streamTokenizers are the three benchmark tokenizers (Llama 3.1 when the
// shared folder has it).
func streamTokenizers(t testing.TB) map[string]*tokenizer.Tokenizer {
	out := map[string]*tokenizer.Tokenizer{}
	paths := map[string]string{"mistral": mistralTok, "qwen": qwenTok}
	if _, err := os.Stat(llamaTokPath()); err == nil {
		paths["llama"] = llamaTokPath()
	} else {
		t.Logf("Llama 3.1 tokenizer not at %s: testing Mistral and Qwen only (set RIVAL_SHARED_DIR)", llamaTokPath())
	}
	for name, p := range paths {
		tk, err := tokenizer.LoadForStreaming(context.Background(), p)
		require.NoError(t, err)
		require.NoError(t, tk.CanStream(), name)
		out[name] = tk
	}
	return out
}

func opticks(t testing.TB) string {
	raw, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		t.Skipf("text missing: %v", err)
	}
	return string(raw)
}

// TestEncodeStreamsLongDocuments: a corpus of short documents and documents
// longer than the streaming threshold (raw UTF-8, and with every character
// escaped, surrogate pairs included) gives byte-identical .bin and .idx
// whether long lines are streamed or read whole, for File and Split.
func TestEncodeStreamsLongDocuments(t *testing.T) {
	text := opticks(t)
	var lines []string
	add := func(s string) {
		b, err := json.Marshal(map[string]string{"text": s})
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	add("A short one.")
	add(text)
	add("")
	add(strings.Repeat("Ünïcödé 日本語の文章、句読点。 😀👍 x'll 12345\n", 4000))
	add("<|begin_of_text|>" + text[:300_000] + "<|end_of_text|><s>" + text[:1000])
	// Every character escaped as \uXXXX, astral ones as surrogate pairs.
	var esc strings.Builder
	esc.WriteString(`{"id": [1, {"a": null}], "text": "`)
	for _, r := range "The prism's 😀 colours\ttab " + text[:200_000] {
		if r > 0xFFFF {
			r -= 0x10000
			fmt.Fprintf(&esc, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		} else {
			fmt.Fprintf(&esc, `\u%04x`, r)
		}
	}
	esc.WriteString(`", "more": "after"}`)
	lines = append(lines, esc.String())
	add("The end.")
	in := filepath.Join(t.TempDir(), "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")), 0o644))

	for name, tk := range streamTokenizers(t) {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			whole := encodeOptions(tk, 2)
			whole.Stream = nil
			streamed := encodeOptions(tk, 2)
			require.NotNil(t, streamed.Stream)
			streamed.LongLine = 100_000 // four of the lines
			var progressed int
			streamed.Progress = func(int64, int64) { progressed++ }

			a, err := encode.File(context.Background(), []string{in}, filepath.Join(dir, "whole"), whole)
			require.NoError(t, err)
			b, err := encode.File(context.Background(), []string{in}, filepath.Join(dir, "streamed"), streamed)
			require.NoError(t, err)
			require.Equal(t, a, b)
			require.Positive(t, progressed)
			sameFiles(t, filepath.Join(dir, "whole"), filepath.Join(dir, "streamed"))

			for _, o := range []encode.Options{whole, streamed} {
				o := o
				p := filepath.Join(dir, fmt.Sprintf("split%v", o.Stream != nil))
				_, _, err := encode.Split(context.Background(), []string{in}, p+"-train", p+"-test", 0.5, o)
				require.NoError(t, err)
			}
			sameFiles(t, filepath.Join(dir, "splitfalse-train"), filepath.Join(dir, "splittrue-train"))
			sameFiles(t, filepath.Join(dir, "splitfalse-test"), filepath.Join(dir, "splittrue-test"))
		})
	}
}

func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	for _, f := range []func(string) string{indexed.BinPath, indexed.IdxPath} {
		x, err := os.ReadFile(f(a))
		require.NoError(t, err)
		y, err := os.ReadFile(f(b))
		require.NoError(t, err)
		require.True(t, bytes.Equal(x, y), "%s and %s differ", f(a), f(b))
	}
}

// TestEncodeStreamRefusesHugePreToken: a document whose one run of letters
// passes the limit is refused naming the file, line and document, and
// nothing is published.
func TestEncodeStreamRefusesHugePreToken(t *testing.T) {
	tk, err := tokenizer.LoadForStreaming(context.Background(), qwenTok)
	require.NoError(t, err)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	line := `{"text": "start ` + strings.Repeat("a", tokenizer.DefaultMaxPending+1) + `"}`
	require.NoError(t, os.WriteFile(in, []byte("{\"text\": \"one\"}\n"+line+"\n"), 0o644))
	out := filepath.Join(dir, "out")
	_, err = encode.File(context.Background(), []string{in}, out, encodeOptions(tk, 2))
	require.ErrorIs(t, err, tokenizer.ErrPreTokenTooLong)
	require.ErrorContains(t, err, in+" line 2 (document 2 of the input)")
	_, statErr := os.Stat(indexed.BinPath(out))
	require.True(t, os.IsNotExist(statErr))
}

// oneDocument writes a JSONL file of one document of about size bytes:
// Newton's Opticks repeated.
func oneDocument(b *testing.B, size int64) (string, int64) {
	b.Helper()
	text := opticks(b)
	enc, err := json.Marshal(text)
	if err != nil {
		b.Fatal(err)
	}
	body := enc[1 : len(enc)-1]
	path := filepath.Join(b.TempDir(), "one.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	f.WriteString(`{"text": "`)
	var n int64
	for n < size {
		f.Write(body)
		n += int64(len(text))
	}
	f.WriteString("\"}\n")
	return path, n
}

// BenchmarkEncodeOneDocument encodes a JSONL file holding one document of
// 100 MB or 1 GB (Newton's Opticks repeated), as the encode targets do, with
// Llama 3.1 when present, else Mistral. "whole" is the path without
// streaming (every document read whole), for comparison; it is run only at
// 100 MB. Peak RSS: run the test binary under /usr/bin/time -v
// (docs/measurements.md).
func BenchmarkEncodeOneDocument(b *testing.B) {
	p := llamaTokPath()
	if _, err := os.Stat(p); err != nil {
		p = mistralTok
	}
	tk, err := tokenizer.LoadForStreaming(context.Background(), p)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		size   int64
		stream bool
	}{{"100MB/stream", 100 << 20, true}, {"100MB/whole", 100 << 20, false}, {"1GB/stream", 1 << 30, true}} {
		b.Run(c.name, func(b *testing.B) {
			path, n := oneDocument(b, c.size)
			opt := encodeOptions(tk, 2)
			if !c.stream {
				opt.Stream = nil
			}
			out := filepath.Join(b.TempDir(), "out")
			b.SetBytes(n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode.File(context.Background(), []string{path}, out, opt); err != nil {
					b.Fatal(err)
				}
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MiB")
		})
	}
}
