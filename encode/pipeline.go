package encode

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
	"github.com/rivalbench/rival/jsonl"
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
	// Progress, when set, is called after each chunk is written, with
	// running totals. Calls come from different workers but never overlap.
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
	seq       int64 // position in the input order, from 0
	file      string
	firstLine int64 // 1-based line number of the first line in file
	lines     int
	data      []byte
	tokens    []int32
	ends      []int // per line, the end of its tokens in tokens
	err       error // a read or parse error; ends holds the lines before it
}

// sink receives encoded documents in input order; doc counts from 0 over
// all inputs.
type sink func(doc int64, tokens []int32) error

// File encodes every document of inputs, in order, into one dataset at
// outPrefix (outPrefix.bin and outPrefix.idx). On any error nothing is
// published.
func File(ctx context.Context, inputs []string, outPrefix string, opt Options) (Stats, error) {
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

// Split encodes inputs into a train and a test dataset, split by
// documents in input order: the first TrainDocuments(N, trainSplit) of the
// N documents go to train, the rest to test. It reads the inputs twice: a
// cheap first pass counts the documents (lines).
func Split(ctx context.Context, inputs []string, trainPrefix, testPrefix string, trainSplit float64, opt Options) (train, test Stats, err error) {
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

// run is the pipeline. Workers goroutines (one per core by default) each
// loop: take a free chunk, fill it with the next whole lines of the input
// (under a lock, so chunks are numbered in input order), parse and encode
// it, then commit it. Committing hands documents to sink strictly in input
// order: a chunk that completes early waits in a ring until the ones before
// it are committed, and whichever worker completes the next chunk in order
// writes it and every waiting chunk after it. There is no separate reader or
// writer goroutine to compete with the encoders for cores, so on a busy host
// no encoder waits for a writer that is not scheduled. A fixed pool of chunks
// bounds memory. Errors surface in input order too, so the first bad line in
// the input is the one reported, whatever the scheduling.
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
	src := &source{inputs: inputs, chunkBytes: chunkBytes}
	defer src.close()
	com := &committer{sink: sink, ring: make([]*chunk, poolSize), free: free, chunkBytes: chunkBytes, progress: opt.Progress}

	var readMu sync.Mutex
	var seq int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var p jsonl.Decoder
			for {
				var c *chunk
				select {
				case c = <-free:
				case <-ctx.Done():
					return
				}
				readMu.Lock()
				more := ctx.Err() == nil && src.next(c)
				c.seq = seq
				if more {
					seq++
				}
				readMu.Unlock()
				if !more {
					free <- c
					return
				}
				encodeChunk(&p, c, opt)
				if !com.commit(c) {
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if com.err != nil {
		return com.err
	}
	// Workers also stop early when the caller cancels.
	return ctx.Err()
}

// committer writes encoded chunks to the sink in input order.
type committer struct {
	mu         sync.Mutex
	sink       sink
	ring       []*chunk // chunks done but not yet committed, at seq % len(ring)
	next       int64    // seq of the next chunk to commit
	docs       int64
	inBytes    int64
	err        error
	free       chan<- *chunk
	chunkBytes int
	progress   func(documents, inputBytes int64)
}

// commit takes a finished chunk and writes every chunk that is now next in
// order. It returns false once the run has failed. Chunks in flight never
// outnumber the pool, which is the ring's size, so slots never collide.
func (m *committer) commit(c *chunk) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return false
	}
	n := int64(len(m.ring))
	m.ring[c.seq%n] = c
	for {
		c := m.ring[m.next%n]
		if c == nil || c.seq != m.next {
			return true
		}
		m.ring[m.next%n] = nil
		m.next++
		start := 0
		for _, end := range c.ends {
			if err := m.sink(m.docs, c.tokens[start:end]); err != nil {
				m.err = err
				return false
			}
			m.docs++
			start = end
		}
		if c.err != nil {
			m.err = c.err
			return false
		}
		m.inBytes += int64(len(c.data))
		if m.progress != nil && len(c.data) > 0 {
			m.progress(m.docs, m.inBytes)
		}
		recycle(c, m.chunkBytes)
		m.free <- c
	}
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

// source cuts the inputs, one after the other, into chunks of whole lines.
// It is used under the caller's lock.
type source struct {
	inputs     []string
	chunkBytes int
	i          int // next input to open
	f          *os.File
	path       string
	line       int64  // 1-based number of the next line in f
	carry      []byte // a partial line left over from the previous chunk
	eof        bool
	done       bool // every input read, or an error handed out
}

func (s *source) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// next fills c with the next run of whole lines and reports whether it did;
// false means there is no more input. A failure to open or read is handed
// out once, as a chunk that carries only the error, so it is reported after
// the chunks before it.
func (s *source) next(c *chunk) bool {
	c.data, c.lines, c.err = c.data[:0], 0, nil
	for {
		if s.done {
			return false
		}
		if s.f == nil {
			if s.i == len(s.inputs) {
				s.done = true
				return false
			}
			s.path = s.inputs[s.i]
			s.i++
			f, err := os.Open(s.path)
			if err != nil {
				s.done = true
				c.file, c.err = s.path, fmt.Errorf("encode: %w", err)
				return true
			}
			s.f, s.line, s.eof, s.carry = f, 1, false, s.carry[:0]
			// An empty file still yields one (empty) chunk, as any file does.
		} else if s.eof && len(s.carry) == 0 {
			s.close()
			continue
		}
		return s.fill(c)
	}
}

func (s *source) fill(c *chunk) bool {
	c.file, c.firstLine = s.path, s.line
	c.data = append(c.data, s.carry...)
	s.carry = s.carry[:0]
	// Fill to chunkBytes, then keep reading until the chunk holds at least
	// one whole line or the file ends. The carry never holds a newline, so
	// only fresh bytes need scanning.
	hasNewline := false
	for !s.eof && (len(c.data) < s.chunkBytes || !hasNewline) {
		// Read at least minRead bytes at a time, and no more than the
		// chunk still wants unless a line is longer than the chunk.
		want := max(s.chunkBytes-len(c.data), minRead)
		if cap(c.data)-len(c.data) < want {
			c.data = slices.Grow(c.data, want)
		}
		n, err := s.f.Read(c.data[len(c.data) : len(c.data)+want])
		if !hasNewline && bytes.IndexByte(c.data[len(c.data):len(c.data)+n], '\n') >= 0 {
			hasNewline = true
		}
		c.data = c.data[:len(c.data)+n]
		if errors.Is(err, io.EOF) {
			s.eof = true
		} else if err != nil {
			s.done = true
			c.data, c.err = c.data[:0], fmt.Errorf("encode: read %s: %w", s.path, err)
			return true
		}
	}
	if !s.eof {
		cut := bytes.LastIndexByte(c.data, '\n') + 1
		s.carry = append(s.carry, c.data[cut:]...)
		c.data = c.data[:cut]
	}
	c.lines = bytes.Count(c.data, []byte{'\n'})
	if len(c.data) > 0 && c.data[len(c.data)-1] != '\n' {
		c.lines++ // the file's last line has no newline
	}
	s.line += int64(c.lines)
	return true
}

// encodeChunk parses and encodes every line of c; on a bad line it records
// the error, naming file and line, and stops.
func encodeChunk(p *jsonl.Decoder, c *chunk, opt Options) {
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
		text, err := p.Text(data[:end])
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
