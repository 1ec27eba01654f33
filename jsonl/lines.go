package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// ReadLines calls fn with each line of r, without its "\n" or "\r\n", and its
// 1-based number. Lines of any length are supported; memory is bounded by the
// longest line. A last line without a newline counts; an empty input has no
// lines. The line is valid only during the call. An error from fn stops the
// reading and is returned as is.
func ReadLines(r io.Reader, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var long []byte
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		line := chunk
		if long != nil {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > 0 {
			n++
			line = bytes.TrimSuffix(line, []byte("\n"))
			line = bytes.TrimSuffix(line, []byte("\r"))
			if ferr := fn(n, line); ferr != nil {
				return ferr
			}
		}
		long = long[:0:0]
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}
