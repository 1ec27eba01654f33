package gptorder

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// NumPy's .npy format, version 1.0: the magic, a little-endian uint16 header
// length, a Python dict literal padded with spaces to a 64-byte boundary and
// ended by a newline, then the array in C order.
var npyMagic = []byte("\x93NUMPY\x01\x00")

// npyDType is a little-endian integer dtype of NumPy: its descr and size.
type npyDType struct {
	descr string
	size  int
}

var (
	npyInt32  = npyDType{"<i4", 4}
	npyInt64  = npyDType{"<i8", 8}
	npyUint32 = npyDType{"<u4", 4}
)

// encodeNPY lays out vals (already range-checked for dt) with the shape.
func encodeNPY(dt npyDType, shape []int, vals []int64) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.Itoa(d)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	head := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dt.descr, sh)
	pad := 64 - (len(npyMagic)+2+len(head)+1)%64
	if pad == 64 {
		pad = 0
	}
	head += strings.Repeat(" ", pad) + "\n"
	out := make([]byte, 0, len(npyMagic)+2+len(head)+dt.size*len(vals))
	out = append(out, npyMagic...)
	out = binary.LittleEndian.AppendUint16(out, uint16(len(head)))
	out = append(out, head...)
	for _, v := range vals {
		switch dt.size {
		case 4:
			out = binary.LittleEndian.AppendUint32(out, uint32(v))
		default:
			out = binary.LittleEndian.AppendUint64(out, uint64(v))
		}
	}
	return out
}

var npyHeader = regexp.MustCompile(`^\{'descr': '(<i4|<i8|<u4)', 'fortran_order': False, 'shape': \(([0-9, ]*)\), *\} *\n$`)

// decodeNPY reads what encodeNPY writes (and what numpy.save writes for the
// same dtypes): a C-order little-endian integer array and its shape.
func decodeNPY(name string, data []byte) ([]int64, []int, error) {
	if len(data) < len(npyMagic)+2 || !bytes.Equal(data[:len(npyMagic)], npyMagic) {
		return nil, nil, fmt.Errorf("%s: not a version 1.0 .npy file", name)
	}
	hl := int(binary.LittleEndian.Uint16(data[len(npyMagic):]))
	body := len(npyMagic) + 2 + hl
	if body > len(data) {
		return nil, nil, fmt.Errorf("%s: header of %d bytes runs past the file's %d", name, hl, len(data))
	}
	m := npyHeader.FindStringSubmatch(string(data[len(npyMagic)+2 : body]))
	if m == nil {
		return nil, nil, fmt.Errorf("%s: header %q: want a C-order little-endian int32, int64 or uint32 array", name, data[len(npyMagic)+2:body])
	}
	dt := map[string]npyDType{"<i4": npyInt32, "<i8": npyInt64, "<u4": npyUint32}[m[1]]
	var shape []int
	count := 1
	for _, f := range strings.Split(m[2], ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		d, err := strconv.Atoi(f)
		if err != nil || d < 0 || d > 1<<40 {
			return nil, nil, fmt.Errorf("%s: shape %q is not a list of sizes", name, m[2])
		}
		shape = append(shape, d)
		count *= d
		if count > 1<<40 {
			return nil, nil, fmt.Errorf("%s: shape %q is too large", name, m[2])
		}
	}
	if len(shape) == 0 {
		return nil, nil, fmt.Errorf("%s: a scalar, not an array", name)
	}
	if want := count * dt.size; len(data)-body != want {
		return nil, nil, fmt.Errorf("%s: %d bytes of data, shape %v of %s needs %d", name, len(data)-body, shape, dt.descr, want)
	}
	vals := make([]int64, count)
	raw := data[body:]
	for i := range vals {
		switch dt {
		case npyInt32:
			vals[i] = int64(int32(binary.LittleEndian.Uint32(raw[4*i:])))
		case npyUint32:
			vals[i] = int64(binary.LittleEndian.Uint32(raw[4*i:]))
		default:
			vals[i] = int64(binary.LittleEndian.Uint64(raw[8*i:]))
		}
	}
	return vals, shape, nil
}
