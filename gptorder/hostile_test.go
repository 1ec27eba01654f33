package gptorder_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/safefile/safefiletest"
)

// The sample-order indices live in the workspace's data folder: one that
// is not a regular file of a size an index has is refused, naming it.
func TestReadRefusesHostileIndexFiles(t *testing.T) {
	want := map[string]error{
		safefiletest.DevZero:   safefile.ErrNotRegular,
		safefiletest.FIFO:      safefile.ErrNotRegular,
		safefiletest.Directory: safefile.ErrNotRegular,
		safefiletest.OverLimit: safefile.ErrTooLarge,
	}
	for _, kind := range safefiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			o := gptorder.Order{Seed: 1234, SeqLen: 8, NumSamples: 4, AddExtraToken: true}
			doc, _, _ := o.Paths(dir)
			safefiletest.Plant(t, doc, kind, safefile.LimitSampleIndex)
			safefiletest.Within(t, func() {
				_, err := gptorder.Read(context.Background(), dir, o)
				require.ErrorIs(t, err, want[kind])
				assert.Contains(t, err.Error(), doc)
			})
		})
	}
}
