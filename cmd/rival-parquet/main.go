// Command rival-parquet is the part of Rival that reads parquet shards. It is a program of its own
// so that the targets (`go run mage.go ...`) compile without the parquet library and its codecs;
// `fetch` builds it on first use (package hub, Documents).
//
//	rival-parquet [-limit N] PATH
//
// It writes the "text" of each row of PATH to standard output, in file order, each as its length
// in bytes (an unsigned varint, as encoding/binary writes it) followed by its bytes, unchanged.
// It stops after N rows (N <= 0: all). When a row cannot be read it has written the rows before
// it, says why on standard error, naming the file and the row, and exits 1.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rivalbench/rival/hub/parquettext"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errWrite marks a failed write to standard output: the reader has gone, nothing to say.
var errWrite = errors.New("standard output closed")

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rival-parquet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	limit := fs.Int("limit", 0, "stop after this many rows (0: all)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: rival-parquet [-limit N] PATH")
		return 2
	}
	w := bufio.NewWriterSize(stdout, 1<<16)
	var head [binary.MaxVarintLen64]byte
	_, err := parquettext.Read(fs.Arg(0), *limit, func(text string) error {
		n := binary.PutUvarint(head[:], uint64(len(text)))
		if _, err := w.Write(head[:n]); err != nil {
			return errWrite
		}
		if _, err := w.WriteString(text); err != nil {
			return errWrite
		}
		return nil
	})
	if ferr := w.Flush(); err == nil && ferr != nil {
		err = errWrite
	}
	switch {
	case errors.Is(err, errWrite):
		return 3
	case err != nil:
		w.Flush() // the rows before the bad one
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
