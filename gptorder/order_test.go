package gptorder

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Expected book-ends from Python (int(round(fraction × n)) over normalized weights, as
// BlendedMegatronDatasetBuilder computes them), including the half-to-even cases.
func TestTrainRange(t *testing.T) {
	cases := []struct {
		split    string
		n        int
		beg, end int
	}{
		{"100,0,0", 600, 0, 600},
		{"99,1,0", 250, 0, 248},
		{"98,2,0", 600, 0, 588},
		{"969, 30, 1", 1000, 0, 969},
		{"1,1,0", 5, 0, 2},
		{"1,1,0", 7, 0, 4},
		{"100", 3, 0, 3},
	}
	for _, c := range cases {
		beg, end, err := TrainRange(c.split, c.n)
		require.NoError(t, err, c.split)
		assert.Equal(t, [2]int{c.beg, c.end}, [2]int{beg, end}, "%s over %d", c.split, c.n)
	}
	for _, bad := range []string{"", "0,0,0", "1,2,3,4", "0,1,0"} {
		_, _, err := TrainRange(bad, 10)
		assert.Error(t, err, bad)
	}
}

func TestBuildRejects(t *testing.T) {
	ok := Order{Seed: 1, SeqLen: 4, NumSamples: 2, AddExtraToken: true}
	lengths := []int32{5, 6, 7}
	cases := []struct {
		name     string
		lengths  []int32
		beg, end int
		edit     func(*Order)
		want     string
	}{
		{"short sequence length", lengths, 0, 3, func(o *Order) { o.SeqLen = 1 }, "at least 2"},
		{"no samples", lengths, 0, 3, func(o *Order) { o.NumSamples = 0 }, "at least 1"},
		{"empty range", lengths, 2, 2, func(*Order) {}, "empty or outside"},
		{"range outside", lengths, 0, 4, func(*Order) {}, "empty or outside"},
		{"negative length", []int32{3, -1}, 0, 2, func(*Order) {}, "sequence 1 has negative length"},
		{"one token", []int32{1, 0}, 0, 2, func(*Order) {}, "not enough for one sample"},
	}
	for _, c := range cases {
		o := ok
		c.edit(&o)
		_, err := Build(c.lengths, c.beg, c.end, o)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
	x, err := Build(lengths, 0, 3, ok)
	require.NoError(t, err)
	assert.Equal(t, int64(4), x.Samples(), "(18 − 1) // 4 samples in one epoch")
	assert.Equal(t, 1, x.Epochs)
	assert.Len(t, x.Shuffle, 4)
}

// Write then Read gives the same arrays back, and Read refuses an order built for fewer samples
// than asked.
func TestWriteRead(t *testing.T) {
	o := Order{Seed: 9, SeqLen: 3, NumSamples: 10, AddExtraToken: true}
	x, err := Build([]int32{4, 9, 2, 7, 5}, 0, 5, o)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, x.Write(dir))
	y, err := Read(context.Background(), dir, o)
	require.NoError(t, err)
	assert.Equal(t, x.Document, y.Document)
	assert.Equal(t, x.Sample, y.Sample)
	assert.Equal(t, x.Shuffle, y.Shuffle)
	more := o
	more.NumSamples = 100
	_, err = Read(context.Background(), dir, more)
	assert.ErrorContains(t, err, "rival-gptorder-seed9-sl3-n100-x1-document_index.npy")
}

// A stopped run (Ctrl-C) stops reading the indices and says why.
func TestReadStopsWhenTheContextEnds(t *testing.T) {
	o := Order{Seed: 9, SeqLen: 3, NumSamples: 10, AddExtraToken: true}
	x, err := Build([]int32{4, 9, 2, 7, 5}, 0, 5, o)
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, x.Write(dir))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Read(ctx, dir, o)
	require.ErrorIs(t, err, context.Canceled)
}
