package indexed

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendTokens: a sequence written in parts with AppendTokens and
// EndSequence gives the bytes AddSequence gives; a document or a Finalize
// with a part-written sequence still open is an error.
func TestAppendTokens(t *testing.T) {
	dir := t.TempDir()
	whole, err := NewWriter(filepath.Join(dir, "whole"), Int32)
	require.NoError(t, err)
	require.NoError(t, whole.AddDocument([]int32{1, 2, 3, 4, 5}))
	require.NoError(t, whole.AddDocument(nil))
	require.NoError(t, whole.AddDocument([]int32{9}))
	require.NoError(t, whole.Finalize())

	parts, err := NewWriter(filepath.Join(dir, "parts"), Int32)
	require.NoError(t, err)
	require.NoError(t, parts.AppendTokens([]int32{1, 2}))
	require.NoError(t, parts.AppendTokens(nil))
	require.NoError(t, parts.AppendTokens([]int32{3, 4, 5}))
	require.NoError(t, parts.EndSequence())
	require.NoError(t, parts.EndDocument())
	require.NoError(t, parts.EndDocument())
	require.NoError(t, parts.AppendTokens([]int32{9}))
	require.NoError(t, parts.EndSequence())
	require.NoError(t, parts.EndDocument())
	require.NoError(t, parts.Finalize())
	for _, f := range []func(string) string{BinPath, IdxPath} {
		a, err := os.ReadFile(f(filepath.Join(dir, "whole")))
		require.NoError(t, err)
		b, err := os.ReadFile(f(filepath.Join(dir, "parts")))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), f(""))
	}

	for _, end := range []func(*Writer) error{(*Writer).EndDocument, (*Writer).Finalize, func(w *Writer) error { return w.AddSequence([]int32{1}) }} {
		w, err := NewWriter(filepath.Join(dir, "open"), Int32)
		require.NoError(t, err)
		require.NoError(t, w.AppendTokens([]int32{1}))
		require.ErrorContains(t, end(w), "call EndSequence first")
		w.Abort()
		_, err = os.Stat(BinPath(filepath.Join(dir, "open")))
		require.True(t, os.IsNotExist(err))
	}

	w, err := NewWriter(filepath.Join(dir, "range"), Uint16)
	require.NoError(t, err)
	require.NoError(t, w.AppendTokens([]int32{1, 2}))
	require.ErrorContains(t, w.AppendTokens([]int32{3, 70000}), "token id 70000 at position 3 of sequence 0")
	w.Abort()
}
