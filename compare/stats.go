package compare

import (
	"math"
	"sort"
)

// Summary describes repetitions of one measurement (one value per run).
type Summary struct {
	N    int
	Mean float64
	// SD is the sample standard deviation (n-1); zero and meaningless when N is 1.
	SD float64
	// HasCI is false for a single run, and for runs whose values are all
	// equal: no interval is invented from one value, and a zero spread from
	// a few runs is not certainty.
	HasCI bool
	// AllEqual is true when N >= 2 and every value is the same.
	AllEqual bool
	// CILo and CIHi bound the 95% Student-t confidence interval of the mean;
	// Half is its half-width.
	CILo, CIHi, Half float64
	// MLPerf is the olympic mean: the mean after dropping the fastest and the
	// slowest run, set when N >= OlympicMinRuns. MLPerf Training's rules
	// (training_rules.adoc, "Benchmark results") average time-to-train this
	// way; Rival applies it to throughput.
	MLPerf *float64
}

// OlympicMinRuns is the fewest runs the olympic mean is computed from: one
// run must remain once the fastest and the slowest are dropped.
const OlympicMinRuns = 3

// summarize computes mean, SD, the 95% t interval and the olympic mean (the
// fastest and the slowest run are both dropped, so the direction of "fast"
// does not matter).
func summarize(xs []float64) Summary {
	s := Summary{N: len(xs)}
	if len(xs) == 0 {
		return s
	}
	s.Mean = mean(xs)
	if len(xs) >= 2 {
		s.SD = sampleSD(xs)
		s.AllEqual = true
		for _, x := range xs[1:] {
			if x != xs[0] {
				s.AllEqual = false
			}
		}
		if !s.AllEqual {
			s.HasCI = true
			s.Half = tQuantile(0.975, float64(len(xs)-1)) * s.SD / math.Sqrt(float64(len(xs)))
			s.CILo, s.CIHi = s.Mean-s.Half, s.Mean+s.Half
		}
	}
	if len(xs) >= OlympicMinRuns {
		sorted := append([]float64(nil), xs...)
		sort.Float64s(sorted)
		m := mean(sorted[1 : len(sorted)-1])
		s.MLPerf = &m
	}
	return s
}

func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// sampleSD is the sample standard deviation (n-1), 0 below two values: two passes, the second
// corrected by the rounding left in the mean (the corrected two-pass algorithm of Chan, Golub and
// LeVeque), so values far from zero with a small spread keep their digits.
func sampleSD(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := mean(xs)
	var ss, comp float64
	for _, x := range xs {
		d := x - m
		ss += d * d
		comp += d
	}
	n := float64(len(xs))
	return math.Sqrt((ss - comp*comp/n) / (n - 1))
}

// percentile interpolates linearly between order statistics at position
// q·(n−1) (numpy's default, Hyndman and Fan's type 7), matching the result
// package's p10/p90.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	f := h - float64(lo)
	return sorted[lo] + f*(sorted[lo+1]-sorted[lo])
}

// Ratio is a speedup A/B of two group means with its 95% interval.
type Ratio struct {
	Value float64
	// HasCI is false when either side is a single run, or both sides have
	// no spread (its variance is unknown).
	HasCI            bool
	Lo, Hi, Half, DF float64
}

// ratioOfMeans is mean(A)/mean(B) with a delta-method standard error,
//
//	SE(R) = R · sqrt( sA²/(nA·mA²) + sB²/(nB·mB²) ),
//
// and Welch–Satterthwaite degrees of freedom on the two relative variance
// terms; the interval is R ± t(0.975, df)·SE. Both sides need n >= 2.
func ratioOfMeans(a, b Summary) Ratio {
	r := Ratio{Value: a.Mean / b.Mean}
	if a.N < 2 || b.N < 2 || a.Mean == 0 || b.Mean == 0 {
		return r
	}
	va := a.SD * a.SD / (float64(a.N) * a.Mean * a.Mean)
	vb := b.SD * b.SD / (float64(b.N) * b.Mean * b.Mean)
	if va+vb == 0 {
		// Identical values on both sides: the spread is unknown, not zero.
		return r
	}
	r.HasCI = true
	r.DF = (va + vb) * (va + vb) / (va*va/float64(a.N-1) + vb*vb/float64(b.N-1))
	r.Half = tQuantile(0.975, r.DF) * math.Abs(r.Value) * math.Sqrt(va+vb)
	r.Lo, r.Hi = r.Value-r.Half, r.Value+r.Half
	return r
}

// tQuantile is the p-quantile of Student's t distribution with df degrees
// of freedom (df > 0, p in (0, 1)); above 1e7 degrees of freedom, where the
// incomplete beta loses precision, it is the standard normal's.
func tQuantile(p, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e7 {
		return -math.Sqrt2 * math.Erfcinv(2*p)
	}
	if p < 0.5 {
		return -tQuantile(1-p, df)
	}
	if p == 0.5 {
		return 0
	}
	if df >= 1000 {
		// The incomplete beta's prefactor loses digits to lgamma's large values here; the
		// expansion of t in powers of 1/df around the normal quantile z (Abramowitz and Stegun
		// 26.7.5) is exact to about 1e-15 from this df on.
		z := -math.Sqrt2 * math.Erfcinv(2*p)
		z2 := z * z
		g1 := z * (z2 + 1) / 4
		g2 := z * ((5*z2+16)*z2 + 3) / 96
		g3 := z * (((3*z2+19)*z2+17)*z2 - 15) / 384
		g4 := z * ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) / 92160
		return z + (g1+(g2+(g3+g4/df)/df)/df)/df
	}
	// The upper tail 1−p is ½·I(df/(df+t²); df/2, ½), falling in t: widen the bracket until it
	// holds the quantile, then halve it until the halves stop shrinking.
	tail := 1 - p
	upper := func(t float64) float64 { return 0.5 * regIncBeta(df/(df+t*t), t*t/(df+t*t), df/2, 0.5) }
	lo, hi := 0.0, 1.0
	for upper(hi) > tail {
		lo, hi = hi, 2*hi
		if math.IsInf(hi, 1) {
			return math.Inf(1)
		}
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if upper(mid) > tail {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + (hi-lo)/2
}

// regIncBeta is the regularized incomplete beta function I(x; a, b), a, b > 0, from its
// continued fraction (evaluated by the modified Lentz method), on the side of x where it
// converges fast. y is 1−x, given by the caller so that no digits are lost subtracting.
func regIncBeta(x, y, a, b float64) float64 {
	switch {
	case x <= 0:
		return 0
	case y <= 0:
		return 1
	case x > (a+1)/(a+b+2):
		return 1 - regIncBeta(y, x, b, a)
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x)+b*math.Log(y)-la-lb+lab) / a
	const tiny, eps = 1e-300, 1e-16
	f, c, d := 1.0, 1.0, 0.0
	for i := 0; i <= 100000; i++ {
		m := float64(i / 2)
		var num float64
		switch {
		case i == 0:
			num = 1
		case i%2 == 0:
			num = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		default:
			num = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		}
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		d = 1 / d
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		cd := c * d
		f *= cd
		if math.Abs(1-cd) < eps {
			break
		}
	}
	return front * (f - 1)
}

// Inconclusive says whether the 95% interval of the ratio includes 1: the
// runs do not show a difference.
func (r Ratio) Inconclusive() bool { return r.HasCI && r.Lo <= 1 && r.Hi >= 1 }

// MaxRunsNeeded bounds the search of RunsNeeded.
const MaxRunsNeeded = 10000

// RunsNeeded is the number of runs per side at which a ratio of a.Mean /
// b.Mean, with each side's observed relative spread (SD / mean), would have
// a 95% interval (delta method, Welch–Satterthwaite) that excludes 1: the
// smallest n with t(0.975, df(n))·R·√((cv_a² + cv_b²)/n) < |R − 1|. It is 0
// when no number of runs decides (the means are equal, or no spread is
// known) and MaxRunsNeeded+1 when more than MaxRunsNeeded would be needed.
func RunsNeeded(a, b Summary) int {
	if a.Mean == 0 || b.Mean == 0 {
		return 0
	}
	r := a.Mean / b.Mean
	gap := math.Abs(r - 1)
	ca, cb := a.SD/a.Mean, b.SD/b.Mean
	if gap == 0 || ca*ca+cb*cb == 0 {
		return 0
	}
	for n := 2; n <= MaxRunsNeeded; n++ {
		fn := float64(n)
		va, vb := ca*ca/fn, cb*cb/fn
		df := (va + vb) * (va + vb) / ((va*va + vb*vb) / (fn - 1))
		if tQuantile(0.975, df)*r*math.Sqrt(va+vb) < gap {
			return n
		}
	}
	return MaxRunsNeeded + 1
}

// Outlier rule: a run is an outlier when its modified z-score
// |x − median| / scale exceeds OutlierZ, with scale = 1.4826 × MAD (the
// median absolute deviation, scaled to a normal SD), or 1.253314 × the mean
// absolute deviation from the median when the MAD is 0 (more than half the
// runs are equal). Iglewicz and Hoaglin's rule; needs OutlierMinRuns runs.
const (
	OutlierZ       = 3.5
	OutlierMinRuns = 3
)

// outliers returns, per value, its modified z-score when it is an outlier
// and 0 otherwise.
func outliers(xs []float64) []float64 {
	out := make([]float64, len(xs))
	if len(xs) < OutlierMinRuns {
		return out
	}
	med := median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	scale := 1.4826 * median(dev)
	if scale == 0 {
		scale = 1.253314 * mean(dev)
	}
	if scale == 0 {
		return out
	}
	for i, d := range dev {
		if z := d / scale; z > OutlierZ {
			out[i] = z
		}
	}
	return out
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return percentile(s, 0.5)
}

// NoisyHostCV is the spread between runs above which a group is flagged as
// measured on a noisy host: the coefficient of variation (sample SD / mean)
// of the runs' tokens/s/GPU.
const NoisyHostCV = 0.05

// CV is the coefficient of variation of the runs, 0 below two runs.
func (s Summary) CV() float64 {
	if s.N < 2 || s.Mean == 0 {
		return 0
	}
	return s.SD / math.Abs(s.Mean)
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
