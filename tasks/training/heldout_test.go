package training

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/indexed"
)

func writeSplit(t *testing.T, docs ...[]int32) string {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "sample-test")
	w, err := indexed.NewWriter(prefix, indexed.Uint16)
	require.NoError(t, err)
	for _, d := range docs {
		require.NoError(t, w.AddDocument(d))
	}
	require.NoError(t, w.Finalize())
	return prefix
}

// The held-out set is the test split's first documents joined in file order, cut to n·sl+1 tokens,
// as one document; its digest is over the n windows of sl+1 tokens from k·sl.
func TestWriteHeldOut(t *testing.T) {
	test := writeSplit(t, []int32{1, 2, 3}, []int32{4, 5, 6, 0}, []int32{7, 8, 9, 10})
	dir := t.TempDir()
	h, d, err := WriteHeldOut(test, dir, core.Fair{SL: 3, EvalSamples: 2, EvalIntervalSamples: 8})
	require.NoError(t, err)
	ds, err := indexed.Open(filepath.Join(dir, core.HeldOutName(2, 3)))
	require.NoError(t, err)
	defer ds.Close()
	require.Equal(t, 1, ds.Sequences())
	got, err := ds.Sequence(0)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 2, 3, 4, 5, 6, 0}, got, "2·3+1 tokens across the first two documents")
	// Windows [1 2 3 4] and [4 5 6 0] as little-endian int64, by Python, not Rival:
	// hashlib.sha256(b"".join(struct.pack("<q", x) for x in [1, 2, 3, 4, 4, 5, 6, 0])).hexdigest()
	const want = "2919a248a110bead750cfcffbe1c79abd2341c9564004d39c43cc108b6a07e7e"
	assert.Equal(t, want, h.SHA256)
	assert.Equal(t, want, d.SHA256)
	assert.Equal(t, int64(2), d.Samples)
	assert.Equal(t, 8, h.IntervalSamples)
	assert.Len(t, h.BLAKE3, 64)

	_, _, err = WriteHeldOut(test, dir, core.Fair{SL: 8, EvalSamples: 2, EvalIntervalSamples: 8})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "holds 11 tokens, and EVAL_SAMPLES 2 sequences of SL 8 need 17: lower EVAL_SAMPLES")
}
