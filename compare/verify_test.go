package compare

import (
	"errors"
	"os"
	"testing"

	"github.com/rivalbench/rival/result"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reproducing is what a workspace that reproduces
// testdata/results/nvd_nemo_llama_0.json recomputes.
func reproducing() Recomputed {
	return Recomputed{
		DatasetFingerprint:   Recomputation{Value: "ds-bc-1"},
		TokenizerFingerprint: Recomputation{Value: "tok-llama"},
		ConfigFingerprint:    Recomputation{Value: "cfg-llama-1"},
		ImageDigest:          Recomputation{Value: "sha256:img-nvd"},
	}
}

// readResult reads a result fixture the way verify:result does.
func readResult(t *testing.T, path string) *result.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	r, err := ReadResult(data)
	require.NoError(t, err)
	return r
}

func status(checks []FieldCheck) map[string]string {
	out := map[string]string{}
	for _, c := range checks {
		out[c.Field] = c.Status
	}
	return out
}

func TestVerifyResult(t *testing.T) {
	rec := readResult(t, "testdata/results/nvd_nemo_llama_0.json")
	old := readResult(t, "testdata/results/train_nvd_nemo_mistral.json")
	noModel := readResult(t, "testdata/results/nvd_nemo_llama_0.json")
	noModel.Model.Name = nil
	for _, tc := range []struct {
		name   string
		r      *result.Result
		change func(*Recomputed)
		want   map[string]string // field: status, for the fields the case is about
		failed int
	}{
		{"reproduced", rec, func(*Recomputed) {}, map[string]string{
			"dataset.fingerprint": StatusMatch, "tokenizer_fingerprint": StatusMatch, "config_fingerprint": StatusMatch,
			"image_digest": StatusMatch, "provenance.entry_script_digest": StatusMatch,
		}, 0},
		{"another dataset, an entry script the result lacks", rec, func(g *Recomputed) {
			g.DatasetFingerprint.Value = "ds-bc-2"
			g.EntryScriptDigest.Value = "sha256:entry"
		}, map[string]string{
			"dataset.fingerprint": StatusMismatch, "provenance.entry_script_digest": StatusNotRecorded, "tokenizer_fingerprint": StatusMatch,
		}, 2},
		{"dataset not computable here", rec, func(g *Recomputed) {
			g.DatasetFingerprint = Recomputation{Err: errors.New("data/bc/llama.idx: no such file; run `mage encode`")}
		}, map[string]string{"dataset.fingerprint": StatusUnavailable}, 1},
		{"old suite: nothing recorded, nothing proven", old, func(*Recomputed) {}, map[string]string{
			"dataset.fingerprint": StatusNotRecorded,
		}, 4},
		{"no model recorded: the values are not of its run", noModel, func(*Recomputed) {}, map[string]string{
			"dataset.fingerprint": StatusNotRecorded, "tokenizer_fingerprint": StatusNotRecorded, "config_fingerprint": StatusNotRecorded,
			"image_digest": StatusMatch,
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := reproducing()
			tc.change(&got)
			checks := VerifyResult(tc.r, got)
			require.Len(t, checks, 5)
			st := status(checks)
			for f, want := range tc.want {
				assert.Equal(t, want, st[f], f)
			}
			assert.Len(t, Failed(checks), tc.failed, "%+v", checks)
		})
	}

	_, err := ReadResult([]byte("{"))
	assert.Error(t, err)
}

func TestCompareInputs(t *testing.T) {
	a, err := os.ReadFile("testdata/results/nvd_nemo_llama_0.json")
	require.NoError(t, err)
	b, err := os.ReadFile("testdata/results/amd_primus_llama_0.json")
	require.NoError(t, err)
	diffs, err := CompareInputs(a, b)
	require.NoError(t, err)
	fields := map[string]bool{}
	for _, d := range diffs {
		fields[d.Field] = d.HardwareBound
	}
	assert.Equal(t, map[string]bool{
		"platform": true, "gpu_info.spec_model": true, "hardware_fingerprint": true, "image_digest": true,
		"framework.name": false, "framework.version": false, "provenance.entry_script_digest": false,
	}, fields)
	var mism []string
	for _, d := range Mismatches(diffs) {
		mism = append(mism, d.Field)
	}
	assert.ElementsMatch(t, []string{"framework.name", "framework.version", "provenance.entry_script_digest"}, mism)

	// A run against itself differs only in what neither records.
	diffs, err = CompareInputs(a, a)
	require.NoError(t, err)
	require.Len(t, diffs, 1)
	assert.Equal(t, "provenance.entry_script_digest", diffs[0].Field)

	_, err = CompareInputs(a, []byte("not json"))
	assert.ErrorContains(t, err, "second result")
}
