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
	for _, unit := range []string{"GiB", "GB", "MiB", "MB", "s"} {
		if strings.HasSuffix(v, unit) && len(v) > len(unit) {
			v = v[:len(v)-len(unit)]
			break
		}
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

// setFloat stores a printed value into *dst, noting nan/inf under name. It reports
// whether the value was a number at all.
func (s *Step) setFloat(dst **float64, name, raw string, scale float64) bool {
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
		*dst = ptr(f / math.Round(1/scale))
		return true
	}
	*dst = ptr(f * scale)
	return true
}

func (s *Step) setInt(dst **int, raw string) bool {
	n, ok := integer(raw)
	if ok {
		*dst = ptr(n)
	}
	return ok
}

// extra keeps an unmapped key with its printed value.
func (s *Step) extra(key, raw string) {
	if s.Extra == nil {
		s.Extra = map[string]string{}
	}
	if len(s.Extra) < maxExtraKeys {
		s.Extra[key] = strings.TrimSpace(raw)
	}
}

// maxExtraKeys bounds the unknown keys kept per step, so one absurd line cannot
// grow memory without limit.
const maxExtraKeys = 64
