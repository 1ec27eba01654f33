package compare

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat"
)

// Student's t quantiles agree with mpmath's at 60 digits (testdata/tquantile.py writes the
// table) to 1e-11 relative over the degrees of freedom Welch's formula gives, fractional ones
// included.
func TestTQuantileOracle(t *testing.T) {
	raw, err := os.ReadFile("testdata/tquantile.tsv")
	require.NoError(t, err)
	rows := strings.Split(strings.TrimSpace(string(raw)), "\n")[1:]
	require.Len(t, rows, 16*9)
	for _, row := range rows {
		f := strings.Split(row, "\t")
		require.Len(t, f, 3, row)
		df, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.ParseFloat(f[1], 64)
		want, err3 := strconv.ParseFloat(f[2], 64)
		require.NoError(t, errors.Join(err1, err2, err3), row)
		assert.InDelta(t, want, tQuantile(p, df), 1e-11*math.Max(1, math.Abs(want)), "t quantile p=%v df=%v", p, df)
	}
}

// The sample mean and SD and numpy's default percentile agree with gonum's (an implementation
// of its own, used here only as the oracle).
func TestStatsAgreeWithGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 40; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = 1e4 + 50*rng.NormFloat64()
		}
		assert.InDelta(t, stat.Mean(xs, nil), mean(xs), 1e-9, "mean n=%d", n)
		if n >= 2 {
			assert.InDelta(t, stat.StdDev(xs, nil), sampleSD(xs), 1e-9, "sd n=%d", n)
		}
		sort.Float64s(xs)
		for _, q := range []float64{0, 0.1, 0.25, 0.5, 0.9, 1} {
			fn := float64(n)
			want := stat.Quantile((q*(fn-1)+1)/fn, stat.LinInterp, xs, nil)
			assert.InDelta(t, want, percentile(xs, q), 1e-9, "percentile q=%v n=%d", q, n)
		}
	}
}
