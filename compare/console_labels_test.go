package compare_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/compare"
)

// demoResultsOn is the demo's six results (testdata/html) as if trained on
// a CPU named model, whose name joins the groups' labels.
func demoResultsOn(t *testing.T, model string) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "html", "train_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 6)
	var out [][]byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var r map[string]any
		require.NoError(t, json.Unmarshal(raw, &r))
		r["cpu_info"] = map[string]any{"model": model, "cores": 2, "logical_cpus": 2, "processes": 1, "threads_per_process": 1}
		b, err := json.Marshal(r)
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// consoleLabels are the group names of Console's rows, as printed.
func consoleLabels(t *testing.T, blobs [][]byte) []string {
	t.Helper()
	inputs, problems := compare.LoadFiles(context.Background(), nil, blobs)
	require.Empty(t, problems)
	rep, err := compare.Analyze(inputs, compare.DefaultPrices())
	require.NoError(t, err)
	var b strings.Builder
	rep.Console(&b)
	var labels []string
	for _, line := range strings.Split(b.String(), "\n") {
		if name, _, ok := strings.Cut(line, " n="); ok && strings.HasPrefix(line, "    ") {
			labels = append(labels, strings.TrimSpace(name))
		}
	}
	require.Len(t, labels, 2, b.String())
	return labels
}

// Console's group column never cuts a word: a label that fits a wider
// column is shown whole, and a longer one loses whole words, marked "…".
func TestConsoleLabelsKeepWholeWords(t *testing.T) {
	labels := consoleLabels(t, demoResultsOn(t, "AMD EPYC 7B13 64-Core Processor"))
	assert.Equal(t, []string{"CPU (EPYC 7B13 64-Core) FSDP (ran one process)", "CPU (EPYC 7B13 64-Core) FSDP (ran DDP)"}, labels)

	full := "CPU (EPYC 7B13 64-Core Engineering Sample Revision B2) FSDP (ran one process)"
	labels = consoleLabels(t, demoResultsOn(t, "AMD EPYC 7B13 64-Core Engineering Sample Revision B2 Processor"))
	for _, l := range labels {
		require.True(t, strings.HasSuffix(l, "…"), l)
		kept := strings.TrimSuffix(l, "…")
		assert.LessOrEqual(t, len([]rune(l)), 48, l)
		require.True(t, strings.HasPrefix(full, kept), "%q is a prefix of the label", kept)
		assert.Equal(t, " ", full[len(kept):len(kept)+1], "%q ends at a word boundary", l)
	}
}
