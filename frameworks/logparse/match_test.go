package logparse

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The expressions the hand-written matchers of match.go stand for: the
// matchers must return exactly what these return, on any input.
var (
	titanFieldRE     = regexp.MustCompile(`\b(step|loss|grad_norm|memory|tps|wps|tflops|mfu):\s*(\S+)`)
	megatronArgRE    = regexp.MustCompile(`(?:^|[\s:])([A-Za-z_][A-Za-z0-9_]*) \.{3,} (.*?)\s*$`)
	nemoProgressRE   = regexp.MustCompile(`Training epoch (\d+), iteration (\d+)/(\d+)`)
	rankLabelRE      = regexp.MustCompile(`^\s*(?:\[(?:rank|default)(\d+)\]:\s?|(\d+):\s)`)
	titanMemRE       = regexp.MustCompile(`^([0-9.]+)GiB\(([0-9.]+)%\)$`)
	memoryHeaderRE   = regexp.MustCompile(`\[Rank (\d+)\] \(after (\d+) iterations\) memory \(([A-Za-z]+)\)`)
	megatronSizesRE  = regexp.MustCompile(`([a-z-]+) size: (\d+)`)
	matcherSeedLines = []string{
		"step: 20  loss: 11.83506  grad_norm:  9.6669  memory: 48.87GiB(51.44%)  tps: 4,376  tflops: 253.41  mfu: 25.62%",
		"xstep: 1 loss:2 mfu:\t3% memory:", "step:   ", "validate step: 3 loss: 1", "é step: 1 mfu: \xff%",
		"  global_batch_size ............................. 128", ":a ... b", "a ... b \n ", "a ... b\nc ... d", "x-a ... 1 b ... 2",
		"9a ... 1", "a .. 1", "a ....x 1", "a ...  1  \t", "[...][rank-0/8][INFO ] [---arguments.py:12] :   seq_length ... 4096",
		"Training epoch 0, iteration 120/149 | lr: 3e-05", "Training epoch Training epoch 1, iteration 2/3", "Training epoch 1, iteration 2/",
		"[Rank 1] (after 1 iterations) memory (MB) | allocated: 1", "[Rank [Rank 0] (after 10 iterations) memory (GB)",
		"[Rank 1] (after 1 iterations) memory ()", "[Rank 1] (after 1 iterations) memory (MB", "[Rank ] (after 1 iterations) memory (MB)",
		"using world size: 8, data-parallel size: 8, context-parallel size: 1, hierarchical context-parallel sizes: None",
		"a size: 12b-x size: 3", " size: 1", "ab size: x-c size: 5", "A size: 1", "x size: size: 2", "world size: 8size: 9",
		"48.87GiB(51.44%)", "9.46GiB(64.99%)", "..GiB(.%)", "1GiB(2%)x", "1GiB(%)", "GiB(1%)", "1GB(2%)", "1GiB(2%",
		"step:1 xmfu: 2 _loss: 3 9tps: 4 tps:5 é tflops:6", "[rank3]: x", "[default12]:y", " \t[rank1]:\n", "3: hello", "3:hello", "[rank]: x", "12:", "[rank0]:[rank1]: z",
	}
)

func checkMatchers(t *testing.T, s string) {
	t.Helper()
	var want []kv
	for _, m := range titanFieldRE.FindAllStringSubmatch(s, -1) {
		want = append(want, kv{m[1], m[2]})
	}
	require.Equal(t, want, titanFields(nil, s), "titanFields(%q)", s)

	name, value, ok := megatronArgMatch(s)
	if m := megatronArgRE.FindStringSubmatch(s); m != nil {
		require.True(t, ok, "megatronArgMatch(%q)", s)
		require.Equal(t, []string{m[1], m[2]}, []string{name, value}, "megatronArgMatch(%q)", s)
	} else {
		require.False(t, ok, "megatronArgMatch(%q) = %q, %q", s, name, value)
	}

	var m8 [8]int
	require.Equal(t, nemoProgressRE.FindStringSubmatchIndex(s), nemoProgressMatch(s, &m8), "nemoProgressMatch(%q)", s)
	var m6 [6]int
	require.Equal(t, rankLabelRE.FindStringSubmatchIndex(s), rankLabelMatch(s, &m6), "rankLabelMatch(%q)", s)

	gib, pct, ok := titanMemMatch(s)
	if m := titanMemRE.FindStringSubmatch(s); m != nil {
		require.True(t, ok, "titanMemMatch(%q)", s)
		require.Equal(t, []string{m[1], m[2]}, []string{gib, pct}, "titanMemMatch(%q)", s)
	} else {
		require.False(t, ok, "titanMemMatch(%q) = %q, %q", s, gib, pct)
	}
	// the memory value as titanLine sees it: one field of the line
	for _, f := range titanFields(nil, s) {
		gib, pct, ok := titanMemMatch(f.val)
		m := titanMemRE.FindStringSubmatch(f.val)
		require.Equal(t, m != nil, ok, "titanMemMatch(%q)", f.val)
		if ok {
			require.Equal(t, []string{m[1], m[2]}, []string{gib, pct}, "titanMemMatch(%q)", f.val)
		}
	}
	require.Equal(t, strings.TrimLeft(s, " \t"), trimBlank(s), "trimBlank(%q)", s)

	require.Equal(t, memoryHeaderRE.FindStringSubmatchIndex(s), memoryHeaderMatch(s, &m8), "memoryHeaderMatch(%q)", s)
	want = nil
	for _, m := range megatronSizesRE.FindAllStringSubmatch(s, -1) {
		want = append(want, kv{m[1], m[2]})
	}
	require.Equal(t, want, sizeFields(nil, s), "sizeFields(%q)", s)
}

func TestMatchersEqualExpressions(t *testing.T) {
	lines := append([]string{}, matcherSeedLines...)
	for _, dir := range []string{"testdata/real", "testdata/corpus", "testdata/built"} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".log") {
				b, err := os.ReadFile(dir + "/" + e.Name())
				require.NoError(t, err)
				lines = append(lines, strings.Split(string(b), "\n")...)
			}
		}
	}
	for _, s := range lines {
		checkMatchers(t, s)
	}
}

func FuzzMatchers(f *testing.F) {
	for _, s := range matcherSeedLines {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkMatchers(t, s) })
}
