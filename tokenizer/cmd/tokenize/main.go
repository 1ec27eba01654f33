// Command tokenize encodes JSON lines with a Hugging Face tokenizer.json.
//
//	go run ./tokenizer/cmd/tokenize -tokenizer PATH [-special] [-workers N] < docs.jsonl > ids.jsonl
//
// Each input line is an object with a "text" string; each output line is the JSON
// array of its token ids, in input order. -special adds the tokenizer's special
// tokens as add_special_tokens=True does (Llama's and Mistral's BOS). Invalid
// UTF-8 in a line becomes U+FFFD, one per maximal ill-formed subpart, as when the
// reference reads the same bytes as text. A malformed line stops the run with an
// error naming its line number.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/rivalbench/rival/tokenizer"
)

func main() {
	path := flag.String("tokenizer", "", "path to tokenizer.json (required)")
	special := flag.Bool("special", false, "add special tokens (add_special_tokens=True)")
	workers := flag.Int("workers", 0, "encoding goroutines; 0 means one per core")
	flag.Parse()
	if *path == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: tokenize -tokenizer PATH [-special] [-workers N] < in.jsonl > out.jsonl")
		os.Exit(2)
	}
	tk, err := tokenizer.Load(*path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokenize:", err)
		os.Exit(1)
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	err = run(tk, os.Stdin, out, *special, *workers)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = fmt.Errorf("write output: %w", ferr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tokenize:", err)
		os.Exit(1)
	}
}

// batchLines and batchBytes bound how much input is held at once.
const (
	batchLines = 1024
	batchBytes = 16 << 20
)

// run reads batches of lines, decodes and encodes each batch in parallel, and
// writes the results in input order.
func run(tk *tokenizer.Tokenizer, in io.Reader, out io.Writer, special bool, workers int) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	r := bufio.NewReaderSize(in, 1<<20)
	lineNo := 0
	var buf []byte
	for {
		var lines [][]byte
		size := 0
		eof := false
		for len(lines) < batchLines && size < batchBytes {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				lines = append(lines, line)
				size += len(line)
			}
			if errors.Is(err, io.EOF) {
				eof = true
				break
			}
			if err != nil {
				return fmt.Errorf("read input after line %d: %w", lineNo+len(lines), err)
			}
		}
		ids, err := encodeBatch(tk, lines, lineNo, special, workers)
		if err != nil {
			return err
		}
		for _, doc := range ids {
			buf = append(buf[:0], '[')
			for i, id := range doc {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, int64(id), 10)
			}
			buf = append(buf, ']', '\n')
			if _, err := out.Write(buf); err != nil {
				return fmt.Errorf("write output: %w", err)
			}
		}
		lineNo += len(lines)
		if eof {
			return nil
		}
	}
}

// encodeBatch parses and encodes lines on workers goroutines; the error of the
// earliest bad line wins.
func encodeBatch(tk *tokenizer.Tokenizer, lines [][]byte, first int, special bool, workers int) ([][]int32, error) {
	ids := make([][]int32, len(lines))
	errs := make([]error, len(lines))
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := 0
	for w := 0; w < min(workers, len(lines)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(lines) {
					return
				}
				text, err := parseLine(lines[i])
				if err != nil {
					errs[i] = fmt.Errorf("line %d: %w", first+i+1, err)
					continue
				}
				ids[i] = tk.AppendEncode(nil, text, special)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// parseLine returns the "text" of one JSON line.
func parseLine(line []byte) (string, error) {
	var doc struct {
		Text *string `json:"text"`
	}
	// Replace invalid UTF-8 first, the way a UTF-8 text reader would, so that
	// encoding/json's own per-byte replacement never applies.
	line = []byte(tokenizer.ValidUTF8(string(line)))
	if err := json.Unmarshal(line, &doc); err != nil {
		return "", fmt.Errorf("want a JSON object with a \"text\" string: %w", err)
	}
	if doc.Text == nil {
		return "", errors.New(`no "text" field`)
	}
	return *doc.Text, nil
}
