package gptorder

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"

	"github.com/rivalbench/rival/indexed"
	"github.com/zeebo/blake3"
)

// Tokens appends the tokens of the sample at place i of training order to
// dst, as GPTDataset._query_document_sample_shuffle_indices reads them: the
// shuffle index picks a row of the sample index, whose two boundaries span
// one or more sequences of the document index.
func (x *Indices) Tokens(ds *indexed.Dataset, i int64, dst []int32) ([]int32, error) {
	if i < 0 || i >= int64(len(x.Shuffle)) {
		return dst, fmt.Errorf("gptorder: sample %d outside the %d samples built", i, len(x.Shuffle))
	}
	row := x.Shuffle[i]
	begDoc, begOff := x.Sample[2*row], x.Sample[2*row+1]
	endDoc, endOff := x.Sample[2*row+2], x.Sample[2*row+3]
	extra := x.order.extra()
	start := len(dst)
	for d := begDoc; d <= endDoc; d++ {
		seq := int(x.Document[d])
		if seq >= ds.Sequences() {
			return dst, fmt.Errorf("gptorder: document index names sequence %d; %s holds %d", seq, ds.Prefix(), ds.Sequences())
		}
		lo, hi := int64(0), int64(ds.Length(seq))
		if d == begDoc {
			lo = begOff
		}
		if d == endDoc {
			hi = endOff + extra
		}
		var err error
		all, err := ds.Sequence(seq)
		if err != nil {
			return dst, err
		}
		if lo < 0 || hi > int64(len(all)) || lo > hi {
			return dst, fmt.Errorf("gptorder: sample %d reads tokens [%d, %d) of sequence %d, which holds %d", i, lo, hi, seq, len(all))
		}
		dst = append(dst, all[lo:hi]...)
	}
	if got, want := len(dst)-start, x.order.SampleLen(); got != want {
		return dst, fmt.Errorf("gptorder: sample %d holds %d tokens, want %d", i, got, want)
	}
	return dst, nil
}

// Digest is BLAKE3 over the first n samples in training order, each sample's
// tokens as little-endian int64 (the dtype GPTDataset hands to the model), in
// the order Megatron's MegatronPretrainingSampler consumes them: global batch
// by global batch, within one micro-batch step data-parallel rank by rank.
// The same bytes are what `b3sum` prints for a dump of those samples.
func (x *Indices) Digest(ds *indexed.Dataset, n int64) (string, error) {
	return x.digest(ds, n, blake3.New())
}

// SHA256 is SHA-256 over the same bytes as Digest: what preflights print, since every framework's
// image has Python's hashlib and not every one has BLAKE3.
func (x *Indices) SHA256(ds *indexed.Dataset, n int64) (string, error) {
	return x.digest(ds, n, sha256.New())
}

func (x *Indices) digest(ds *indexed.Dataset, n int64, h hash.Hash) (string, error) {
	if n > int64(len(x.Shuffle)) {
		return "", fmt.Errorf("gptorder: digest of %d samples asked; %d were built", n, len(x.Shuffle))
	}
	var tok []int32
	buf := make([]byte, 0, 8*x.order.SampleLen())
	for i := range n {
		var err error
		if tok, err = x.Tokens(ds, i, tok[:0]); err != nil {
			return "", err
		}
		buf = buf[:0]
		for _, t := range tok {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(int64(t)))
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
