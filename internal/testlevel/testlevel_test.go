package testlevel

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCase(t *testing.T) {
	for _, tc := range []struct {
		full string
		i    int
		runs bool
	}{
		{"", 0, true},
		{"", 1, false},
		{"", 3, true},
		{"1", 1, true},
		{"0", 1, false},
	} {
		t.Run(fmt.Sprintf("full=%q/case %d", tc.full, tc.i), func(t *testing.T) {
			t.Setenv(Env, tc.full)
			ran := false
			// Case skips through runtime.Goexit: observe it from an inner test.
			t.Run("inner", func(t *testing.T) {
				Case(t, tc.i, 0, 3)
				ran = true
			})
			assert.Equal(t, tc.runs, ran)
		})
	}
}
