package hub

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/rivalbench/rival/jsonl"
	"github.com/rivalbench/rival/safefile"
)

// Format is a shard's on-disk format.
type Format int

const (
	// FormatAuto sniffs the format from the file's magic bytes and extension.
	FormatAuto Format = iota
	// FormatJSONL is one JSON object per line with a string "text" field.
	FormatJSONL
	// FormatJSONLGzip is FormatJSONL gzip'd (C4's .json.gz shards).
	FormatJSONLGzip
	// FormatParquet is a parquet file with a string "text" column (the hub's parquet conversions).
	FormatParquet
)

func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatJSONL:
		return "jsonl"
	case FormatJSONLGzip:
		return "jsonl.gz"
	case FormatParquet:
		return "parquet"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

var (
	gzipMagic    = []byte{0x1f, 0x8b}
	parquetMagic = []byte("PAR1")
)

// DetectFormat sniffs path: gzip and parquet by their magic bytes, JSON lines otherwise. An
// extension that promises one of the binary formats without its magic is an error (a truncated or
// mislabelled download), not silently read as text.
func DetectFormat(path string) (Format, error) {
	f, _, err := safefile.Open(path)
	if err != nil {
		return FormatAuto, err
	}
	defer f.Close()
	head := make([]byte, 4)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return FormatAuto, fmt.Errorf("read %s: %w", path, err)
	}
	head = head[:n]
	name := strings.ToLower(filepath.Base(path))
	switch {
	case bytes.HasPrefix(head, parquetMagic):
		return FormatParquet, nil
	case bytes.HasPrefix(head, gzipMagic):
		return FormatJSONLGzip, nil
	case strings.HasSuffix(name, ".parquet"):
		return FormatAuto, fmt.Errorf("%s: named .parquet but does not start with PAR1: truncated or not parquet; delete it and fetch again", path)
	case strings.HasSuffix(name, ".gz"):
		return FormatAuto, fmt.Errorf("%s: named .gz but is not gzip: delete it and fetch again", path)
	}
	return FormatJSONL, nil
}

// Read streams the "text" of each document in path to fn, in file order, stopping after
// limit documents (limit <= 0: all). It returns how many documents fn received. Memory stays
// bounded by one line (JSON lines) or one page (parquet), whatever the file's size. A malformed
// record is an error naming the file and the line or row; an error from fn stops the read and is
// returned wrapped.
func (d Documents) Read(ctx context.Context, path string, format Format, limit int, fn func(text string) error) (n int, err error) {
	if format == FormatAuto {
		format, err = DetectFormat(path)
		if err != nil {
			return 0, err
		}
	}
	switch format {
	case FormatJSONL, FormatJSONLGzip:
		f, _, err := safefile.Open(path)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		var r io.Reader = f
		if format == FormatJSONLGzip {
			zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
			if err != nil {
				return 0, fmt.Errorf("%s: not a gzip file: %w", path, err)
			}
			defer zr.Close()
			r = zr
		}
		return readJSONL(path, r, limit, fn)
	case FormatParquet:
		return d.readParquet(ctx, path, limit, fn)
	}
	return 0, fmt.Errorf("%s: unknown format %v", path, format)
}

// readJSONL reads lines of any length with the decoder every Rival step
// uses (see package jsonl); blank lines are skipped.
func readJSONL(path string, r io.Reader, limit int, fn func(string) error) (int, error) {
	var (
		d       jsonl.Decoder
		n       int
		lineErr error // an error of one line, already naming it
	)
	stop := errors.New("stop")
	err := jsonl.ReadLines(r, func(lineNo int, line []byte) error {
		if limit > 0 && n >= limit {
			return stop
		}
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		text, err := d.Text(line)
		if err == nil {
			err = fn(strings.Clone(text)) // fn may keep it; d reuses its memory
		}
		if err != nil {
			lineErr = fmt.Errorf("%s:%d: %w", path, lineNo, err)
			return stop
		}
		n++
		return nil
	})
	if lineErr != nil {
		return n, lineErr
	}
	if err != nil && !errors.Is(err, stop) {
		return n, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}
