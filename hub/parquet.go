package hub

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"
	"unsafe"

	"github.com/rivalbench/rival/internal/goprog"
	"github.com/rivalbench/rival/safefile"
)

// ParquetProgram is rival-parquet, the program that reads parquet shards: the parquet library and
// its codecs were about a fifth of what the targets compiled, and only a fetch of a parquet
// dataset needs them. Its first build, with the targets' packages already cached, took 21 CPU
// seconds (12 s) on the 2-core reference machine (docs/measurements.md).
var ParquetProgram = goprog.Program{
	Package: "github.com/rivalbench/rival/cmd/rival-parquet", Name: "rival-parquet",
	Topic: "fetch", What: "the parquet reader", Holds: "parquet-go", FirstBuild: "12 seconds",
}

// Documents reads the documents of downloaded shards.
type Documents struct {
	// Parquet builds rival-parquet, which reads parquet shards; nil refuses them.
	Parquet *goprog.Helper
}

// readParquet runs rival-parquet on path and hands each text it writes to fn. The program names
// the file and the row of a bad row itself; rows are numbered from 0 as fn receives them.
func (d Documents) readParquet(ctx context.Context, path string, limit int, fn func(string) error) (int, error) {
	if d.Parquet == nil {
		return 0, fmt.Errorf("%s: a parquet shard, and no reader for parquet was given", path)
	}
	// Refused here as every shard is (a FIFO, a link to a device), before any build.
	f, _, err := safefile.Open(path)
	if err != nil {
		return 0, err
	}
	f.Close()
	bin, err := d.Parquet.Build(ctx)
	if err != nil {
		return 0, err
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-limit", strconv.Itoa(max(limit, 0)), path)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("%s: starting %s: %w", path, bin, err)
	}
	var fnErr error
	n, frameErr := readFrames(bufio.NewReaderSize(out, 1<<16), maxText, func(row int, text string) error {
		// A cancel stops the read even when the program has written every row and gone: the
		// rows it left in the pipe are not handed on.
		if err := parent.Err(); err != nil {
			fnErr = fmt.Errorf("%s: row %d: %w", path, row, err)
			return fnErr
		}
		if err := fn(text); err != nil {
			fnErr = fmt.Errorf("%s: row %d: %w", path, row, err)
			return fnErr
		}
		return nil
	})
	if fnErr != nil {
		cancel() // the program may be blocked writing: stop it
		_ = cmd.Wait()
		return n, fnErr
	}
	if frameErr != nil {
		// Let the program finish (it may be blocked writing the rest) and say why it stopped,
		// which explains a cut frame better than the cut does.
		io.Copy(io.Discard, out)
	}
	if err := cmd.Wait(); err != nil {
		return n, d.Parquet.ErrorOf(ctx, err, stderr.String())
	}
	if err := parent.Err(); err != nil {
		return n, fmt.Errorf("%s: %w", path, err) // cancelled after the last row
	}
	if frameErr != nil {
		return n, fmt.Errorf("%s: reading what %s wrote: %w", path, ParquetProgram.Name, frameErr)
	}
	return n, nil
}

// maxText bounds one text: a compressed shard of a few hundred bytes may hold a text of megabytes,
// so the shard's size is no bound; no document is a gigabyte.
const maxText = 1 << 30

// readFrames hands fn each text of r, written as its length (a uvarint) and its bytes, with its
// index; a length over maxLen is an error.
func readFrames(r *bufio.Reader, maxLen int64, fn func(int, string) error) (int, error) {
	n := 0
	for {
		size, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("row %d: %w", n, err)
		}
		if size > uint64(maxLen) {
			return n, fmt.Errorf("row %d: a text of %d bytes, over the %d a document may hold", n, size, maxLen)
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(r, buf); err != nil {
			return n, fmt.Errorf("row %d: %w", n, err)
		}
		// buf is never written again: the string may share it (one allocation per text, not two).
		if err := fn(n, unsafe.String(unsafe.SliceData(buf), len(buf))); err != nil {
			return n, err
		}
		n++
	}
}
