package encode

import (
	"bufio"
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
	"github.com/rivalbench/rival/safefile"
)

// AppendEncoder appends the token ids of text (special tokens included, as
// the model's tokenizer adds them) to dst and returns the extended slice.
// Workers call it concurrently, so it must be safe for concurrent use.
// text is a view into a reused buffer, valid only during the call: an
// encoder that keeps any part of it (a cache key, say) must copy it with
// strings.Clone. This spares a copy and an allocation of every document.
type AppendEncoder func(dst []int32, text string) []int32

// DocumentEncoder encodes one document handed over in pieces, in order, with
// the ids the AppendEncoder gives the whole text: Write appends the ids that
// can no longer change, Close the rest. tokenizer.Stream is one.
type DocumentEncoder interface {
	Write(dst []int32, text []byte) ([]int32, error)
	Close(dst []int32) ([]int32, error)
}

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
	// Stream, when set, starts a DocumentEncoder for one document. A line
	// of LongLine bytes or more is then not read whole: its "text" is
	// decoded as it is read (jsonl.StreamText), encoded in pieces, and its
	// tokens written as they come, so memory does not grow with a
	// document. Without Stream such a line is read and encoded whole.
	Stream func() (DocumentEncoder, error)
	// LongLine is where a line counts as long; 0 means 4·ChunkBytes.
	LongLine int
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
	long      bool // data is the start of one long line, to be streamed
	data      []byte
	tokens    []int32
	ends      []int // per line, the end of its tokens in tokens
	err       error // a read or parse error; ends holds the lines before it
}

// sink receives encoded documents in input order; doc counts from 0 over
// all inputs. A streamed document comes in parts: each with last false,
// then one with last true (its tokens may be empty); a whole document comes
// as one part with whole true.
type sink func(doc int64, tokens []int32, whole, last bool) error

// writerSink adds documents to w and counts them in st.
func writerSink(w *indexed.Writer, st *Stats) func(tokens []int32, whole, last bool) error {
	var n int64 // tokens of the streamed document so far
	return func(tokens []int32, whole, last bool) error {
		if whole {
			count(st, len(tokens))
			return w.AddDocument(tokens)
		}
		if len(tokens) > 0 {
			if err := w.AppendTokens(tokens); err != nil {
				return err
			}
			n += int64(len(tokens))
		}
		if !last {
			return nil
		}
		defer func() { n = 0 }()
		count(st, int(n))
		if n > 0 {
			if err := w.EndSequence(); err != nil {
				return err
			}
		}
		return w.EndDocument()
	}
}

// File encodes every document of inputs, in order, into one dataset at
// outPrefix (outPrefix.bin and outPrefix.idx). On any error nothing is
// published.
func File(ctx context.Context, inputs []string, outPrefix string, opt Options) (Stats, error) {
	w, err := indexed.NewWriter(outPrefix, opt.DType)
	if err != nil {
		return Stats{}, err
	}
	var st Stats
	add := writerSink(w, &st)
	err = run(ctx, inputs, opt, func(_ int64, tokens []int32, whole, last bool) error {
		return add(tokens, whole, last)
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
	addTrain, addTest := writerSink(tw, &train), writerSink(vw, &test)
	err = run(ctx, inputs, opt, func(doc int64, tokens []int32, whole, last bool) error {
		if doc < k {
			return addTrain(tokens, whole, last)
		}
		return addTest(tokens, whole, last)
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

func count(st *Stats, tokens int) {
	st.Documents++
	if tokens == 0 {
		st.EmptyDocuments++
		return
	}
	st.Sequences++
	st.Tokens += int64(tokens)
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
	if opt.Stream != nil {
		src.longLine = opt.LongLine
		if src.longLine <= 0 {
			src.longLine = 4 * chunkBytes
		}
	}
	defer src.close()
	com := &committer{sink: sink, ring: make([]*chunk, poolSize), free: free, chunkBytes: chunkBytes, progress: opt.Progress}
	com.cond = sync.NewCond(&com.mu)

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
				if !more {
					readMu.Unlock()
					free <- c
					return
				}
				if c.long {
					// Read and encode the line now, still holding the
					// input: nothing after it can be read before its end.
					ok := com.stream(ctx, c, src, opt)
					readMu.Unlock()
					recycle(c, chunkBytes)
					free <- c
					if !ok {
						cancel()
						return
					}
					continue
				}
				readMu.Unlock()
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
	cond       *sync.Cond // signalled whenever next or err changes
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
	defer m.cond.Broadcast()
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
			if err := m.sink(m.docs, c.tokens[start:end], true, true); err != nil {
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

// streamRead is how much of a long line is read at a time.
const streamRead = 1 << 20

// progressEvery is how often, in input bytes, a streamed line reports
// progress.
const progressEvery = 16 << 20

// stream encodes the long line c begins, once every chunk before it is
// committed, writing its tokens to the sink as they come; the rest of the
// line is read from src, which the caller holds. It returns false once the
// run has failed.
func (m *committer) stream(ctx context.Context, c *chunk, src *source, opt Options) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	defer m.cond.Broadcast()
	for m.next != c.seq && m.err == nil {
		m.cond.Wait()
	}
	if m.err != nil {
		return false
	}
	if err := ctx.Err(); err != nil {
		m.err = err
		return false
	}
	fail := func(err error) bool {
		m.err = fmt.Errorf("encode: %s line %d (document %d of the input): %w", c.file, c.firstLine, m.docs+1, err)
		return false
	}
	enc, err := opt.Stream()
	if err != nil {
		return fail(err)
	}
	var tokens []int32
	var total, reported int64
	var readErr error
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(c.data), src.rest(&readErr)), streamRead)
	n, err := jsonl.StreamText(br, func(piece []byte) error {
		var err error
		if tokens, err = enc.Write(tokens[:0], piece); err != nil {
			return err
		}
		total += int64(len(tokens))
		if err := m.sink(m.docs, tokens, false, false); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return nil
	}, func(consumed int64) {
		if m.progress != nil && consumed-reported >= progressEvery {
			reported = consumed
			m.progress(m.docs, m.inBytes+consumed)
		}
	})
	if readErr != nil {
		err = fmt.Errorf("read: %w", readErr)
	}
	if err == nil {
		tokens, err = enc.Close(tokens[:0])
	}
	if err != nil {
		if ctx.Err() != nil {
			m.err = ctx.Err()
			return false
		}
		return fail(err)
	}
	if total+int64(len(tokens)) > 0 {
		tokens = append(tokens, opt.EOD)
	}
	if err := m.sink(m.docs, tokens, false, true); err != nil {
		m.err = err
		return false
	}
	src.afterLine(br)
	m.docs++
	m.next++
	m.inBytes += n
	if m.progress != nil {
		m.progress(m.docs, m.inBytes)
	}
	return true
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
	longLine   int // 0: no line is streamed
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
	c.data, c.lines, c.err, c.long = c.data[:0], 0, nil, false
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
			f, _, err := safefile.Open(s.path)
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

// rest reads the open input from where the last chunk stopped, noting its end.
func (s *source) rest(readErr *error) io.Reader {
	if s.eof {
		return eofReader{}
	}
	return &noteEOF{r: s.f, eof: &s.eof, err: readErr}
}

// afterLine takes back what br read past the end of the streamed line.
func (s *source) afterLine(br *bufio.Reader) {
	b, _ := br.Peek(br.Buffered())
	s.carry = append(s.carry[:0], b...)
	s.line++
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// noteEOF records that r ended, or the error that stopped it (the JSON
// reader sees either as the end of the line).
type noteEOF struct {
	r   io.Reader
	eof *bool
	err *error
}

func (n *noteEOF) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if err != nil {
		*n.eof = true
		if !errors.Is(err, io.EOF) {
			*n.err = err
		}
	}
	return k, err
}

func (s *source) fill(c *chunk) bool {
	c.file, c.firstLine, c.long = s.path, s.line, false
	c.data = append(c.data, s.carry...)
	s.carry = s.carry[:0]
	// Fill to chunkBytes, then keep reading until the chunk holds at least
	// one whole line or the file ends. The carry never holds a newline, so
	// only fresh bytes need scanning.
	hasNewline := false
	for !s.eof && (len(c.data) < s.chunkBytes || !hasNewline) {
		if !hasNewline && s.longLine > 0 && len(c.data) >= s.longLine {
			// The chunk holds only the start of one line (the carry
			// never holds a newline): hand it out to be streamed.
			c.long, c.lines = true, 1
			return true
		}
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
