package gptorder

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

const python = "/usr/bin/python3"

// needNumpy skips unless the system Python imports numpy; under
// RIVAL_REQUIRE_UPSTREAM=1 (CI) it fails instead.
func needNumpy(t *testing.T) {
	t.Helper()
	if err := exec.Command(python, "-c", "import numpy").Run(); err != nil {
		if os.Getenv("RIVAL_REQUIRE_UPSTREAM") == "1" {
			t.Fatalf("RIVAL_REQUIRE_UPSTREAM=1 but %s cannot import numpy: %v", python, err)
		}
		t.Skipf("%s with numpy checks the generator against NumPy (apt-get install python3-numpy): %v", python, err)
	}
}

// numpyJSON runs a NumPy program that prints JSON and decodes it.
func numpyJSON(t *testing.T, code string, args ...string) []int64 {
	t.Helper()
	out, err := exec.Command(python, append([]string{"-c", code}, args...)...).Output()
	require.NoError(t, err, "%s", out)
	var v []int64
	require.NoError(t, json.Unmarshal(out, &v))
	return v
}

// The state after seeding and the raw 32-bit stream equal RandomState's.
func TestRandomStateStreamMatchesNumpy(t *testing.T) {
	needNumpy(t)
	for _, seed := range []uint32{0, 1, 42, 1234, 4294967295} {
		t.Run(strconv.FormatUint(uint64(seed), 10), func(t *testing.T) {
			const code = `import sys, json, numpy as np
rs = np.random.RandomState(int(sys.argv[1]))
key = rs.get_state()[1].tolist()
raw = rs.randint(0, 2**32, size=2000, dtype=np.uint64).tolist()
print(json.dumps(key + raw))`
			want := numpyJSON(t, code, strconv.FormatUint(uint64(seed), 10))
			r := NewRandomState(seed)
			var got []int64
			for _, k := range r.mt {
				got = append(got, int64(k))
			}
			for range 2000 {
				got = append(got, int64(r.Uint32()))
			}
			require.Equal(t, want, got)
		})
	}
}

// Shuffle permutes as RandomState.shuffle does, for sizes that need one
// draw per element and sizes whose masks reject often (just above a power of
// two), and consecutive shuffles continue the same stream.
func TestShuffleMatchesNumpy(t *testing.T) {
	needNumpy(t)
	cases := []struct {
		seed  uint32
		sizes []int
	}{
		{0, []int{0, 1, 2, 3}},
		{1234, []int{10, 1000}},
		{42, []int{65, 129, 100000}},
		{7, []int{1 << 16, (1 << 16) + 1, 5}},
		{4294967295, []int{777}},
	}
	for _, c := range cases {
		t.Run(strconv.FormatUint(uint64(c.seed), 10), func(t *testing.T) {
			const code = `import sys, json, numpy as np
rs = np.random.RandomState(int(sys.argv[1]))
out = []
for n in sys.argv[2:]:
    a = np.arange(int(n), dtype=np.int32)
    rs.shuffle(a)
    out += a.tolist()
print(json.dumps(out))`
			args := []string{strconv.FormatUint(uint64(c.seed), 10)}
			for _, n := range c.sizes {
				args = append(args, strconv.Itoa(n))
			}
			want := numpyJSON(t, code, args...)
			r := NewRandomState(c.seed)
			got := []int64{}
			for _, n := range c.sizes {
				a := make([]int32, n)
				for i := range a {
					a[i] = int32(i)
				}
				Shuffle(r, a)
				for _, v := range a {
					got = append(got, int64(v))
				}
			}
			require.Equal(t, want, got)
		})
	}
}

// A shuffle consumes exactly as many draws as NumPy's: after it, the next raw
// values agree.
func TestShuffleLeavesNumpysState(t *testing.T) {
	needNumpy(t)
	const code = `import json, numpy as np
rs = np.random.RandomState(99)
rs.shuffle(np.arange(300, dtype=np.uint32))
print(json.dumps(rs.randint(0, 2**32, size=5, dtype=np.uint64).tolist()))`
	want := numpyJSON(t, code)
	r := NewRandomState(99)
	Shuffle(r, make([]uint32, 300))
	var got []int64
	for range 5 {
		got = append(got, int64(r.Uint32()))
	}
	require.Equal(t, want, got)
}
