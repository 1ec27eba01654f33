// Package dataset turns JSONL corpora into Megatron indexed datasets:
// a streaming, parallel, order-preserving encode whose output is identical
// whatever the number of workers, in memory bounded by the chunk size and
// worker count rather than by the corpus.
package dataset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/rivalbench/rival/indexed"
)

// AppendEncoder appends the token ids of text (special tokens included, as
// the model's tokenizer adds them) to dst and returns the extended slice.
// Workers call it concurrently, so it must be safe for concurrent use.
// text is a view into a reused buffer, valid only during the call: an
// encoder that keeps any part of it (a cache key, say) must copy it with
// strings.Clone. This spares a copy and an allocation of every document.
type AppendEncoder func(dst []int32, text string) []int32

// Options configures an encode.
type Options struct {
	Encode AppendEncoder // required
	EOD    int32         // appended to every document that produced a token
	DType  indexed.DType // from indexed.DTypeForVocab
	// Workers is the number of encoding goroutines; 0 means GOMAXPROCS.
	Workers int
	// ChunkBytes is the input handed to a worker at a time; 0 means 1 MiB.
	// Memory use is about (2·Workers+2) chunks of input plus their tokens.
	ChunkBytes int
	// Progress, when set, is called from the writing goroutine after each
	// chunk with running totals.
	Progress func(documents, inputBytes int64)
}

// Stats counts what one output received.
type Stats struct {
	Documents      int64 `json:"documents"`
	EmptyDocuments int64 `json:"empty_documents"`
	Sequences      int64 `json:"sequences"`
	Tokens         int64 `json:"tokens"`
}

const (
	defaultChunkBytes = 1 << 20
	minRead           = 4 << 10
)

// chunk is a run of whole lines from one file, encoded by one worker.
type chunk struct {
	file      string
	firstLine int64 // 1-based line number of the first line in file
	lines     int
	data      []byte
	tokens    []int32
	ends      []int // per line, the end of its tokens in tokens
	err       error // a read or parse error; ends holds the lines before it
	done      chan struct{}
}

// sink receives encoded documents in input order; doc counts from 0 over
// all inputs.
type sink func(doc int64, tokens []int32) error

// EncodeFile encodes every document of inputs, in order, into one dataset at
// outPrefix (outPrefix.bin and outPrefix.idx). On any error nothing is
// published.
func EncodeFile(ctx context.Context, inputs []string, outPrefix string, opt Options) (Stats, error) {
	w, err := indexed.NewWriter(outPrefix, opt.DType)
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	err = run(ctx, inputs, opt, func(_ int64, tokens []int32) error {
		count(&st, tokens)
		return w.AddDocument(tokens)
	})
	if err != nil {
		w.Abort()
		return Stats{}, err
	}
	if err := w.Finalize(); err != nil {
		return Stats{}, err
	}
	return st, nil
}

// EncodeSplit encodes inputs into a train and a test dataset, split by
// documents in input order: the first TrainDocuments(N, trainSplit) of the
// N documents go to train, the rest to test. It reads the inputs twice: a
// cheap first pass counts the documents (lines).
func EncodeSplit(ctx context.Context, inputs []string, trainPrefix, testPrefix string, trainSplit float64, opt Options) (train, test Stats, err error) {
	n, err := CountDocuments(inputs)
	if err != nil {
		return Stats{}, Stats{}, err
	}
	k, err := TrainDocuments(n, trainSplit)
	if err != nil {
		return Stats{}, Stats{}, err
	}
	tw, err := indexed.NewWriter(trainPrefix, opt.DType)
	if err != nil {
		return Stats{}, Stats{}, err
	}
	vw, err := indexed.NewWriter(testPrefix, opt.DType)
	if err != nil {
		tw.Abort()
		return Stats{}, Stats{}, err
	}
	err = run(ctx, inputs, opt, func(doc int64, tokens []int32) error {
		if doc < k {
			count(&train, tokens)
			return tw.AddDocument(tokens)
		}
		count(&test, tokens)
		return vw.AddDocument(tokens)
	})
	if err == nil && train.Documents+test.Documents != n {
		err = fmt.Errorf("encode: the inputs changed while encoding: counted %d documents, encoded %d", n, train.Documents+test.Documents)
	}
	if err != nil {
		tw.Abort()
		vw.Abort()
		return Stats{}, Stats{}, err
	}
	if err := tw.Finalize(); err != nil {
		vw.Abort()
		return Stats{}, Stats{}, err
	}
	if err := vw.Finalize(); err != nil {
		return Stats{}, Stats{}, err
	}
	return train, test, nil
}

func count(st *Stats, tokens []int32) {
	st.Documents++
	if len(tokens) == 0 {
		st.EmptyDocuments++
		return
	}
	st.Sequences++
	st.Tokens += int64(len(tokens))
}

// run is the pipeline: one reader cuts the inputs into chunks of whole
// lines, Workers goroutines parse and encode chunks, and the calling
// goroutine hands documents to sink strictly in input order. A fixed pool of
// chunks bounds memory. Errors surface in input order too, so the first bad
// line in the input is the one reported, whatever the scheduling.
func run(ctx context.Context, inputs []string, opt Options, sink sink) error {
	if opt.Encode == nil {
		return errors.New("encode: no encoder given")
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunkBytes := opt.ChunkBytes
	if chunkBytes <= 0 {
		chunkBytes = defaultChunkBytes
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	poolSize := 2*workers + 2
	free := make(chan *chunk, poolSize)
	for range poolSize {
		free <- &chunk{}
	}
	order := make(chan *chunk, poolSize)
	work := make(chan *chunk, poolSize)

	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(order)
		defer close(work)
		read(ctx, inputs, chunkBytes, free, order, work)
	})
	for range workers {
		wg.Go(func() {
			var p parser
			for c := range work {
				encodeChunk(&p, c, opt)
				close(c.done)
			}
		})
	}

	var err error
	var docs, inBytes int64
	for c := range order {
		select {
		case <-c.done:
		case <-ctx.Done():
		}
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			start := 0
			for _, end := range c.ends {
				if err = sink(docs, c.tokens[start:end]); err != nil {
					break
				}
				docs++
				start = end
			}
			inBytes += int64(len(c.data))
			if err == nil {
				err = c.err
			}
			if err == nil && opt.Progress != nil && len(c.data) > 0 {
				opt.Progress(docs, inBytes)
			}
		}
		if err != nil {
			cancel()
			continue // drain order so the reader can finish
		}
		recycle(c, chunkBytes)
		free <- c
	}
	wg.Wait()
	if err == nil {
		// The reader also stops early when the caller cancels.
		err = ctx.Err()
	}
	return err
}

// recycle drops buffers an unusually long line inflated, so one huge
// document does not pin its memory for the rest of the run.
func recycle(c *chunk, chunkBytes int) {
	if cap(c.data) > 4*chunkBytes {
		c.data = nil
	}
	if cap(c.tokens) > 4*chunkBytes {
		c.tokens = nil
	}
}

// read cuts each input into chunks of whole lines and queues each chunk
// twice: on order, which the writer follows, and on work, for the workers.
func read(ctx context.Context, inputs []string, chunkBytes int, free <-chan *chunk, order, work chan<- *chunk) {
	send := func(c *chunk) bool {
		select {
		case order <- c:
		case <-ctx.Done():
			return false
		}
		select {
		case work <- c:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, path := range inputs {
		f, err := os.Open(path)
		if err != nil {
			select {
			case c := <-free:
				fail(ctx, c, order, fmt.Errorf("encode: %w", err))
			case <-ctx.Done():
			}
			return
		}
		ok := readFile(ctx, f, path, chunkBytes, free, send, order)
		f.Close()
		if !ok {
			return
		}
	}
}

// fail queues a chunk that carries only err, so it is reported after the
// chunks before it. It bypasses the workers.
func fail(ctx context.Context, c *chunk, order chan<- *chunk, err error) {
	c.data, c.ends, c.lines, c.err = c.data[:0], c.ends[:0], 0, err
	c.done = make(chan struct{})
	close(c.done)
	select {
	case order <- c:
	case <-ctx.Done():
	}
}

func readFile(ctx context.Context, f *os.File, path string, chunkBytes int, free <-chan *chunk, send func(*chunk) bool, order chan<- *chunk) bool {
	var carry []byte // a partial line left over from the previous chunk
	line := int64(1)
	eof := false
	for !eof || len(carry) > 0 {
		var c *chunk
		select {
		case c = <-free:
		case <-ctx.Done():
			return false
		}
		c.file, c.firstLine, c.err = path, line, nil
		c.data = append(c.data[:0], carry...)
		carry = carry[:0]
		// Fill to chunkBytes, then keep reading until the chunk holds at
		// least one whole line or the file ends. The carry never holds a
		// newline, so only fresh bytes need scanning.
		hasNewline := false
		for !eof && (len(c.data) < chunkBytes || !hasNewline) {
			// Read at least minRead bytes at a time, and no more than the
			// chunk still wants unless a line is longer than the chunk.
			want := max(chunkBytes-len(c.data), minRead)
			if cap(c.data)-len(c.data) < want {
				c.data = slices.Grow(c.data, want)
			}
			n, err := f.Read(c.data[len(c.data) : len(c.data)+want])
			if !hasNewline && bytes.IndexByte(c.data[len(c.data):len(c.data)+n], '\n') >= 0 {
				hasNewline = true
			}
			c.data = c.data[:len(c.data)+n]
			if errors.Is(err, io.EOF) {
				eof = true
			} else if err != nil {
				fail(ctx, c, order, fmt.Errorf("encode: read %s: %w", path, err))
				return false
			}
		}
		if !eof {
			cut := bytes.LastIndexByte(c.data, '\n') + 1
			carry = append(carry, c.data[cut:]...)
			c.data = c.data[:cut]
		}
		c.lines = bytes.Count(c.data, []byte{'\n'})
		if len(c.data) > 0 && c.data[len(c.data)-1] != '\n' {
			c.lines++ // the file's last line has no newline
		}
		line += int64(c.lines)
		c.done = make(chan struct{})
		if !send(c) {
			return false
		}
	}
	return true
}

// encodeChunk parses and encodes every line of c; on a bad line it records
// the error, naming file and line, and stops.
func encodeChunk(p *parser, c *chunk, opt Options) {
	c.tokens, c.ends = c.tokens[:0], c.ends[:0]
	if c.err != nil {
		return
	}
	data := c.data
	for k := 0; k < c.lines; k++ {
		end := bytes.IndexByte(data, '\n')
		if end < 0 {
			end = len(data)
		}
		text, err := p.textField(data[:end])
		if err != nil {
			c.err = fmt.Errorf("encode: %s line %d: %w", c.file, c.firstLine+int64(k), err)
			return
		}
		before := len(c.tokens)
		c.tokens = opt.Encode(c.tokens, text)
		if len(c.tokens) > before {
			c.tokens = append(c.tokens, opt.EOD)
		}
		c.ends = append(c.ends, len(c.tokens))
		if end < len(data) {
			data = data[end+1:]
		}
	}
}
