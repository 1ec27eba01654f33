// Package units reads and writes the sizes and ages users type into config.env and target
// arguments (500MB, 20GiB, 30d, 12h) and prints byte counts for people (1.5 GiB).
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseSize reads sizes such as 500MB, 20GiB, 1.5T, or a plain byte count.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10}, {"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a size (examples: 500MB, 20GiB)", s)
	}
	// 2^63 is the first float64 that does not fit an int64.
	if b := f * float64(mult); b >= math.Ldexp(1, 63) {
		return 0, fmt.Errorf("%q is more bytes than any disk holds (examples: 500MB, 20GiB)", s)
	} else {
		return int64(b), nil
	}
}

// ParseAge reads durations such as 30d, 12h, 90m.
func ParseAge(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if strings.HasSuffix(t, "d") {
		n, err := strconv.ParseFloat(strings.TrimSuffix(t, "d"), 64)
		if err != nil || !(n >= 0) || math.IsInf(n, 0) {
			return 0, fmt.Errorf("%q is not an age (examples: 30d, 12h)", s)
		}
		if ns := n * 24 * float64(time.Hour); ns < math.Ldexp(1, 63) {
			return time.Duration(ns), nil
		}
		return 0, fmt.Errorf("%q is longer than %s, the longest age (examples: 30d, 12h)", s, time.Duration(math.MaxInt64).Round(time.Hour))
	}
	d, err := time.ParseDuration(t)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age (examples: 30d, 12h)", s)
	}
	return d, nil
}

// Bytes formats n with a binary unit.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
