package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// editResult rewrites the result at path with edit applied, at a new path.
func editResult(t *testing.T, path, name string, edit func(map[string]any)) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var r map[string]any
	require.NoError(t, json.Unmarshal(data, &r))
	edit(r)
	out := filepath.Join(filepath.Dir(path), name)
	data, err = json.MarshalIndent(r, "", " ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out, data, 0o644))
	return out
}

// A result whose sequence length and tokens/s/GPU were changed by hand
// fails verify:result, which names the fields its own log disagrees with.
func TestVerifyResultRederivesFiguresFromItsLog(t *testing.T) {
	w, _ := newWorkspace(t, "")
	a := trainOnce(t, w)
	var out bytes.Buffer
	err := w.VerifyResults(context.Background(), []string{a}, &out)
	assert.Regexp(t, `(?m)^match\s+log\.digest`, out.String())
	assert.Regexp(t, `(?m)^match\s+measured figures\s+recorded \d+, workspace \d+ \(all \d+ figures re-derived from the log agree\)`, out.String())
	if err != nil {
		// This workspace has not encoded the data: only the inputs fail.
		assert.NotContains(t, err.Error(), "log")
		assert.NotContains(t, err.Error(), "performance_metrics")
	}

	var orig map[string]any
	data, err2 := os.ReadFile(a)
	require.NoError(t, err2)
	require.NoError(t, json.Unmarshal(data, &orig))
	require.NotEmpty(t, orig["log"].(map[string]any)["digest"], "every result records its log's digest")

	edited := editResult(t, a, "edited.json", func(r map[string]any) {
		tc := r["training_config"].(map[string]any)
		tc["sequence_length"] = tc["sequence_length"].(float64) * 2
		pm := r["performance_metrics"].(map[string]any)
		pm["tokens_per_second_per_gpu"] = pm["tokens_per_second_per_gpu"].(float64) * 2
		pm["tokens_per_second"] = pm["tokens_per_second"].(float64) * 2
	})
	out.Reset()
	err = w.VerifyResults(context.Background(), []string{edited}, &out)
	require.Error(t, err, out.String())
	assert.Contains(t, err.Error(), "performance_metrics.tokens_per_second_per_gpu")
	require.Error(t, err, out.String())
	assert.Contains(t, err.Error(), "performance_metrics.tokens_per_second_per_gpu")
	assert.Regexp(t, `(?m)^mismatch\s+performance_metrics\.tokens_per_second_per_gpu`, out.String())
	assert.NotContains(t, out.String(), "reproduces every input")

	// A log that is not the one the result was built from.
	other := editResult(t, a, "other.json", func(r map[string]any) {
		r["log"].(map[string]any)["digest"] = "blake3:" + strings.Repeat("0", 64)
	})
	logs := filepath.Join(filepath.Dir(other), "logs")
	require.NoError(t, os.MkdirAll(logs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(logs, "other.log"), []byte("iteration 1/ 2 | elapsed time per iteration (ms): 10.0 |\n"), 0o644))
	out.Reset()
	err = w.VerifyResults(context.Background(), []string{other}, &out)
	require.Error(t, err)
	assert.Regexp(t, `(?m)^mismatch\s+log\.digest`, out.String())
	assert.Contains(t, out.String(), "is not the one this result was built from")

	// No digest recorded: not checkable, and said so.
	bare := editResult(t, a, "bare.json", func(r map[string]any) { delete(r["log"].(map[string]any), "digest") })
	out.Reset()
	require.Error(t, w.VerifyResults(context.Background(), []string{bare}, &out))
	assert.Contains(t, out.String(), "records no digest of its training log")
}

// compare:dir marks the results it could not check against their log and
// warns about one that disagrees with it.
func TestCompareMarksResultsCheckedAgainstTheirLog(t *testing.T) {
	w, _ := newWorkspace(t, "")
	a := trainOnce(t, w)
	editResult(t, a, "edited.json", func(r map[string]any) {
		pm := r["performance_metrics"].(map[string]any)
		pm["tokens_per_second_per_gpu"] = pm["tokens_per_second_per_gpu"].(float64) * 2
		pm["tokens_per_second"] = pm["tokens_per_second"].(float64) * 2
	})
	editResult(t, a, "bare.json", func(r map[string]any) {
		delete(r["log"].(map[string]any), "digest")
		r["step_times"].([]any)[0] = 99.0 // another run, not a copy
	})
	ct, err := w.compareTask(nil)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), ct))
	report, err := os.ReadFile(ct.Outputs[0].Path)
	require.NoError(t, err)
	md := string(report)
	assert.Contains(t, md, "DISAGREES with its training log (performance\\_metrics.tokens\\_per\\_second, performance\\_metrics.tokens\\_per\\_second\\_per\\_gpu)")
	assert.Contains(t, md, "disagrees with its own training log")
	assert.Contains(t, md, "not checked against its training log: the result records no digest")
	assert.Contains(t, md, "checked against its training log: every measured figure agrees")
	assert.Contains(t, md, "1 result could not be checked against its training log")
}

// compare:dir on a folder that does not exist says so, apart from the
// message of an empty folder, and suggests commands as the README spells them.
func TestCompareDirMissingFolder(t *testing.T) {
	w, _ := newWorkspace(t, "")
	missing := filepath.Join(t.TempDir(), "no-such-folder")
	err := w.CompareTarget(context.Background(), []string{missing})
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing+" does not exist")
	assert.NotContains(t, err.Error(), "no results to compare")

	empty := t.TempDir()
	err = w.CompareTarget(context.Background(), []string{empty})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no results to compare")
	assert.Contains(t, err.Error(), "`go run mage.go demo`")
	assert.NotContains(t, err.Error(), "`mage ", "the README never installs a mage binary")
}

// purge says when an output folder held nothing to remove.
func TestPurgeSaysWhenNothingWasRemoved(t *testing.T) {
	w, out := newWorkspace(t, "")
	w.markOwnDirs()
	require.NoError(t, os.MkdirAll(w.path("OUTPUT_DIR"), 0o755))
	w.markOwnDirs()
	require.NoError(t, w.Purge(false))
	assert.Contains(t, out.String(), "nothing to remove")
	assert.NotContains(t, out.String(), "removed the empty folder", "this invocation made the folder")
	assert.NotContains(t, out.String(), "purge: removed")
}
