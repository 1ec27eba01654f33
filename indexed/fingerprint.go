package indexed

import (
	"fmt"

	"github.com/zeebo/blake3"
)

// Fingerprint identifies a dataset's exact bytes and summarizes it, so two
// hosts can show they train on identical data.
type Fingerprint struct {
	// Digest is BLAKE3 over the domain string "rival indexed fingerprint v1",
	// a zero byte, then the raw IdxBLAKE3 and BinBLAKE3 digests.
	Digest    Digest `json:"digest"`
	IdxBLAKE3 Digest `json:"idx_blake3"`
	BinBLAKE3 Digest `json:"bin_blake3"`
	DType     string `json:"dtype"`
	Documents int64  `json:"documents"`
	Sequences int64  `json:"sequences"`
	Tokens    int64  `json:"tokens"`
	// Token-length statistics are over sequences (one per non-empty document
	// for datasets Rival writes); all zero for a dataset with no sequences.
	MinLength    int64   `json:"min_length"`
	MeanLength   float64 `json:"mean_length"`
	MedianLength float64 `json:"median_length"`
	MaxLength    int64   `json:"max_length"`
}

// String is a one-line summary for logs and verify:data output.
func (f Fingerprint) String() string {
	return fmt.Sprintf("blake3:%s dtype=%s documents=%d sequences=%d tokens=%d length min=%d mean=%.2f median=%g max=%d",
		f.Digest, f.DType, f.Documents, f.Sequences, f.Tokens, f.MinLength, f.MeanLength, f.MedianLength, f.MaxLength)
}

// Fingerprint hashes both files and computes the statistics. It reads every
// byte of both files; the statistics themselves are O(index) in time and
// constant in memory.
func (d *Dataset) Fingerprint() Fingerprint {
	return d.FingerprintWith(blake3.Sum256(d.idx), blake3.Sum256(d.bin))
}

// FingerprintWith is Fingerprint for a caller that already holds the BLAKE3
// digests of the .idx and .bin files (a content-addressed cache that just
// stored them): it reads only the index. The digests are trusted, so they
// must be of exactly these files.
func (d *Dataset) FingerprintWith(idxSum, binSum [32]byte) Fingerprint {
	h := blake3.New()
	h.Write([]byte("rival indexed fingerprint v1\x00"))
	h.Write(idxSum[:])
	h.Write(binSum[:])
	f := Fingerprint{
		Digest:    Digest(h.Sum(nil)),
		IdxBLAKE3: idxSum,
		BinBLAKE3: binSum,
		DType:     d.dtype.String(),
		Documents: int64(d.Documents()),
		Sequences: int64(d.seqCount),
		Tokens:    d.Tokens(),
	}
	if d.seqCount == 0 {
		return f
	}
	f.MinLength, f.MaxLength = int64(d.Length(0)), int64(d.Length(0))
	var sum int64
	for i := 0; i < d.seqCount; i++ {
		l := int64(d.Length(i))
		sum += l
		f.MinLength = min(f.MinLength, l)
		f.MaxLength = max(f.MaxLength, l)
	}
	f.MeanLength = float64(sum) / float64(d.seqCount)
	n := d.seqCount
	if n%2 == 1 {
		f.MedianLength = float64(d.kthLength(n / 2))
	} else {
		f.MedianLength = (float64(d.kthLength(n/2-1)) + float64(d.kthLength(n/2))) / 2
	}
	return f
}

// kthLength is the k-th smallest sequence length (0-based), found by a
// two-pass radix select over the high and low 16 bits so the median needs no
// copy of the lengths. Open has checked that lengths are non-negative.
func (d *Dataset) kthLength(k int) int32 {
	var counts [1 << 16]int
	for i := 0; i < d.seqCount; i++ {
		counts[uint32(d.Length(i))>>16]++
	}
	hi := 0
	for ; k >= counts[hi]; hi++ {
		k -= counts[hi]
	}
	counts = [1 << 16]int{}
	for i := 0; i < d.seqCount; i++ {
		if v := uint32(d.Length(i)); int(v>>16) == hi {
			counts[v&0xffff]++
		}
	}
	lo := 0
	for ; k >= counts[lo]; lo++ {
		k -= counts[lo]
	}
	return int32(hi<<16 | lo)
}

// FingerprintFiles opens the dataset at prefix, validates it and returns its
// fingerprint.
func FingerprintFiles(prefix string) (Fingerprint, error) {
	d, err := Open(prefix)
	if err != nil {
		return Fingerprint{}, err
	}
	defer d.Close()
	return d.Fingerprint(), nil
}
