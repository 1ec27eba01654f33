package gptorder

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNPYRoundTrip(t *testing.T) {
	cases := []struct {
		dt    npyDType
		shape []int
		vals  []int64
	}{
		{npyInt32, []int{3}, []int64{0, -1, math.MaxInt32}},
		{npyInt64, []int{2, 2}, []int64{0, 1, math.MaxInt64, -5}},
		{npyUint32, []int{4}, []int64{0, 1, math.MaxUint32, 7}},
		{npyInt32, []int{0}, nil},
	}
	for _, c := range cases {
		data := encodeNPY(c.dt, c.shape, c.vals)
		assert.Zero(t, (len(data)-len(c.vals)*c.dt.size)%64, "the header pads to 64 bytes as NumPy's does")
		vals, shape, err := decodeNPY("x.npy", data)
		require.NoError(t, err)
		assert.Equal(t, c.shape, shape)
		if len(c.vals) > 0 {
			assert.Equal(t, c.vals, vals)
		}
	}
}

func TestNPYRejectsBadFiles(t *testing.T) {
	good := encodeNPY(npyInt32, []int{2}, []int64{1, 2})
	cases := map[string][]byte{
		"empty":      nil,
		"bad magic":  append([]byte("\x93NUMPX"), good[6:]...),
		"truncated":  good[:len(good)-1],
		"fortran":    []byte("\x93NUMPY\x01\x00\x46\x00{'descr': '<i4', 'fortran_order': True, 'shape': (2,), }            \n"),
		"float":      encodeNPYHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }"),
		"scalar":     encodeNPYHeader("{'descr': '<i4', 'fortran_order': False, 'shape': (), }"),
		"big header": []byte("\x93NUMPY\x01\x00\xff\xff{"),
	}
	for name, data := range cases {
		_, _, err := decodeNPY("x.npy", data)
		assert.Error(t, err, name)
	}
}

func encodeNPYHeader(h string) []byte {
	h += "\n"
	return append(append([]byte("\x93NUMPY\x01\x00"), byte(len(h)), byte(len(h)>>8)), h...)
}

// decodeNPY never panics and accepts only what it can index.
func FuzzDecodeNPY(f *testing.F) {
	f.Add(encodeNPY(npyInt32, []int{3}, []int64{1, 2, 3}))
	f.Add(encodeNPY(npyInt64, []int{2, 2}, []int64{1, 2, 3, 4}))
	f.Add(encodeNPY(npyUint32, []int{1}, []int64{9}))
	f.Fuzz(func(t *testing.T, data []byte) {
		vals, shape, err := decodeNPY("fuzz.npy", data)
		if err != nil {
			return
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		if n != len(vals) {
			t.Fatalf("shape %v for %d values", shape, len(vals))
		}
	})
}
