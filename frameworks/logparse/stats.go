package logparse

import (
	"math"
	"sort"
)

// Dist summarises a stream of positive values in bounded memory. The first
// ExactValues values are kept, so every statistic is exact for them; beyond that the
// values move into a logarithmic histogram whose buckets are SketchAccuracy wide
// (relative), so quantiles carry at most that relative error while count, mean,
// standard deviation, minimum and maximum stay exact. Memory is at most
// ExactValues×8 bytes plus one counter per occupied bucket (about 14,000 buckets
// span 1 µs to 10^6 s).
type Dist struct {
	n        int
	mean, m2 float64 // Welford's running mean and sum of squared deviations
	min, max float64
	exact    []float64
	sketch   map[int32]int64 // bucket index -> count, once exact overflowed
}

const (
	// ExactValues is how many values a Dist keeps before it switches to its histogram.
	ExactValues = 1 << 20
	// SketchAccuracy is the relative error of quantiles read from the histogram.
	SketchAccuracy = 0.001
)

var (
	sketchGamma    = (1 + SketchAccuracy) / (1 - SketchAccuracy)
	sketchLogGamma = math.Log(sketchGamma)
)

// Add folds x in; values that are not positive and finite are ignored.
func (d *Dist) Add(x float64) {
	if !(x > 0) || math.IsInf(x, 0) {
		return
	}
	d.n++
	if d.n == 1 {
		d.min, d.max = x, x
	} else {
		d.min, d.max = min(d.min, x), max(d.max, x)
	}
	delta := x - d.mean
	d.mean += delta / float64(d.n)
	d.m2 += delta * (x - d.mean)
	if d.sketch == nil && len(d.exact) < ExactValues {
		d.exact = append(d.exact, x)
		return
	}
	if d.sketch == nil {
		d.sketch = map[int32]int64{}
		for _, v := range d.exact {
			d.sketch[bucket(v)]++
		}
		d.exact = nil
	}
	d.sketch[bucket(x)]++
}

func bucket(x float64) int32 { return int32(math.Ceil(math.Log(x) / sketchLogGamma)) }

// Merge folds o into d.
func (d *Dist) Merge(o *Dist) {
	if o.n == 0 {
		return
	}
	if d.n == 0 {
		d.min, d.max = o.min, o.max
	} else {
		d.min, d.max = min(d.min, o.min), max(d.max, o.max)
	}
	n := d.n + o.n
	delta := o.mean - d.mean
	d.m2 += o.m2 + delta*delta*float64(d.n)*float64(o.n)/float64(n)
	d.mean += delta * float64(o.n) / float64(n)
	d.n = n
	if d.sketch == nil && o.sketch == nil && len(d.exact)+len(o.exact) <= ExactValues {
		d.exact = append(d.exact, o.exact...)
		return
	}
	if d.sketch == nil {
		d.sketch = map[int32]int64{}
		for _, v := range d.exact {
			d.sketch[bucket(v)]++
		}
		d.exact = nil
	}
	for _, v := range o.exact {
		d.sketch[bucket(v)]++
	}
	for b, c := range o.sketch {
		d.sketch[b] += c
	}
}

// Count is the number of values folded in.
func (d *Dist) Count() int { return d.n }

// Exact reports whether quantiles are exact (the histogram was not needed).
func (d *Dist) Exact() bool { return d.sketch == nil }

// Summary is the description of a Dist. Quantiles interpolate linearly between order
// statistics (numpy's default) while exact.
type Summary struct {
	Count                  int
	Mean, Median, P10, P90 float64
	Min, Max, Std          float64
	Exact                  bool
}

// Summary describes the values; the zero Summary when there are none.
func (d *Dist) Summary() Summary {
	if d.n == 0 {
		return Summary{}
	}
	s := Summary{Count: d.n, Mean: d.mean, Min: d.min, Max: d.max, Exact: d.sketch == nil}
	if d.n > 1 {
		s.Std = math.Sqrt(d.m2 / float64(d.n-1))
	}
	if d.sketch == nil {
		sorted := append([]float64(nil), d.exact...)
		sort.Float64s(sorted)
		s.Median, s.P10, s.P90 = quantile(sorted, 0.5), quantile(sorted, 0.1), quantile(sorted, 0.9)
		return s
	}
	keys := make([]int32, 0, len(d.sketch))
	for k := range d.sketch {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	at := func(q float64) float64 {
		rank := int64(math.Floor(q * float64(d.n-1)))
		var seen int64
		for _, k := range keys {
			seen += d.sketch[k]
			if seen > rank {
				v := 2 * math.Pow(sketchGamma, float64(k)) / (sketchGamma + 1)
				return min(max(v, d.min), d.max)
			}
		}
		return d.max
	}
	s.Median, s.P10, s.P90 = at(0.5), at(0.1), at(0.9)
	return s
}

func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

// Mean is a running mean.
type Mean struct {
	Sum float64 `json:"sum"`
	N   int     `json:"n"`
}

func (m *Mean) add(v *float64) {
	if v != nil {
		m.Sum += *v
		m.N++
	}
}

// Value is the mean, nil when nothing was added.
func (m Mean) Value() *float64 {
	if m.N == 0 {
		return nil
	}
	v := m.Sum / float64(m.N)
	return &v
}

// Aggregate folds steps into streaming statistics: what the result needs from steps
// that are not kept one by one.
type Aggregate struct {
	Steps int `json:"steps"`
	// StepTime holds the printed step times (s); InvTokensPerGPU holds 1/(tokens/s per
	// GPU) as printed, from which step times are derived when none is printed.
	StepTime        Dist `json:"-"`
	InvTokensPerGPU Dist `json:"-"`
	FrameworkTFLOPs Mean `json:"framework_tflops_per_gpu"`
	FrameworkTokens Mean `json:"framework_tokens_per_s_per_gpu"`
	FrameworkMFU    Mean `json:"framework_mfu_percent"`

	PeakAllocatedMiB  *float64 `json:"peak_allocated_mib,omitempty"`
	PeakReservedMiB   *float64 `json:"peak_reserved_mib,omitempty"`
	PeakDeviceUsedMiB *float64 `json:"peak_device_used_mib,omitempty"`
	DeviceTotalMiB    *float64 `json:"device_total_mib,omitempty"`
	PeakUsedFraction  *float64 `json:"peak_used_fraction,omitempty"`

	SkippedIterations int `json:"skipped_iterations"`
	NaNIterations     int `json:"nan_iterations"`
	NonFiniteValues   int `json:"non_finite_values"`
}

// AddStep folds one step in.
func (a *Aggregate) AddStep(s *Step) {
	a.Steps++
	if s.StepTimeSeconds != nil {
		a.StepTime.Add(*s.StepTimeSeconds)
	}
	if t := s.TokensPerSecondPerGPU; t != nil && *t > 0 {
		a.InvTokensPerGPU.Add(1 / *t)
	}
	a.FrameworkTFLOPs.add(s.TFLOPsPerGPU)
	a.FrameworkTokens.add(s.TokensPerSecondPerGPU)
	a.FrameworkMFU.add(s.MFUPercent)
	peak(&a.PeakAllocatedMiB, s.MemMaxAllocatedMiB)
	peak(&a.PeakAllocatedMiB, s.MemAllocatedMiB)
	peak(&a.PeakReservedMiB, s.MemMaxReservedMiB)
	peak(&a.PeakReservedMiB, s.MemReservedMiB)
	peak(&a.PeakDeviceUsedMiB, s.MemDeviceUsedMiB)
	peak(&a.DeviceTotalMiB, s.MemDeviceTotalMiB)
	peak(&a.PeakUsedFraction, s.MemUsedFraction)
	if s.SkippedIterations != nil {
		a.SkippedIterations += *s.SkippedIterations
	}
	if s.NaNIterations != nil {
		a.NaNIterations += *s.NaNIterations
	}
	a.NonFiniteValues += len(s.NonFinite)
}

// Merge folds o into a.
func (a *Aggregate) Merge(o *Aggregate) {
	a.Steps += o.Steps
	a.StepTime.Merge(&o.StepTime)
	a.InvTokensPerGPU.Merge(&o.InvTokensPerGPU)
	for _, m := range []struct{ d, s *Mean }{{&a.FrameworkTFLOPs, &o.FrameworkTFLOPs}, {&a.FrameworkTokens, &o.FrameworkTokens}, {&a.FrameworkMFU, &o.FrameworkMFU}} {
		m.d.Sum += m.s.Sum
		m.d.N += m.s.N
	}
	peak(&a.PeakAllocatedMiB, o.PeakAllocatedMiB)
	peak(&a.PeakReservedMiB, o.PeakReservedMiB)
	peak(&a.PeakDeviceUsedMiB, o.PeakDeviceUsedMiB)
	peak(&a.DeviceTotalMiB, o.DeviceTotalMiB)
	peak(&a.PeakUsedFraction, o.PeakUsedFraction)
	a.SkippedIterations += o.SkippedIterations
	a.NaNIterations += o.NaNIterations
	a.NonFiniteValues += o.NonFiniteValues
}

func peak(dst **float64, v *float64) {
	if v != nil && (*dst == nil || *v > **dst) {
		x := *v
		*dst = &x
	}
}

// Point is one step of the loss/step-time curve.
type Point struct {
	Step            int      `json:"step"`
	StepTimeSeconds *float64 `json:"step_time_s,omitempty"`
	Loss            *float64 `json:"loss,omitempty"`
	LearningRate    *float64 `json:"learning_rate,omitempty"`
	GradNorm        *float64 `json:"grad_norm,omitempty"`
}

// CurvePoints bounds the curve: when it fills, every other point is dropped and
// from then on only every second step (then fourth, ...) is kept, so the curve holds
// the steps whose position in the log is a multiple of Log.CurveStride.
const CurvePoints = 4096

type curve struct {
	points []Point
	stride int
	seen   int
}

func (c *curve) add(s *Step) {
	if c.stride == 0 {
		c.stride = 1
	}
	if c.seen%c.stride == 0 {
		if len(c.points) == CurvePoints {
			kept := c.points[:0]
			for i := 0; i < len(c.points); i += 2 {
				kept = append(kept, c.points[i])
			}
			c.points = kept
			c.stride *= 2
		}
		if c.seen%c.stride == 0 {
			// the values are copied: s may be read into a buffer the next line reuses
			c.points = append(c.points, Point{Step: s.Step, StepTimeSeconds: copied(s.StepTimeSeconds), Loss: copied(s.Loss),
				LearningRate: copied(s.LearningRate), GradNorm: copied(s.GradNorm)})
		}
	}
	c.seen++
}

// copied returns a pointer to a copy of *v, nil for nil.
func copied(v *float64) *float64 {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}
