// Package heldouttest writes Rival's held-out set in tests as a run does, and digests it here,
// independently of the code that reads it, for the tests that check what each framework evaluates.
package heldouttest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/indexed"
)

// Write writes the held-out set of n sequences of sl+1 tokens at prefix (one document of n·sl+1
// tokens, the corpus's first documents joined, as training.WriteHeldOut cuts it from the test
// split) and returns the SHA-256 of its n windows of sl+1 tokens from k·sl, each token a
// little-endian int64.
func Write(t testing.TB, corpus, prefix string, n, sl int) string {
	t.Helper()
	ds, err := indexed.Open(corpus)
	require.NoError(t, err)
	defer ds.Close()
	var tokens []int32
	for i := 0; len(tokens) < n*sl+1; i++ {
		tokens, err = ds.AppendSequence(tokens, i)
		require.NoError(t, err)
	}
	tokens = tokens[:n*sl+1]
	w, err := indexed.NewWriter(prefix, ds.DType())
	require.NoError(t, err)
	require.NoError(t, w.AddDocument(tokens))
	require.NoError(t, w.Finalize())
	h := sha256.New()
	var b [8]byte
	for k := 0; k < n; k++ {
		for _, tok := range tokens[k*sl : k*sl+sl+1] {
			binary.LittleEndian.PutUint64(b[:], uint64(int64(tok)))
			h.Write(b[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Line is the digest a preflight printed after "preflight held-out: " in lines; nil when none.
func Line(t testing.TB, lines []string) *core.SampleDigest {
	t.Helper()
	for _, l := range lines {
		if j, ok := strings.CutPrefix(l, "preflight held-out: "); ok {
			var d core.SampleDigest
			require.NoError(t, json.Unmarshal([]byte(j), &d), l)
			return &d
		}
	}
	return nil
}
