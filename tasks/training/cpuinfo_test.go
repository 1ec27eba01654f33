package training

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCPUDescription(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "cpuinfo", name))
		require.NoError(t, err)
		return b
	}
	for _, tc := range []struct {
		name           string
		in             []byte
		model          string
		cores, logical int
		ok             bool
	}{
		{"two cores, four threads", read("two-cores-four-threads.txt"), "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz", 2, 4, true},
		{"one block", read("no-bf16.txt"), "AMD EPYC", 1, 1, true},
		{"no core ids", []byte("processor\t: 0\nmodel name\t: Neoverse\n\nprocessor\t: 1\nmodel name\t: Neoverse\n"), "Neoverse", 2, 2, true},
		{"no model name", []byte("processor\t: 0\nBogoMIPS\t: 50.00\n"), "unknown (no model name in cpuinfo)", 1, 1, true},
		{"empty", nil, "", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, cores, logical, ok := cpuDescription(tc.in)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.model, model)
			assert.Equal(t, tc.cores, cores)
			assert.Equal(t, tc.logical, logical)
		})
	}
}
