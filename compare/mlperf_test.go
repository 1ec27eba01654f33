package compare

import (
	"encoding/csv"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The published scores are the table mlcommons/logging's own scorer wrote
// (testdata/mlperf/score.py; gen_records.py turns it into mlperf_records.go).
func TestMLPerfRecordsAreTheScorersTable(t *testing.T) {
	f, err := os.Open("testdata/mlperf/llama31_8b-v5.1-scores.tsv")
	require.NoError(t, err)
	defer f.Close()
	rd := csv.NewReader(f)
	rd.Comma = '\t'
	rd.LazyQuotes = true
	rows, err := rd.ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	require.Len(t, MLPerfLlama31_8B, len(rows)-1)
	byPath := map[string]*MLPerfRecord{}
	for i := range MLPerfLlama31_8B {
		byPath[MLPerfLlama31_8B[i].Source.Path] = &MLPerfLlama31_8B[i]
	}
	for _, row := range rows[1:] {
		rec := byPath[row[col["source_path"]]]
		require.NotNil(t, rec, row[col["source_path"]])
		minutes, err := strconv.ParseFloat(row[col["minutes"]], 64)
		require.NoError(t, err)
		assert.Equal(t, minutes, rec.Minutes)
		assert.Equal(t, row[col["minutes"]], row[col["minutes_independent"]], "the scorer and the independent rule agree")
		n, _ := strconv.Atoi(row[col["accelerators_total"]])
		assert.Equal(t, n, rec.Accelerators)
		assert.Equal(t, row[col["commit"]], rec.Source.Commit)
		assert.True(t, strings.HasPrefix(row[col["precision"]], rec.Precision), "%s: %s", rec.Source.Path, row[col["precision"]])
		assert.Equal(t, "10/10", row[col["compliant_files"]])
	}
}
