package compare

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeWorkspace answers from maps, as a workspace whose inputs hash to these values.
type fakeWorkspace struct {
	dataset, tokenizer, config, image, entry map[string]string
	err                                      error
}

func (w fakeWorkspace) DatasetFingerprint(d, m string) (string, error) {
	return w.dataset[d+"/"+m], w.err
}
func (w fakeWorkspace) TokenizerFingerprint(m string) (string, error) { return w.tokenizer[m], nil }
func (w fakeWorkspace) ConfigFingerprint(p, f, m string) (string, error) {
	return w.config[p+"/"+f+"/"+m], nil
}
func (w fakeWorkspace) ImageDigest(p string) (string, error)       { return w.image[p], nil }
func (w fakeWorkspace) EntryScriptDigest(f string) (string, error) { return w.entry[f], nil }

func reproducing() fakeWorkspace {
	return fakeWorkspace{
		dataset:   map[string]string{"bc/llama": "ds-bc-1"},
		tokenizer: map[string]string{"llama": "tok-llama"},
		config:    map[string]string{"nvd/nemo/llama": "cfg-llama-1"},
		image:     map[string]string{"nvd": "sha256:img-nvd"},
		entry:     map[string]string{},
	}
}

func status(checks []FieldCheck) map[string]string {
	out := map[string]string{}
	for _, c := range checks {
		out[c.Field] = c.Status
	}
	return out
}

func TestVerifyResult(t *testing.T) {
	data, err := os.ReadFile("testdata/results/nvd_nemo_llama_0.json")
	require.NoError(t, err)

	checks, err := VerifyResult(data, reproducing())
	require.NoError(t, err)
	assert.Empty(t, Failed(checks), "%+v", checks)
	assert.Len(t, checks, 5)

	ws := reproducing()
	ws.dataset["bc/llama"] = "ds-bc-2"
	ws.entry["nemo"] = "sha256:entry"
	checks, err = VerifyResult(data, ws)
	require.NoError(t, err)
	st := status(checks)
	assert.Equal(t, StatusMismatch, st["dataset.fingerprint"])
	assert.Equal(t, StatusNotRecorded, st["provenance.entry_script_digest"], "the result has no provenance")
	assert.Equal(t, StatusMatch, st["tokenizer_fingerprint"])
	assert.Len(t, Failed(checks), 2)

	ws = reproducing()
	ws.err = errors.New("data/bc/llama.idx: no such file; run `mage encode`")
	checks, err = VerifyResult(data, ws)
	require.NoError(t, err)
	assert.Equal(t, StatusUnavailable, status(checks)["dataset.fingerprint"])

	// An old-suite result records no fingerprint at all: nothing can be proven.
	old, err := os.ReadFile("testdata/results/train_nvd_nemo_mistral.json")
	require.NoError(t, err)
	checks, err = VerifyResult(old, reproducing())
	require.NoError(t, err)
	assert.Equal(t, StatusNotRecorded, status(checks)["dataset.fingerprint"])
	assert.NotEmpty(t, Failed(checks))

	_, err = VerifyResult([]byte("{"), reproducing())
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
