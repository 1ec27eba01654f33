package indexed

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"sort"

	"github.com/rivalbench/rival/safefile"
	"golang.org/x/sys/unix"
)

// Dataset is an opened, validated dataset. Both files are memory-mapped, so
// opening costs one pass over the index and nothing over the tokens.
type Dataset struct {
	prefix           string
	idxPath, binPath string
	idx, bin         []byte // mapped file contents; nil when a file is empty
	idxMapped        bool
	binMapped        bool

	dtype                            DType
	seqCount, docCount               int
	lengthsOff, pointersOff, docsOff int
}

// Open maps prefix.idx and prefix.bin and checks every invariant of the
// format: header, sizes against file lengths, sequence pointers against
// lengths and dtype, and document indices. Each violation is reported with
// the file and the field or index at fault.
func Open(prefix string) (*Dataset, error) {
	d := &Dataset{prefix: prefix, idxPath: IdxPath(prefix), binPath: BinPath(prefix)}
	var err error
	if d.idx, d.idxMapped, err = mapFile(d.idxPath); err != nil {
		return nil, err
	}
	if d.bin, d.binMapped, err = mapFile(d.binPath); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.validate(); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openBytes validates in-memory contents; the fuzz target uses it so it can
// exercise the validator without touching the disk.
func openBytes(idx, bin []byte) (*Dataset, error) {
	d := &Dataset{prefix: "mem", idxPath: "mem.idx", binPath: "mem.bin", idx: idx, bin: bin}
	if err := d.validate(); err != nil {
		return nil, err
	}
	return d, nil
}

func mapFile(path string) ([]byte, bool, error) {
	// A FIFO or device in the dataset's place is refused, not waited on.
	f, _, err := safefile.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("open dataset: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("open dataset: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, false, fmt.Errorf("open dataset: %s is not a regular file", path)
	}
	if st.Size() == 0 {
		return nil, false, nil
	}
	if st.Size() > math.MaxInt {
		return nil, false, fmt.Errorf("open dataset: %s is too large to map (%d bytes)", path, st.Size())
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, false, fmt.Errorf("map %s: %w", path, err)
	}
	return b, true, nil
}

// Close unmaps both files. Slices returned by SequenceBytes are invalid
// afterwards.
func (d *Dataset) Close() error {
	var first error
	if d.idxMapped {
		if err := unix.Munmap(d.idx); err != nil {
			first = fmt.Errorf("unmap %s: %w", d.idxPath, err)
		}
		d.idxMapped = false
	}
	if d.binMapped {
		if err := unix.Munmap(d.bin); err != nil && first == nil {
			first = fmt.Errorf("unmap %s: %w", d.binPath, err)
		}
		d.binMapped = false
	}
	d.idx, d.bin = nil, nil
	return first
}

func (d *Dataset) validate() error {
	idx := d.idx
	if len(idx) < headerSize {
		return fmt.Errorf("%s: truncated header: %d bytes, the header alone needs %d", d.idxPath, len(idx), headerSize)
	}
	if !bytes.Equal(idx[:9], magic) {
		return fmt.Errorf("%s: magic is %q, want %q: not a Megatron indexed dataset index", d.idxPath, idx[:9], magic)
	}
	if v := binary.LittleEndian.Uint64(idx[9:]); v != version {
		return fmt.Errorf("%s: version is %d, only version %d is supported", d.idxPath, v, version)
	}
	d.dtype = DType(idx[17])
	if !d.dtype.Valid() {
		return fmt.Errorf("%s: dtype code is %d, want one of 1..8 (uint8 1, int8 2, int16 3, int32 4, int64 5, float64 6, float32 7, uint16 8)", d.idxPath, idx[17])
	}
	s := binary.LittleEndian.Uint64(idx[18:])
	dc := binary.LittleEndian.Uint64(idx[26:])
	// Bound the counts by the file size before multiplying, so absurd headers
	// cannot overflow the size computation.
	room := uint64(len(idx) - headerSize)
	if s > room/12 || dc > room/8 || 12*s+8*dc > room {
		return fmt.Errorf("%s: truncated: header says %d sequences and %d document indices, which need %s bytes, the file has %d", d.idxPath, s, dc, needBytes(s, dc), len(idx))
	}
	if want := headerSize + 12*s + 8*dc; uint64(len(idx)) != want {
		return fmt.Errorf("%s: %d trailing bytes after the document indices (header says %d sequences and %d document indices, %d bytes); per-sequence modes of multimodal datasets are not supported", d.idxPath, uint64(len(idx))-want, s, dc, want)
	}
	if dc == 0 {
		return fmt.Errorf("%s: document count is 0; a valid index has at least the leading document index 0", d.idxPath)
	}
	d.seqCount, d.docCount = int(s), int(dc)
	d.lengthsOff = headerSize
	d.pointersOff = d.lengthsOff + 4*d.seqCount
	d.docsOff = d.pointersOff + 8*d.seqCount

	size := int64(d.dtype.Size())
	binLen := int64(len(d.bin))
	var want int64
	for i := 0; i < d.seqCount; i++ {
		l := d.Length(i)
		if l < 0 {
			return fmt.Errorf("%s: sequence_lengths[%d] is %d, lengths cannot be negative", d.idxPath, i, l)
		}
		p := d.Pointer(i)
		if i > 0 && p < d.Pointer(i-1) {
			return fmt.Errorf("%s: sequence_pointers[%d] = %d is below sequence_pointers[%d] = %d; pointers must increase", d.idxPath, i, p, i-1, d.Pointer(i-1))
		}
		if p != want {
			return fmt.Errorf("%s: sequence_pointers[%d] = %d, want %d (the previous pointer plus its length × %d-byte %s)", d.idxPath, i, p, want, size, d.dtype)
		}
		want += int64(l) * size
		if want > binLen {
			return fmt.Errorf("%s: sequence %d ends at byte %d, past the end of %s (%d bytes): pointers past the end or a truncated .bin", d.idxPath, i, want, d.binPath, binLen)
		}
	}
	if want != binLen {
		return fmt.Errorf("%s: %d bytes, but the index accounts for %d: trailing data or a mismatched .idx", d.binPath, binLen, want)
	}
	if first := d.DocumentIndex(0); first != 0 {
		return fmt.Errorf("%s: document_indices[0] is %d, want 0", d.idxPath, first)
	}
	for j := 1; j < d.docCount; j++ {
		v, prev := d.DocumentIndex(j), d.DocumentIndex(j-1)
		if v < prev {
			return fmt.Errorf("%s: document_indices[%d] = %d is below document_indices[%d] = %d; document indices must not decrease", d.idxPath, j, v, j-1, prev)
		}
		if v > int64(d.seqCount) {
			return fmt.Errorf("%s: document_indices[%d] = %d is past the sequence count %d", d.idxPath, j, v, d.seqCount)
		}
	}
	if last := d.DocumentIndex(d.docCount - 1); last != int64(d.seqCount) {
		return fmt.Errorf("%s: document_indices[%d] (the last) is %d, want the sequence count %d", d.idxPath, d.docCount-1, last, d.seqCount)
	}
	return nil
}

// needBytes is headerSize + 12·s + 8·dc, computed without overflow.
func needBytes(s, dc uint64) string {
	n := new(big.Int).Mul(big.NewInt(12), new(big.Int).SetUint64(s))
	n.Add(n, new(big.Int).Mul(big.NewInt(8), new(big.Int).SetUint64(dc)))
	return n.Add(n, big.NewInt(headerSize)).String()
}

// Prefix is the path prefix the dataset was opened from.
func (d *Dataset) Prefix() string { return d.prefix }

// DType is the token dtype recorded in the header.
func (d *Dataset) DType() DType { return d.dtype }

// Sequences is the number of sequences (S).
func (d *Dataset) Sequences() int { return d.seqCount }

// Documents is the number of documents: the document-index count minus the
// leading 0.
func (d *Dataset) Documents() int { return d.docCount - 1 }

// DocumentIndexCount is the raw document-index count stored in the header.
func (d *Dataset) DocumentIndexCount() int { return d.docCount }

// Tokens is the total number of tokens in .bin.
func (d *Dataset) Tokens() int64 { return int64(len(d.bin) / d.dtype.Size()) }

// Length is sequence_lengths[i]. Like a slice index, i must be in
// [0, Sequences()).
func (d *Dataset) Length(i int) int32 {
	d.checkSeq(i)
	return int32(binary.LittleEndian.Uint32(d.idx[d.lengthsOff+4*i:]))
}

// Lengths is sequence_lengths, copied: what Megatron's sample index is built from (gptorder.Build).
func (d *Dataset) Lengths() []int32 {
	out := make([]int32, d.seqCount)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(d.idx[d.lengthsOff+4*i:]))
	}
	return out
}

// Pointer is sequence_pointers[i], the byte offset of sequence i in .bin.
func (d *Dataset) Pointer(i int) int64 {
	d.checkSeq(i)
	return int64(binary.LittleEndian.Uint64(d.idx[d.pointersOff+8*i:]))
}

// DocumentIndex is document_indices[j]: document j-1 ends before sequence
// DocumentIndex(j). j must be in [0, DocumentIndexCount()).
func (d *Dataset) DocumentIndex(j int) int64 {
	if j < 0 || j >= d.docCount {
		panic(fmt.Sprintf("indexed: document index %d out of range [0, %d)", j, d.docCount))
	}
	return int64(binary.LittleEndian.Uint64(d.idx[d.docsOff+8*j:]))
}

func (d *Dataset) checkSeq(i int) {
	if i < 0 || i >= d.seqCount {
		panic(fmt.Sprintf("indexed: sequence %d out of range [0, %d)", i, d.seqCount))
	}
}

// SequenceBytes is the raw little-endian bytes of sequence i, a view into
// the mapped .bin valid until Close.
func (d *Dataset) SequenceBytes(i int) []byte {
	p := d.Pointer(i)
	return d.bin[p : p+int64(d.Length(i))*int64(d.dtype.Size())]
}

// Sequence returns the token ids of sequence i.
func (d *Dataset) Sequence(i int) ([]int32, error) {
	return d.AppendSequence(nil, i)
}

// AppendSequence appends the token ids of sequence i to dst. It fails for
// an index out of range, a float dtype, or an int64 id beyond int32.
func (d *Dataset) AppendSequence(dst []int32, i int) ([]int32, error) {
	if i < 0 || i >= d.seqCount {
		return dst, fmt.Errorf("%s: sequence %d out of range [0, %d)", d.prefix, i, d.seqCount)
	}
	if !d.dtype.IsInteger() {
		return dst, fmt.Errorf("%s: dtype %s holds no token ids", d.idxPath, d.dtype)
	}
	b := d.SequenceBytes(i)
	size := d.dtype.Size()
	for k := 0; k < len(b); k += size {
		v := decode(d.dtype, b[k:])
		if v < math.MinInt32 || v > math.MaxInt32 {
			return dst, fmt.Errorf("%s: sequence %d position %d holds %d, outside the int32 token id range", d.binPath, i, k/size, v)
		}
		dst = append(dst, int32(v))
	}
	return dst, nil
}

func decode(dtype DType, b []byte) int64 {
	switch dtype {
	case Uint8:
		return int64(b[0])
	case Int8:
		return int64(int8(b[0]))
	case Uint16:
		return int64(binary.LittleEndian.Uint16(b))
	case Int16:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case Int32:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	case Int64:
		return int64(binary.LittleEndian.Uint64(b))
	}
	return 0
}

// CheckTokens scans every token (O(tokens), unlike Open) and fails on the
// first id outside [0, vocabSize), naming its sequence, position and byte
// offset.
func (d *Dataset) CheckTokens(vocabSize int) error {
	if !d.dtype.IsInteger() {
		return fmt.Errorf("%s: dtype %s holds no token ids", d.idxPath, d.dtype)
	}
	if vocabSize <= 0 {
		return fmt.Errorf("check tokens of %s: vocabulary size %d must be positive", d.prefix, vocabSize)
	}
	limit := int64(vocabSize)
	size := d.dtype.Size()
	bad := -1
	switch d.dtype {
	case Uint16:
		// The common case gets a tight loop.
		if limit <= math.MaxUint16 {
			l := uint16(limit)
			b := d.bin
			for k := 0; k+1 < len(b); k += 2 {
				if uint16(b[k])|uint16(b[k+1])<<8 >= l {
					bad = k
					break
				}
			}
		}
	case Int32:
		b := d.bin
		for k := 0; k+3 < len(b); k += 4 {
			if v := int64(int32(binary.LittleEndian.Uint32(b[k:]))); v < 0 || v >= limit {
				bad = k
				break
			}
		}
	default:
		for k := 0; k+size <= len(d.bin); k += size {
			if v := decode(d.dtype, d.bin[k:]); v < 0 || v >= limit {
				bad = k
				break
			}
		}
	}
	if bad < 0 {
		return nil
	}
	// Find the sequence holding the offending byte offset.
	off := int64(bad)
	i := sort.Search(d.seqCount, func(i int) bool { return d.Pointer(i) > off }) - 1
	return fmt.Errorf("%s: sequence %d position %d (byte %d) holds token id %d, not below the vocabulary size %d: the dataset was encoded with another tokenizer",
		d.binPath, i, (off-d.Pointer(i))/int64(size), off, decode(d.dtype, d.bin[bad:]), vocabSize)
}
