package compare

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Published two-sided 95% critical values of Student's t (any statistics table).
func TestTQuantileTable(t *testing.T) {
	for _, tc := range []struct{ df, want float64 }{
		{1, 12.706204736}, {2, 4.302652730}, {3, 3.182446305}, {4, 2.776445105},
		{9, 2.262157163}, {29, 2.045229642}, {120, 1.979930405}, {math.Inf(1), 1.959963985},
	} {
		got := tQuantile(0.975, tc.df)
		assert.InDelta(t, tc.want, got, 1e-6, "df=%v", tc.df)
	}
	// non-integer df (Welch) lies between its integer neighbours
	q := tQuantile(0.975, 4.5)
	assert.True(t, q < tQuantile(0.975, 4) && q > tQuantile(0.975, 5))
	// symmetry
	assert.InDelta(t, -tQuantile(0.975, 7), tQuantile(0.025, 7), 1e-9)
}

func TestSummarize(t *testing.T) {
	s := summarize([]float64{10})
	assert.Equal(t, 1, s.N)
	assert.False(t, s.HasCI)
	assert.Nil(t, s.MLPerf)

	s = summarize([]float64{1, 2, 3, 4, 100})
	require.NotNil(t, s.MLPerf)
	assert.InDelta(t, 3, *s.MLPerf, 1e-12)
	assert.True(t, s.HasCI)
	assert.InDelta(t, 22, s.Mean, 1e-12)
}

func TestRatioNeedsTwoRunsEachSide(t *testing.T) {
	r := ratioOfMeans(summarize([]float64{2}), summarize([]float64{1, 1.1}))
	assert.False(t, r.HasCI)
	assert.InDelta(t, 2/1.05, r.Value, 1e-12)
	// Identical runs on both sides: the spread is unknown, not a
	// zero-width interval.
	r = ratioOfMeans(summarize([]float64{2, 2}), summarize([]float64{1, 1}))
	assert.False(t, r.HasCI)
	assert.Equal(t, 2.0, r.Value)
}

func TestSummarizeIdenticalRuns(t *testing.T) {
	s := summarize([]float64{5, 5})
	assert.True(t, s.AllEqual)
	assert.False(t, s.HasCI)
	assert.Zero(t, s.Half)
	// The olympic mean drops the fastest and the slowest for any N >= 3.
	s = summarize([]float64{1, 2, 9})
	require.NotNil(t, s.MLPerf)
	assert.Equal(t, 2.0, *s.MLPerf)
}

func TestFrameworkTFCellMarksCoarseFigures(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	assert.Equal(t, "0.1 (printed to one decimal)", frameworkTFCell(f(0.1)))
	assert.Equal(t, "0.0567", sig(f(0.0567)))
	assert.Equal(t, "430.0", frameworkTFCell(f(430)))
	assert.Equal(t, "—", frameworkTFCell(nil))
}

// Percentiles against numpy.percentile's default (linear) method, computed with
//
//	python3 -c 'import numpy as np; print(np.percentile([1, 2, 3, 10], [0, 10, 50, 90, 100]))'
//
// and likewise for the other rows.
func TestPercentileMatchesNumpy(t *testing.T) {
	for _, tc := range []struct {
		sorted []float64
		want   [5]float64 // at 0, 0.1, 0.5, 0.9, 1
	}{
		{[]float64{1}, [5]float64{1, 1, 1, 1, 1}},
		{[]float64{1, 2}, [5]float64{1, 1.1, 1.5, 1.9, 2}},
		{[]float64{1, 2, 3, 10}, [5]float64{1, 1.3, 2.5, 7.9, 10}},
		{[]float64{0.125, 0.25, 0.5, 4, 7, 8, 16}, [5]float64{0.125, 0.2, 4, 11.2, 16}},
	} {
		for i, q := range []float64{0, 0.1, 0.5, 0.9, 1} {
			assert.InDelta(t, tc.want[i], percentile(tc.sorted, q), 1e-12, "%v at %v", tc.sorted, q)
		}
	}
	assert.True(t, math.IsNaN(percentile(nil, 0.5)))
}
