package indexed

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
)

// bufferSize is the size of the writer's buffers on the .bin and .idx files.
const bufferSize = 1 << 20

// OnPublish, when set, is told of each file a Writer renames into place,
// with the file's identity taken before the rename, so a caller can later
// tell its own published file from one another process put there.
var OnPublish func(path string, fi os.FileInfo)

// tempPattern is the os.CreateTemp pattern of a temporary file that becomes
// base: ".BASE.tmp-rival~<pid>~<random>", the form every Rival writer uses
// (cache.TempPattern), so a sweep of leftovers recognises it and no user
// file is mistaken for one.
func tempPattern(base string) string {
	return "." + base + ".tmp-rival~" + strconv.Itoa(os.Getpid()) + "~*"
}

// Writer builds one dataset the way Megatron's IndexedDatasetBuilder does:
// tokens go straight to .bin, and the index (sequence lengths, document
// boundaries) is spilled to temporary files rather than held in memory, so
// memory use does not grow with the corpus. Nothing appears under the final
// names until Finalize succeeds. A Writer is not safe for concurrent use.
type Writer struct {
	prefix string
	dtype  DType

	bin, idx, docs          *os.File
	binBuf, idxBuf, docsBuf *bufio.Writer

	sequences int64 // sequence lengths written to idx so far
	documents int64 // document-index entries written after the leading 0
	tokens    int64
	open      int64 // tokens appended to the sequence AppendTokens is building
	scratch   []byte
	err       error // sticky: once set, every call returns it
	closed    bool
}

// NewWriter starts a dataset at prefix (prefix.bin and prefix.idx) with the
// given token dtype. The files are written under temporary names in the same
// directory; call Finalize to publish them or Abort to discard them.
func NewWriter(prefix string, dtype DType) (*Writer, error) {
	if !dtype.IsInteger() {
		return nil, fmt.Errorf("new dataset %s: dtype %s cannot hold token ids; use uint16 or int32", prefix, dtype)
	}
	dir, base := filepath.Split(prefix)
	if dir == "" {
		dir = "."
	}
	w := &Writer{prefix: prefix, dtype: dtype}
	var err error
	if w.bin, err = os.CreateTemp(dir, tempPattern(base+".bin")); err != nil {
		return nil, fmt.Errorf("new dataset %s: %w", prefix, err)
	}
	if w.idx, err = os.CreateTemp(dir, tempPattern(base+".idx")); err != nil {
		w.removeTemps()
		return nil, fmt.Errorf("new dataset %s: %w", prefix, err)
	}
	if w.docs, err = os.CreateTemp(dir, tempPattern(base+".docs")); err != nil {
		w.removeTemps()
		return nil, fmt.Errorf("new dataset %s: %w", prefix, err)
	}
	w.binBuf = bufio.NewWriterSize(&writebackFile{f: w.bin}, bufferSize)
	w.idxBuf = bufio.NewWriterSize(w.idx, bufferSize)
	w.docsBuf = bufio.NewWriterSize(w.docs, 64<<10)
	// The header's counts are patched in by Finalize; reserve its bytes so the
	// sequence lengths can stream to their final offset.
	if _, err := w.idxBuf.Write(make([]byte, headerSize)); err != nil {
		w.removeTemps()
		return nil, fmt.Errorf("new dataset %s: %w", prefix, err)
	}
	return w, nil
}

// DType is the token dtype the writer stores.
func (w *Writer) DType() DType { return w.dtype }

// Sequences is the number of sequences added so far.
func (w *Writer) Sequences() int64 { return w.sequences }

// Documents is the number of documents ended so far.
func (w *Writer) Documents() int64 { return w.documents }

// Tokens is the number of tokens written so far.
func (w *Writer) Tokens() int64 { return w.tokens }

func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("dataset %s: writer already finalized or aborted", w.prefix)
	}
	return nil
}

// fail records err so later calls report it too.
func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

// AddSequence appends one sequence to the current document (Megatron's
// add_item). Every id must fit the dtype; an id that does not is an error
// naming it, and the writer refuses further input.
func (w *Writer) AddSequence(tokens []int32) error {
	if w.open > 0 {
		return w.fail(fmt.Errorf("dataset %s: AddSequence while a sequence built by AppendTokens is open; call EndSequence first", w.prefix))
	}
	if err := w.AppendTokens(tokens); err != nil {
		return err
	}
	return w.EndSequence()
}

// AppendTokens adds tokens to the sequence being built, which EndSequence
// records: a sequence too long to hold (one huge document) streams to .bin
// as its tokens come. Every id must fit the dtype, as in AddSequence.
func (w *Writer) AppendTokens(tokens []int32) error {
	if err := w.usable(); err != nil {
		return err
	}
	if w.open+int64(len(tokens)) > math.MaxInt32 {
		return w.fail(fmt.Errorf("dataset %s: sequence %d has %d tokens, more than an .idx length (int32) can record", w.prefix, w.sequences, w.open+int64(len(tokens))))
	}
	lo, hi := w.dtype.Range()
	for i, t := range tokens {
		if int64(t) < lo || int64(t) > hi {
			return w.fail(fmt.Errorf("dataset %s: token id %d at position %d of sequence %d does not fit dtype %s (%d..%d); pick the dtype from the vocabulary size with DTypeForVocab", w.prefix, t, w.open+int64(i), w.sequences, w.dtype, lo, hi))
		}
	}
	w.scratch = appendTokens(w.scratch[:0], w.dtype, tokens)
	if _, err := w.binBuf.Write(w.scratch); err != nil {
		return w.fail(fmt.Errorf("write %s: %w", w.bin.Name(), err))
	}
	w.open += int64(len(tokens))
	w.tokens += int64(len(tokens))
	return nil
}

// EndSequence records the sequence AppendTokens built, empty or not (Megatron
// records whatever add_item is given).
func (w *Writer) EndSequence() error {
	if err := w.usable(); err != nil {
		return err
	}
	var l [4]byte
	binary.LittleEndian.PutUint32(l[:], uint32(w.open))
	if _, err := w.idxBuf.Write(l[:]); err != nil {
		return w.fail(fmt.Errorf("write %s: %w", w.idx.Name(), err))
	}
	w.sequences++
	w.open = 0
	return nil
}

// EndDocument closes the current document (Megatron's end_document): it
// records the number of sequences so far as the next document index.
func (w *Writer) EndDocument() error {
	if err := w.usable(); err != nil {
		return err
	}
	if w.open > 0 {
		return w.fail(fmt.Errorf("dataset %s: EndDocument while a sequence built by AppendTokens is open; call EndSequence first", w.prefix))
	}
	var d [8]byte
	binary.LittleEndian.PutUint64(d[:], uint64(w.sequences))
	if _, err := w.docsBuf.Write(d[:]); err != nil {
		return w.fail(fmt.Errorf("write %s: %w", w.docs.Name(), err))
	}
	w.documents++
	return nil
}

// AddDocument adds one document the way tools/preprocess_data.py does with
// one partition and no sentence splitting: a non-empty document becomes one
// sequence, an empty one adds no sequence; either way the document index
// gains an entry. The caller appends the end-of-document id beforehand.
func (w *Writer) AddDocument(tokens []int32) error {
	if len(tokens) > 0 {
		if err := w.AddSequence(tokens); err != nil {
			return err
		}
	}
	return w.EndDocument()
}

// appendDataset concatenates a whole dataset (Megatron's add_index): its
// tokens, its sequence lengths, and its document indices after the leading 0,
// shifted by the sequences already written.
func (w *Writer) appendDataset(d *Dataset) error {
	if err := w.usable(); err != nil {
		return err
	}
	if d.dtype != w.dtype {
		return w.fail(fmt.Errorf("merge into %s: %s has dtype %s, the merge writes %s", w.prefix, d.idxPath, d.dtype, w.dtype))
	}
	if _, err := w.binBuf.Write(d.bin); err != nil {
		return w.fail(fmt.Errorf("write %s: %w", w.bin.Name(), err))
	}
	if _, err := w.idxBuf.Write(d.idx[d.lengthsOff:d.pointersOff]); err != nil {
		return w.fail(fmt.Errorf("write %s: %w", w.idx.Name(), err))
	}
	var b [8]byte
	for j := 1; j < d.docCount; j++ {
		binary.LittleEndian.PutUint64(b[:], uint64(w.sequences+d.DocumentIndex(j)))
		if _, err := w.docsBuf.Write(b[:]); err != nil {
			return w.fail(fmt.Errorf("write %s: %w", w.docs.Name(), err))
		}
	}
	w.sequences += int64(d.seqCount)
	w.documents += int64(d.docCount - 1)
	w.tokens += int64(len(d.bin) / d.dtype.Size())
	return nil
}

// Finalize writes the index and publishes the pair: .bin is renamed into
// place first and .idx last, after any older .idx at the prefix has been
// removed, so an interruption at any point leaves either the old pair, a
// lone .bin, or the complete new pair — never a mismatched pair.
func (w *Writer) Finalize() error {
	if err := w.usable(); err != nil {
		w.Abort()
		return err
	}
	if w.open > 0 {
		w.fail(fmt.Errorf("dataset %s: Finalize while a sequence built by AppendTokens is open; call EndSequence first", w.prefix))
		w.Abort()
		return w.err
	}
	if err := w.finalize(); err != nil {
		w.fail(err)
		w.Abort()
		return err
	}
	return nil
}

func (w *Writer) finalize() error {
	w.closed = true
	if err := w.binBuf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.bin.Name(), err)
	}
	if err := w.bin.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.bin.Name(), err)
	}
	if err := w.idxBuf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.idx.Name(), err)
	}
	if err := w.docsBuf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.docs.Name(), err)
	}

	// Sequence pointers: byte offsets into .bin, computed from the lengths
	// already on disk (Megatron's _sequence_pointers).
	lengths := bufio.NewReaderSize(io.NewSectionReader(w.idx, headerSize, 4*w.sequences), bufferSize)
	size := int64(w.dtype.Size())
	var ptr int64
	var b [8]byte
	for i := int64(0); i < w.sequences; i++ {
		if _, err := io.ReadFull(lengths, b[:4]); err != nil {
			return fmt.Errorf("read back lengths from %s: %w", w.idx.Name(), err)
		}
		length := int64(binary.LittleEndian.Uint32(b[:4]))
		binary.LittleEndian.PutUint64(b[:], uint64(ptr))
		if _, err := w.idxBuf.Write(b[:]); err != nil {
			return fmt.Errorf("write %s: %w", w.idx.Name(), err)
		}
		ptr += length * size
	}

	// Document indices: the leading 0, then one entry per ended document.
	binary.LittleEndian.PutUint64(b[:], 0)
	if _, err := w.idxBuf.Write(b[:]); err != nil {
		return fmt.Errorf("write %s: %w", w.idx.Name(), err)
	}
	if _, err := w.docs.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read back %s: %w", w.docs.Name(), err)
	}
	if _, err := io.Copy(w.idxBuf, bufio.NewReaderSize(w.docs, 64<<10)); err != nil {
		return fmt.Errorf("copy document indices into %s: %w", w.idx.Name(), err)
	}
	if err := w.idxBuf.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", w.idx.Name(), err)
	}

	header := make([]byte, 0, headerSize)
	header = append(header, magic...)
	header = binary.LittleEndian.AppendUint64(header, version)
	header = append(header, byte(w.dtype))
	header = binary.LittleEndian.AppendUint64(header, uint64(w.sequences))
	header = binary.LittleEndian.AppendUint64(header, uint64(w.documents+1))
	if _, err := w.idx.WriteAt(header, 0); err != nil {
		return fmt.Errorf("write header of %s: %w", w.idx.Name(), err)
	}
	if err := w.idx.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.idx.Name(), err)
	}

	// Temporary files are created 0600; the published pair is ordinary data.
	for _, f := range []*os.File{w.bin, w.idx} {
		if err := f.Chmod(0o644); err != nil {
			return fmt.Errorf("chmod %s: %w", f.Name(), err)
		}
	}
	binPath, idxPath := BinPath(w.prefix), IdxPath(w.prefix)
	binInfo, err := w.bin.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", w.bin.Name(), err)
	}
	idxInfo, err := w.idx.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", w.idx.Name(), err)
	}
	if err := os.Remove(idxPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove old %s: %w", idxPath, err)
	}
	if err := os.Rename(w.bin.Name(), binPath); err != nil {
		return fmt.Errorf("publish %s: %w", binPath, err)
	}
	if err := os.Rename(w.idx.Name(), idxPath); err != nil {
		return fmt.Errorf("publish %s: %w", idxPath, err)
	}
	if OnPublish != nil {
		OnPublish(binPath, binInfo)
		OnPublish(idxPath, idxInfo)
	}
	w.bin.Close()
	w.idx.Close()
	w.bin, w.idx = nil, nil
	w.removeTemps()
	return syncDir(filepath.Dir(w.prefix))
}

// Abort discards everything written so far. It is safe to call after
// Finalize (it then does nothing) and more than once.
func (w *Writer) Abort() {
	w.closed = true
	w.removeTemps()
}

func (w *Writer) removeTemps() {
	for _, f := range []**os.File{&w.bin, &w.idx, &w.docs} {
		if *f != nil {
			(*f).Close()
			os.Remove((*f).Name())
			*f = nil
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// appendTokens encodes ids little-endian in the dtype's width. The caller has
// checked the range.
func appendTokens(dst []byte, dtype DType, tokens []int32) []byte {
	n := len(tokens) * dtype.Size()
	if cap(dst)-len(dst) < n {
		grown := make([]byte, len(dst), len(dst)+n)
		copy(grown, dst)
		dst = grown
	}
	out := dst[len(dst) : len(dst)+n]
	switch dtype {
	case Uint8, Int8:
		for i, t := range tokens {
			out[i] = byte(t)
		}
	case Uint16, Int16:
		for i, t := range tokens {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(t))
		}
	case Int32:
		for i, t := range tokens {
			binary.LittleEndian.PutUint32(out[4*i:], uint32(t))
		}
	case Int64:
		for i, t := range tokens {
			binary.LittleEndian.PutUint64(out[8*i:], uint64(int64(t)))
		}
	}
	return dst[:len(dst)+n]
}
