package logparse

import (
	"math"
	"strconv"
	"strings"
)

// Memory unit factors to MiB.
const (
	mibPerGiB = 1024.0
	// Megatron-Bridge's "gigabytes" are 10^9 bytes.
	mibPerGB = 1e9 / (1 << 20)
	mibPerB  = 1.0 / (1 << 20)
)

// number reads the first number of a printed value: "812.3", "9.150E-06",
// "13372.8/13364.7" (this iteration / running average), "496.3 (avg 496.1)",
// "4,376" (thousands separators), "153.81GB", "60.09%", "nan", "-inf".
// finite is false for nan/inf; ok is false when no number starts the value.
func number(v string) (x float64, finite, ok bool) {
	v = strings.TrimSpace(v)
	if n, isInt := plainDigits(v); isInt {
		return n, true, true
	}
	// a plain decimal holds none of the bytes cut or trimmed below
	if f, isDec := decimal(v); isDec {
		return f, true, true
	}
	end := len(v)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '/' || c == ' ' || c == '(' || c == '\t' {
			end = i
			break
		}
	}
	v = v[:end]
	v = strings.TrimRight(v, "%")
	if n := len(v); n > 1 && (v[n-1] == 'B' || v[n-1] == 's') {
		for _, unit := range []string{"GiB", "GB", "MiB", "MB", "s"} {
			if strings.HasSuffix(v, unit) && len(v) > len(unit) {
				v = v[:len(v)-len(unit)]
				break
			}
		}
	}
	if f, isDec := decimal(v); isDec {
		return f, true, true
	}
	if strings.IndexByte(v, ',') >= 0 {
		v = strings.ReplaceAll(v, ",", "")
	}
	if v == "" {
		return 0, false, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		// ParseFloat rejects out-of-range values with ErrRange but still returns ±Inf.
		if ne, isNum := err.(*strconv.NumError); isNum && ne.Err == strconv.ErrRange {
			return f, false, true
		}
		return 0, false, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f, false, true
	}
	return f, true, true
}

// pow10 holds the powers of ten a float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// decimal reads v, commas removed, when it is a plain decimal number
// ([+-]digits[.digits][(e|E)[+-]digits]) whose digits fit in 2^53 and whose power
// of ten is within ±22: both are then exact float64 values, and one IEEE
// multiplication or division rounds their product correctly, which is the value
// strconv.ParseFloat returns. Anything else (more digits, larger exponents, nan,
// inf, hexadecimal, underscores) reports false and is left to ParseFloat.
func decimal(v string) (float64, bool) {
	i := 0
	neg := false
	if i < len(v) && (v[i] == '+' || v[i] == '-') {
		neg = v[i] == '-'
		i++
	}
	var mant uint64
	nd, exp := 0, 0 // digits read, power of ten of the last one
	dot, sawDigit := false, false
	for ; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			sawDigit = true
			if mant == 0 && c == '0' {
				if dot {
					exp--
				}
				continue
			}
			if nd == 16 {
				return 0, false
			}
			mant = mant*10 + uint64(c-'0')
			nd++
			if dot {
				exp--
			}
		case c == '.':
			if dot {
				return 0, false
			}
			dot = true
		case c == ',':
		case c == 'e' || c == 'E':
			goto exponent
		default:
			return 0, false
		}
	}
	goto done
exponent:
	if !sawDigit {
		return 0, false
	}
	i++
	{
		eneg := false
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			eneg = v[i] == '-'
			i++
		}
		e, n := 0, 0
		for ; i < len(v); i++ {
			c := v[i]
			if c == ',' {
				continue
			}
			if c < '0' || c > '9' || n == 4 {
				return 0, false
			}
			e = e*10 + int(c-'0')
			n++
		}
		if n == 0 {
			return 0, false
		}
		if eneg {
			e = -e
		}
		exp += e
	}
done:
	if !sawDigit || mant >= 1<<53 {
		return 0, false
	}
	f := float64(mant)
	switch {
	case mant == 0:
	case exp < -22 || exp > 22:
		return 0, false
	case exp < 0:
		f /= pow10[-exp]
	default:
		f *= pow10[exp]
	}
	if neg {
		f = -f
	}
	return f, true
}

// plainDigits reads a value of 1 to 15 ASCII digits and nothing else (most
// step numbers and counts) exactly as ParseFloat does, without its general path.
func plainDigits(v string) (float64, bool) {
	if len(v) == 0 || len(v) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return float64(n), true
}

// integer reads a printed integer ("  128", "8,192", "121" and also "121.0").
func integer(v string) (int, bool) {
	f, finite, ok := number(v)
	if !ok || !finite || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

func ptr[T any](v T) *T { return &v }

// stepBuf is a Step being read from its line, with room for the values its
// pointer fields point to: a step line costs no heap value per field. The parser
// reuses one stepBuf for every line, so a Step read into it is only valid until
// the next line; what outlives the line (the steps kept in full, the curve's
// points) is copied out by Step.owned and curve.add.
type stepBuf struct {
	Step
	floats [20]float64
	ints   [8]int
	nf, ni int
	extras map[string]string
}

// float returns a pointer to v in the buffer's room (on the heap once the room is
// used up, by a line that prints the same key over and over).
func (b *stepBuf) float(v float64) *float64 {
	if b.nf == len(b.floats) {
		return ptr(v)
	}
	p := &b.floats[b.nf]
	b.nf++
	*p = v
	return p
}

func (b *stepBuf) int(v int) *int {
	if b.ni == len(b.ints) {
		return ptr(v)
	}
	p := &b.ints[b.ni]
	b.ni++
	*p = v
	return p
}

// owned returns s with every pointer field pointing to a copy of its own, for a
// step read into a stepBuf that is kept beyond its line.
func (s Step) owned() Step {
	var fs [16]float64
	var is [5]int
	nf, ni := 0, 0
	for _, f := range []**float64{&s.StepTimeSeconds, &s.Loss, &s.LearningRate, &s.GradNorm, &s.LossScale,
		&s.TFLOPsPerGPU, &s.TokensPerSecondPerGPU, &s.MFUPercent, &s.ConsumedSamples,
		&s.MemAllocatedMiB, &s.MemMaxAllocatedMiB, &s.MemReservedMiB, &s.MemMaxReservedMiB,
		&s.MemDeviceUsedMiB, &s.MemDeviceTotalMiB, &s.MemUsedFraction} {
		if *f != nil {
			fs[nf] = **f
			nf++
		}
	}
	for _, i := range []**int{&s.TotalSteps, &s.Epoch, &s.GlobalBatchSize, &s.SkippedIterations, &s.NaNIterations} {
		if *i != nil {
			is[ni] = **i
			ni++
		}
	}
	// one allocation for the floats and one for the ints, whatever their number
	// the timestamp and the unmapped keys and values are views of the line
	s.Timestamp = strings.Clone(s.Timestamp)
	if s.Extra != nil {
		extra := make(map[string]string, len(s.Extra))
		for k, v := range s.Extra {
			extra[strings.Clone(k)] = strings.Clone(v)
		}
		s.Extra = extra
	}
	fh := append([]float64(nil), fs[:nf]...)
	ih := append([]int(nil), is[:ni]...)
	nf, ni = 0, 0
	for _, f := range []**float64{&s.StepTimeSeconds, &s.Loss, &s.LearningRate, &s.GradNorm, &s.LossScale,
		&s.TFLOPsPerGPU, &s.TokensPerSecondPerGPU, &s.MFUPercent, &s.ConsumedSamples,
		&s.MemAllocatedMiB, &s.MemMaxAllocatedMiB, &s.MemReservedMiB, &s.MemMaxReservedMiB,
		&s.MemDeviceUsedMiB, &s.MemDeviceTotalMiB, &s.MemUsedFraction} {
		if *f != nil {
			*f = &fh[nf]
			nf++
		}
	}
	for _, i := range []**int{&s.TotalSteps, &s.Epoch, &s.GlobalBatchSize, &s.SkippedIterations, &s.NaNIterations} {
		if *i != nil {
			*i = &ih[ni]
			ni++
		}
	}
	return s
}

// setFloat stores a printed value into *dst, noting nan/inf under name. It reports
// whether the value was a number at all.
func (s *stepBuf) setFloat(dst **float64, name, raw string, scale float64) bool {
	f, finite, ok := number(raw)
	if !ok {
		return false
	}
	if !finite {
		s.NonFinite = append(s.NonFinite, name)
		*dst = nil
		return true
	}
	if scale > 0 && scale < 1 {
		// divide by the exact reciprocal: 6843.1 ms -> 6.8431 s, not 6.843100000000001
		*dst = s.float(f / math.Round(1/scale))
		return true
	}
	*dst = s.float(f * scale)
	return true
}

func (s *stepBuf) setInt(dst **int, raw string) bool {
	n, ok := integer(raw)
	if ok {
		*dst = s.int(n)
	}
	return ok
}

// extra keeps an unmapped key with its printed value, in the buffer's map (emptied
// for each step that uses it; Step.owned copies it).
func (s *stepBuf) extra(key, raw string) {
	if s.Extra == nil {
		if s.extras == nil {
			s.extras = map[string]string{}
		}
		clear(s.extras)
		s.Extra = s.extras
	}
	if len(s.Extra) < maxExtraKeys {
		s.Extra[key] = strings.TrimSpace(raw)
	}
}

// maxExtraKeys bounds the unknown keys kept per step, so one absurd line cannot
// grow memory without limit.
const maxExtraKeys = 64
