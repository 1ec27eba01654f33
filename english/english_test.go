package english_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rivalbench/rival/english"
)

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "GPU", "1 GPU"},
		{0, "GPU", "0 GPUs"},
		{8, "GPU", "8 GPUs"},
		{0, "result", "0 results"},
		{1, "process", "1 process"},
		{2, "process", "2 processes"},
		{3, "warm-up step", "3 warm-up steps"},
		{-1, "run", "-1 runs"},
	} {
		assert.Equal(t, tc.want, english.Plural(tc.n, tc.noun), "%d %q", tc.n, tc.noun)
	}
}
