package tasks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rivalbench/rival/tasks/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// badManifests are real manifests with one digest spoiled: cut short (a
// manifest truncated by hand or by a tool), emptied, or in capitals.
var badManifests = []struct {
	name, field string
	spoil       func(hex string) string
}{
	{"fingerprint cut to 8 digits", "fingerprint.digest", func(h string) string { return h[:8] }},
	{"fingerprint cut to 16 digits", "fingerprint.digest", func(h string) string { return h[:16] }},
	{"fingerprint empty", "fingerprint.digest", func(string) string { return "" }},
	{"fingerprint in capitals", "fingerprint.digest", strings.ToUpper},
	{"idx digest cut", "fingerprint.idx_blake3", func(h string) string { return h[:40] }},
	{"bin digest not hex", "fingerprint.bin_blake3", func(h string) string { return "zz" + h[2:] }},
	{"tokenizer digest cut", "tokenizer_blake3", func(h string) string { return h[:12] }},
	{"input digest one digit long", "input_blake3", func(h string) string { return h + "0" }},
}

// encodedPrefix encodes a three-document corpus with the Mistral tokenizer
// at prefix and returns the manifest the encoder wrote.
func encodedPrefix(t *testing.T, w *Workspace, prefix string) ([]byte, data.Manifest) {
	t.Helper()
	in := filepath.Join(w.root, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"text":"Hello world"}`+"\n"+`{"text":"Second document."}`+"\n"+`{"text":"A third."}`+"\n"), 0o644))
	tok, err := w.data().ResolveTokenizer(mistralTok)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), w.data().EncodeTask(in, tok, prefix, 0, nil)))
	raw, err := os.ReadFile(data.ManifestPath(prefix))
	require.NoError(t, err)
	var m data.Manifest
	require.NoError(t, json.Unmarshal(raw, &m))
	return raw, m
}

// spoil rewrites the manifest's field (by its JSON path) with bad(value).
func spoil(t *testing.T, path string, good []byte, field string, bad func(string) string) {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(good, &doc))
	obj, key := doc, field
	if parent, child, ok := strings.Cut(field, "."); ok {
		obj, key = doc[parent].(map[string]any), child
	}
	v, ok := obj[key].(string)
	require.True(t, ok, "the manifest has %s", field)
	obj[key] = bad(v)
	data, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// TestSlurmScriptRefusesBadManifestDigest: train:slurm-script names the
// dataset's index-cache folder after the manifest's fingerprint. A manifest
// whose digest is cut short or malformed is an error that names the file
// and the field, not a crash or a folder named after a fragment.
func TestSlurmScriptRefusesBadManifestDigest(t *testing.T) {
	t.Setenv("DP", "8")
	w, _ := newWorkspace(t, "")
	w.env = w.env.with(map[string]string{"SLURM_IMAGE": "", "GPUS_PER_NODE": "8"})
	w.config, _ = w.config.with("test", map[string]string{"DP": "8"})
	prefix := w.data().DatasetPrefix(w.config.get("DATASET"), "mistral", "train")
	good, m := encodedPrefix(t, w, prefix)
	script := func() (string, error) {
		return captureStdout(t, func() error {
			return w.SlurmScriptTarget(context.Background(), "amd", "mega", "mistral")
		})
	}

	out, err := script()
	require.NoError(t, err)
	// The folder is the fingerprint's first 16 hex digits.
	assert.Contains(t, out, filepath.Join("megatron-cache", m.Fingerprint.Digest.String()[:16]))

	for _, tc := range badManifests {
		t.Run(tc.name, func(t *testing.T) {
			spoil(t, data.ManifestPath(prefix), good, tc.field, tc.spoil)
			_, err := script()
			require.Error(t, err)
			assert.Contains(t, err.Error(), data.ManifestPath(prefix))
			assert.Contains(t, err.Error(), "field "+tc.field)
			assert.Contains(t, err.Error(), "go run mage.go encode")
		})
	}
}

// TestVerifyDataRefusesBadManifestDigest: verify:data checks the files
// against the manifest; a manifest whose own digests are malformed fails
// it, naming the file and the field, even where the files are intact.
func TestVerifyDataRefusesBadManifestDigest(t *testing.T) {
	w, _ := newWorkspace(t, "")
	prefix := filepath.Join(w.root, "data", "corpus")
	good, _ := encodedPrefix(t, w, prefix)
	_, err := data.VerifyDataset(prefix)
	require.NoError(t, err)

	for _, tc := range badManifests {
		t.Run(tc.name, func(t *testing.T) {
			spoil(t, data.ManifestPath(prefix), good, tc.field, tc.spoil)
			_, err := data.VerifyDataset(prefix)
			require.Error(t, err)
			assert.Contains(t, err.Error(), data.ManifestPath(prefix))
			assert.Contains(t, err.Error(), "field "+tc.field)
		})
	}
}
