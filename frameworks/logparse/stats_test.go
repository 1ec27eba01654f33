package logparse

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDistExactThenSketch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n := ExactValues + ExactValues/2
	xs := make([]float64, n)
	var d Dist
	for i := range xs {
		xs[i] = 0.5 + rng.ExpFloat64()
		d.Add(xs[i])
		if i == 1000 {
			s := d.Summary()
			require.True(t, s.Exact)
			sorted := append([]float64(nil), xs[:1001]...)
			sort.Float64s(sorted)
			assert.Equal(t, sorted[500], s.Median)
		}
	}
	s := d.Summary()
	assert.False(t, s.Exact)
	assert.Equal(t, n, s.Count)
	sort.Float64s(xs)
	var sum float64
	for _, x := range xs {
		sum += x
	}
	assert.InDelta(t, sum/float64(n), s.Mean, 1e-9)
	assert.Equal(t, xs[0], s.Min)
	assert.Equal(t, xs[n-1], s.Max)
	for _, q := range []struct{ got, want float64 }{{s.Median, quantile(xs, 0.5)}, {s.P10, quantile(xs, 0.1)}, {s.P90, quantile(xs, 0.9)}} {
		assert.LessOrEqual(t, math.Abs(q.got-q.want)/q.want, SketchAccuracy*1.01)
	}
	d.Add(math.NaN())
	d.Add(-1)
	d.Add(math.Inf(1))
	assert.Equal(t, n, d.Count(), "non-positive and non-finite values are ignored")
}

func TestDistMerge(t *testing.T) {
	var a, b, all Dist
	for i := 1; i <= 100; i++ {
		x := float64(i)
		all.Add(x)
		if i%3 == 0 {
			a.Add(x)
		} else {
			b.Add(x)
		}
	}
	a.Merge(&b)
	sa, sall := a.Summary(), all.Summary()
	assert.Equal(t, sall.Count, sa.Count)
	assert.InDelta(t, sall.Mean, sa.Mean, 1e-12)
	assert.InDelta(t, sall.Std, sa.Std, 1e-12)
	assert.Equal(t, sall.Median, sa.Median)
	assert.Equal(t, 50.5, sa.Median)
}

func TestCurveDecimation(t *testing.T) {
	var c curve
	n := 3*CurvePoints + 5
	for i := 0; i < n; i++ {
		c.add(&Step{Step: i + 1})
	}
	assert.LessOrEqual(t, len(c.points), CurvePoints)
	assert.Equal(t, 4, c.stride)
	for i, p := range c.points {
		assert.Equal(t, i*c.stride+1, p.Step)
	}
}

// TestLogIsBounded: a log with more steps than HeadSteps keeps HeadSteps in full,
// folds the rest into Tail and decimates the curve.
func TestLogIsBounded(t *testing.T) {
	var b strings.Builder
	n := 3*CurvePoints + 7
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, " iteration %8d/%8d | elapsed time per iteration (ms): %.1f | lm loss: 2.0E+00 | number of skipped iterations:   0 | number of nan iterations:   %d |\n", i, n, 1000+float64(i%7), i%2)
	}
	log, err := Parse(strings.NewReader(b.String()), "")
	require.NoError(t, err)
	assert.Equal(t, n, log.StepCount)
	assert.Len(t, log.Steps, HeadSteps)
	assert.Equal(t, n-HeadSteps, log.Tail.Steps)
	assert.Equal(t, n-HeadSteps, log.Tail.StepTime.Count())
	assert.LessOrEqual(t, len(log.Curve), CurvePoints)
	assert.Equal(t, 4, log.CurveStride)
	nan := 0
	for _, s := range log.Steps {
		nan += *s.NaNIterations
	}
	assert.Equal(t, (n+1)/2, nan+log.Tail.NaNIterations)
}
