package logparse

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// numberOracle is number as it was written before its fast path (decimal): every
// value goes through strconv.ParseFloat. number must return what it returns, bit
// for bit, on any input.
func numberOracle(v string) (x float64, finite, ok bool) {
	v = strings.TrimSpace(v)
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
	v = strings.ReplaceAll(v, ",", "")
	if v == "" {
		return 0, false, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
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

var numberSeeds = []string{
	"812.3", " 9.150E-06 ", "13372.8/13364.7", "496.3 (avg 496.1)", "4,376", "1.2e+04", "153.81GB",
	"60.09%", "48.87GiB", "9.09s", "nan", "-inf", "N/A", "", "abc", "-0", "+0.0", "-0e5", ".5", "5.", ".",
	"1e", "1e+", "e5", "1.2.3", "0.000000000000000000000001", "9007199254740993", "9007199254740992",
	"900719925474099.3", "1e22", "1e23", "3e-22", "3e-23", "1,2.3,4", "1e,5", ",-5", "-,5", "1_000", "0x1p-2",
	"1e9999", "1e-9999", "0e99999", "123456789012345678901234567890", "0.1", "0.30000000000000004",
	"3.000000E-04", "1.0000000000000002", "2.2250738585072014e-308", "1.7976931348623157e308", "+.e1", "--1",
	"1e-4 ", "7,", ",", "%", "GiB", "1s", "12ms", "0000000000000000000001.5",
}

func checkNumber(t *testing.T, v string) {
	t.Helper()
	x, finite, ok := number(v)
	wx, wfinite, wok := numberOracle(v)
	require.Equal(t, []bool{wok, wfinite}, []bool{ok, finite}, "number(%q)", v)
	if math.IsNaN(wx) {
		require.True(t, math.IsNaN(x), "number(%q) = %v, want NaN", v, x)
		return
	}
	require.Equal(t, math.Float64bits(wx), math.Float64bits(x), "number(%q) = %v, want %v", v, x, wx)
}

// TestNumberEqualsParseFloat checks number against its oracle on the seeds and on
// every field of every log in testdata.
func TestNumberEqualsParseFloat(t *testing.T) {
	for _, s := range numberSeeds {
		checkNumber(t, s)
	}
	var files []string
	for _, d := range []string{"testdata/real", "testdata/corpus", "testdata/built"} {
		m, err := filepath.Glob(d + "/*.log")
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, field := range strings.FieldsFunc(string(b), func(r rune) bool { return r == '|' || r == ':' || r == '\n' || r == '=' }) {
			checkNumber(t, field)
			for _, w := range strings.Fields(field) {
				checkNumber(t, w)
			}
		}
	}
}

func FuzzNumber(f *testing.F) {
	for _, s := range numberSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkNumber(t, s) })
}
