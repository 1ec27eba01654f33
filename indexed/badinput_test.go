package indexed

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// validPair returns the bytes of a small valid uint16 dataset:
// documents {1,2,3}, {}, {4,5}. Layout: header 0..34, lengths 34..42,
// pointers 42..58, document indices 58..90.
func validPair(t testing.TB) (idx, bin []byte) {
	t.Helper()
	prefix := writeDocs(t, t.TempDir(), "v", Uint16, [][]int32{{1, 2, 3}, {}, {4, 5}})
	idx, err := os.ReadFile(prefix + ".idx")
	require.NoError(t, err)
	bin, err = os.ReadFile(prefix + ".bin")
	require.NoError(t, err)
	require.Len(t, idx, 90)
	return idx, bin
}

func put64(b []byte, off int, v int64) []byte {
	binary.LittleEndian.PutUint64(b[off:], uint64(v))
	return b
}

func put32(b []byte, off int, v int32) []byte {
	binary.LittleEndian.PutUint32(b[off:], uint32(v))
	return b
}

func TestOpenBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(idx, bin []byte) ([]byte, []byte)
		msg    string
	}{
		{"empty idx", func(idx, bin []byte) ([]byte, []byte) { return nil, bin },
			"bad.idx: truncated header: 0 bytes, the header alone needs 34"},
		{"truncated header", func(idx, bin []byte) ([]byte, []byte) { return idx[:20], bin },
			"bad.idx: truncated header: 20 bytes"},
		{"truncated idx", func(idx, bin []byte) ([]byte, []byte) { return idx[:80], bin },
			"bad.idx: truncated: header says 2 sequences and 4 document indices, which need 90 bytes, the file has 80"},
		{"trailing idx bytes", func(idx, bin []byte) ([]byte, []byte) { return append(idx, 0, 0), bin },
			"bad.idx: 2 trailing bytes after the document indices"},
		{"truncated bin", func(idx, bin []byte) ([]byte, []byte) { return idx, bin[:8] },
			"bad.idx: sequence 1 ends at byte 10, past the end of"},
		{"trailing bin bytes", func(idx, bin []byte) ([]byte, []byte) { return idx, append(bin, 1, 0) },
			"bad.bin: 12 bytes, but the index accounts for 10"},
		{"wrong magic", func(idx, bin []byte) ([]byte, []byte) { idx[0] = 'X'; return idx, bin },
			`bad.idx: magic is "XMIDIDX\x00\x00", want "MMIDIDX\x00\x00"`},
		{"wrong version", func(idx, bin []byte) ([]byte, []byte) { return put64(idx, 9, 2), bin },
			"bad.idx: version is 2, only version 1 is supported"},
		{"dtype code 0", func(idx, bin []byte) ([]byte, []byte) { idx[17] = 0; return idx, bin },
			"bad.idx: dtype code is 0, want one of 1..8"},
		{"dtype code 9", func(idx, bin []byte) ([]byte, []byte) { idx[17] = 9; return idx, bin },
			"bad.idx: dtype code is 9"},
		{"dtype size mismatch", func(idx, bin []byte) ([]byte, []byte) { idx[17] = byte(Int32); return idx, bin },
			"bad.idx: sequence 0 ends at byte 12, past the end of"},
		{"huge sequence count", func(idx, bin []byte) ([]byte, []byte) { return put64(idx, 18, -1), bin },
			"header says 18446744073709551615 sequences and 4 document indices, which need 221360928884514619446 bytes"},
		{"zero document count", func(idx, bin []byte) ([]byte, []byte) {
			idx = put64(idx, 26, 0)
			return idx[:58], bin
		}, "bad.idx: document count is 0"},
		{"negative length", func(idx, bin []byte) ([]byte, []byte) { return put32(idx, 38, -2), bin },
			"bad.idx: sequence_lengths[1] is -2, lengths cannot be negative"},
		{"length past end", func(idx, bin []byte) ([]byte, []byte) { return put32(idx, 38, 3), bin },
			"bad.idx: sequence 1 ends at byte 12, past the end of"},
		{"first pointer not 0", func(idx, bin []byte) ([]byte, []byte) { return put64(idx, 42, 2), bin },
			"bad.idx: sequence_pointers[0] = 2, want 0"},
		{"pointer past end", func(idx, bin []byte) ([]byte, []byte) { return put64(idx, 50, 1000), bin },
			"bad.idx: sequence_pointers[1] = 1000, want 6"},
		{"pointer decreasing", func(idx, bin []byte) ([]byte, []byte) {
			idx = put32(idx, 34, 0)
			return put64(idx, 50, -2), bin
		}, "bad.idx: sequence_pointers[1] = -2 is below sequence_pointers[0] = 0; pointers must increase"},
		{"first document index", func(idx, bin []byte) ([]byte, []byte) { return put64(idx, 58, 1), bin },
			"bad.idx: document_indices[0] is 1, want 0"},
		{"document indices out of order", func(idx, bin []byte) ([]byte, []byte) {
			idx = put64(idx, 66, 2)
			return put64(idx, 74, 1), bin
		}, "bad.idx: document_indices[2] = 1 is below document_indices[1] = 2"},
		{"document index past S", func(idx, bin []byte) ([]byte, []byte) { return put64(idx, 74, 3), bin },
			"bad.idx: document_indices[2] = 3 is past the sequence count 2"},
		{"last document index not S", func(idx, bin []byte) ([]byte, []byte) { return put64(idx, 82, 1), bin },
			"bad.idx: document_indices[3] (the last) is 1, want the sequence count 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, bin := validPair(t)
			idx, bin = tc.mutate(idx, bin)
			prefix := filepath.Join(t.TempDir(), "bad")
			require.NoError(t, os.WriteFile(prefix+".idx", idx, 0o644))
			require.NoError(t, os.WriteFile(prefix+".bin", bin, 0o644))
			d, err := Open(prefix)
			require.ErrorContains(t, err, tc.msg)
			require.Nil(t, d)
		})
	}
}

func TestOpenMissingFiles(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(filepath.Join(dir, "none"))
	require.ErrorContains(t, err, "none.idx")
	prefix := writeDocs(t, dir, "only", Uint16, [][]int32{{1}})
	require.NoError(t, os.Remove(prefix+".bin"))
	_, err = Open(prefix)
	require.ErrorContains(t, err, "only.bin")
}

// TestIDsBeyondUint16 covers ids that do not fit the file's dtype: the
// writer refuses them (see TestTokenOutOfRange) and a uint16 file cannot
// hold them, so a reader's vocabulary check is what catches a file encoded
// with a larger tokenizer's ids truncated into it.
func TestIDsBeyondUint16(t *testing.T) {
	prefix := writeDocs(t, t.TempDir(), "u16", Uint16, [][]int32{{65535, 0}})
	d, err := Open(prefix)
	require.NoError(t, err)
	defer d.Close()
	require.ErrorContains(t, d.CheckTokens(32000), "holds token id 65535, not below the vocabulary size 32000")
}

func FuzzOpen(f *testing.F) {
	idx, bin := validPair(f)
	f.Add(idx, bin)
	f.Add(idx[:40], bin)
	f.Add(idx, bin[:4])
	f.Add([]byte{}, []byte{})
	f.Fuzz(func(t *testing.T, idx, bin []byte) {
		d, err := openBytes(idx, bin)
		if err != nil {
			return
		}
		// Whatever validated must be fully readable.
		var tokens int64
		for i := 0; i < d.Sequences(); i++ {
			tokens += int64(len(d.SequenceBytes(i)) / d.DType().Size())
			if d.DType().IsInteger() {
				d.AppendSequence(nil, i)
			}
		}
		if tokens != d.Tokens() {
			t.Fatalf("sequences hold %d tokens, .bin %d", tokens, d.Tokens())
		}
		for j := 0; j < d.DocumentIndexCount(); j++ {
			d.DocumentIndex(j)
		}
		d.CheckTokens(1 << 20)
		d.Fingerprint()
	})
}
