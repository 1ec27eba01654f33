package indexed

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeDocs writes docs with Rival's writer and returns the prefix.
func writeDocs(t testing.TB, dir, name string, dtype DType, docs [][]int32) string {
	t.Helper()
	prefix := filepath.Join(dir, name)
	w, err := NewWriter(prefix, dtype)
	require.NoError(t, err)
	for _, d := range docs {
		require.NoError(t, w.AddDocument(d))
	}
	require.NoError(t, w.Finalize())
	return prefix
}

func le(vals ...any) []byte {
	var b []byte
	for _, v := range vals {
		b, _ = binary.Append(b, binary.LittleEndian, v)
	}
	return b
}

func TestDTypeForVocab(t *testing.T) {
	for _, tc := range []struct {
		vocab int
		want  DType
	}{
		{32000, Uint16}, // Mistral 7B v0.1
		{65499, Uint16}, // last size that still fits Megatron's rule
		{65500, Int32},  // the threshold itself goes to int32
		{128256, Int32}, // Llama 3.1
		{151665, Int32}, // Qwen 2.5 with added tokens
		{0, Uint16},
	} {
		assert.Equal(t, tc.want, DTypeForVocab(tc.vocab), "vocab %d", tc.vocab)
	}
}

// TestExactBytes pins the layout against bytes spelled out field by field
// from the format description: empty documents add a document index only.
func TestExactBytes(t *testing.T) {
	dir := t.TempDir()
	prefix := writeDocs(t, dir, "ds", Uint16, [][]int32{{1, 2, 3}, {}, {65535}, {}})
	bin, err := os.ReadFile(prefix + ".bin")
	require.NoError(t, err)
	assert.Equal(t, le(uint16(1), uint16(2), uint16(3), uint16(65535)), bin)
	idx, err := os.ReadFile(prefix + ".idx")
	require.NoError(t, err)
	want := append([]byte("MMIDIDX\x00\x00"), le(
		uint64(1), uint8(8), // version, dtype uint16
		uint64(2), uint64(5), // S sequences, D document indices
		int32(3), int32(1), // sequence lengths
		int64(0), int64(6), // byte pointers
		int64(0), int64(1), int64(1), int64(2), int64(2), // document indices
	)...)
	assert.Equal(t, want, idx)

	for _, ext := range []string{".bin", ".idx"} {
		st, err := os.Stat(prefix + ext)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), ext)
	}

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"ds.bin", "ds.idx"}, names, "no temporary files may remain")
}

func TestEmptyDataset(t *testing.T) {
	prefix := writeDocs(t, t.TempDir(), "empty", Int32, nil)
	d, err := Open(prefix)
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 0, d.Sequences())
	assert.Equal(t, 0, d.Documents())
	assert.Equal(t, int64(0), d.Tokens())
	f := d.Fingerprint()
	assert.Equal(t, int64(0), f.MaxLength)
	require.NoError(t, d.CheckTokens(10))
}

func randomDocs(r *rand.Rand, n int, vocab int32) [][]int32 {
	docs := make([][]int32, n)
	for i := range docs {
		if r.IntN(7) == 0 {
			continue // empty document
		}
		doc := make([]int32, 1+r.IntN(300))
		for k := range doc {
			doc[k] = r.Int32N(vocab)
		}
		docs[i] = doc
	}
	return docs
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		dtype DType
		vocab int32
	}{{Uint16, 65535}, {Int32, 151665}, {Uint8, 256}, {Int8, 128}, {Int16, 32767}, {Int64, 1 << 30}} {
		t.Run(tc.dtype.String(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.dtype)))
			docs := randomDocs(r, 500, tc.vocab)
			prefix := writeDocs(t, t.TempDir(), "rt", tc.dtype, docs)
			d, err := Open(prefix)
			require.NoError(t, err)
			defer d.Close()
			assert.Equal(t, tc.dtype, d.DType())
			assert.Equal(t, len(docs), d.Documents())
			seq := 0
			var tokens int64
			for j, doc := range docs {
				assert.Equal(t, int64(seq), d.DocumentIndex(j), "document index %d", j)
				if len(doc) == 0 {
					continue
				}
				got, err := d.Sequence(seq)
				require.NoError(t, err)
				require.Equal(t, doc, got, "sequence %d", seq)
				seq++
				tokens += int64(len(doc))
			}
			assert.Equal(t, seq, d.Sequences())
			assert.Equal(t, int64(seq), d.DocumentIndex(len(docs)))
			assert.Equal(t, tokens, d.Tokens())
			require.NoError(t, d.CheckTokens(int(tc.vocab)))
		})
	}
}

func TestTokenOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		dtype DType
		id    int32
		msg   string
	}{
		{Uint16, 65536, "token id 65536 at position 1 of sequence 1 does not fit dtype uint16"},
		{Uint16, -1, "token id -1 at position 1 of sequence 1 does not fit dtype uint16"},
		{Uint8, 256, "token id 256"},
		{Int16, 40000, "token id 40000"},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			dir := t.TempDir()
			w, err := NewWriter(filepath.Join(dir, "x"), tc.dtype)
			require.NoError(t, err)
			require.NoError(t, w.AddDocument([]int32{1}))
			err = w.AddDocument([]int32{2, tc.id})
			require.ErrorContains(t, err, tc.msg)
			// The writer stays failed and publishes nothing.
			require.ErrorContains(t, w.AddDocument([]int32{3}), tc.msg)
			require.Error(t, w.Finalize())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, entries)
		})
	}
}

func TestFloatDTypeRefused(t *testing.T) {
	_, err := NewWriter(filepath.Join(t.TempDir(), "f"), Float32)
	require.ErrorContains(t, err, "dtype float32 cannot hold token ids")
}

// TestInterruptedEncodeLeavesNothing: until Finalize, only temporary names
// exist, and Abort removes them.
func TestInterruptedEncodeLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "part")
	w, err := NewWriter(prefix, Uint16)
	require.NoError(t, err)
	for i := 0; i < 1000; i++ {
		require.NoError(t, w.AddDocument([]int32{1, 2, 3, int32(i)}))
	}
	assert.NoFileExists(t, prefix+".bin")
	assert.NoFileExists(t, prefix+".idx")
	w.Abort()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
	require.Error(t, w.AddDocument([]int32{1}), "an aborted writer refuses input")
}

// TestFinalizeReplacesOldPair: an older pair at the prefix is replaced, and
// its .idx is gone before the new .bin lands.
func TestFinalizeReplacesOldPair(t *testing.T) {
	dir := t.TempDir()
	writeDocs(t, dir, "ds", Uint16, [][]int32{{1, 2, 3}})
	prefix := writeDocs(t, dir, "ds", Uint16, [][]int32{{9}, {8, 7}})
	d, err := Open(prefix)
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 2, d.Sequences())
	got, err := d.Sequence(1)
	require.NoError(t, err)
	assert.Equal(t, []int32{8, 7}, got)
}

func TestMergeEqualsSingleEncode(t *testing.T) {
	for _, dtype := range []DType{Uint16, Int32} {
		t.Run(dtype.String(), func(t *testing.T) {
			dir := t.TempDir()
			r := rand.New(rand.NewPCG(7, 7))
			docs := randomDocs(r, 300, 30000)
			docs = append(docs, nil) // a trailing empty document inside a shard
			whole := writeDocs(t, dir, "whole", dtype, docs)
			var parts []string
			for i, cut := range [][2]int{{0, 100}, {100, 100}, {100, 250}, {250, len(docs)}} {
				parts = append(parts, writeDocs(t, dir, "part"+string(rune('a'+i)), dtype, docs[cut[0]:cut[1]]))
			}
			merged := filepath.Join(dir, "merged")
			require.NoError(t, Merge(merged, parts))
			for _, ext := range []string{".bin", ".idx"} {
				want, err := os.ReadFile(whole + ext)
				require.NoError(t, err)
				got, err := os.ReadFile(merged + ext)
				require.NoError(t, err)
				assert.Equal(t, want, got, ext)
			}
		})
	}
}

func TestMergeErrors(t *testing.T) {
	dir := t.TempDir()
	a := writeDocs(t, dir, "a", Uint16, [][]int32{{1}})
	b := writeDocs(t, dir, "b", Int32, [][]int32{{1}})
	require.ErrorContains(t, Merge(filepath.Join(dir, "m"), []string{a, b}), "has dtype int32, the merge writes uint16")
	require.ErrorContains(t, Merge(filepath.Join(dir, "m"), nil), "no input datasets")
	require.ErrorContains(t, Merge(filepath.Join(dir, "m"), []string{a, filepath.Join(dir, "missing")}), "missing.idx")
	assert.NoFileExists(t, filepath.Join(dir, "m.idx"))
	assert.NoFileExists(t, filepath.Join(dir, "m.bin"))
}

func TestFingerprint(t *testing.T) {
	dir := t.TempDir()
	docs := [][]int32{{1, 2, 3, 4}, {}, {5}, {6, 7}, {8, 9, 10, 11, 12, 13, 14, 15, 16, 17}}
	a := writeDocs(t, dir, "a", Uint16, docs)
	b := writeDocs(t, dir, "b", Uint16, docs)
	fa, err := FingerprintFiles(a)
	require.NoError(t, err)
	fb, err := FingerprintFiles(b)
	require.NoError(t, err)
	assert.Equal(t, fa, fb, "identical data, identical fingerprint")
	assert.Equal(t, Fingerprint{
		Digest: fa.Digest, IdxBLAKE3: fa.IdxBLAKE3, BinBLAKE3: fa.BinBLAKE3,
		DType: "uint16", Documents: 5, Sequences: 4, Tokens: 17,
		MinLength: 1, MeanLength: 4.25, MedianLength: 3, MaxLength: 10,
	}, fa)
	assert.False(t, fa.Digest.IsZero())
	assert.NotEqual(t, fa.IdxBLAKE3, fa.BinBLAKE3)

	c := writeDocs(t, dir, "c", Uint16, append(docs, []int32{1 << 15}))
	fc, err := FingerprintFiles(c)
	require.NoError(t, err)
	assert.NotEqual(t, fa.Digest, fc.Digest)
	assert.Equal(t, 2.0, fc.MedianLength) // lengths 1 1 2 4 10
}

// TestMedianLargeLengths covers lengths beyond 16 bits, where the radix
// select's second pass matters.
func TestMedianLargeLengths(t *testing.T) {
	dir := t.TempDir()
	lengths := []int{70000, 3, 65536, 65535, 131072}
	var docs [][]int32
	for _, n := range lengths {
		docs = append(docs, make([]int32, n))
	}
	f, err := FingerprintFiles(writeDocs(t, dir, "big", Uint16, docs))
	require.NoError(t, err)
	assert.Equal(t, 65536.0, f.MedianLength)
	assert.Equal(t, int64(3), f.MinLength)
	assert.Equal(t, int64(131072), f.MaxLength)
}

func TestCheckTokens(t *testing.T) {
	dir := t.TempDir()
	for _, dtype := range []DType{Uint16, Int32, Uint8} {
		prefix := writeDocs(t, dir, dtype.String(), dtype, [][]int32{{1, 2}, {}, {3, 4, 200, 5}})
		d, err := Open(prefix)
		require.NoError(t, err)
		require.NoError(t, d.CheckTokens(201))
		require.ErrorContains(t, d.CheckTokens(200), "sequence 1 position 2 (byte "+map[DType]string{Uint16: "8", Int32: "16", Uint8: "4"}[dtype]+") holds token id 200, not below the vocabulary size 200")
		d.Close()
	}
	prefix := writeDocs(t, dir, "neg", Int32, [][]int32{{1, -5}})
	d, err := Open(prefix)
	require.NoError(t, err)
	defer d.Close()
	require.ErrorContains(t, d.CheckTokens(100), "holds token id -5")
}

// BenchmarkAddDocument measures the writer alone, which runs on one
// goroutine in the encode pipeline: bytes/s here are token bytes written.
func BenchmarkAddDocument(b *testing.B) {
	for _, dtype := range []DType{Uint16, Int32} {
		b.Run(dtype.String(), func(b *testing.B) {
			doc := make([]int32, 512)
			for i := range doc {
				doc[i] = int32(i * 61 % 32000)
			}
			w, err := NewWriter(filepath.Join(b.TempDir(), "bench"), dtype)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Abort()
			b.SetBytes(int64(len(doc) * dtype.Size()))
			for b.Loop() {
				if err := w.AddDocument(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Lengths is every Length, in order, in a slice the caller owns.
func TestLengthsIsEveryLength(t *testing.T) {
	prefix := writeDocs(t, t.TempDir(), "ds", Uint16, [][]int32{{1, 2, 3}, {4}, {5, 6}})
	ds, err := Open(prefix)
	require.NoError(t, err)
	defer ds.Close()
	got := ds.Lengths()
	assert.Equal(t, []int32{3, 1, 2}, got)
	got[0] = 99
	assert.Equal(t, int32(3), ds.Length(0), "the slice is a copy")
}
