package hub_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub"
)

func TestCatalog(t *testing.T) {
	cl, err := hub.New(hub.Options{})
	require.NoError(t, err)
	want := map[string]struct {
		repo  string
		gated bool
		urls  []string
	}{
		"bc": {"bookcorpus/bookcorpus", false, []string{
			"https://huggingface.co/datasets/bookcorpus/bookcorpus/resolve/refs%2Fconvert%2Fparquet/plain_text/train/0000.parquet",
		}},
		"c4": {"allenai/c4", false, []string{
			"https://huggingface.co/datasets/allenai/c4/resolve/1588ec454efa1a09f29cd18ddd04fe05fc8653a2/en/c4-train.00000-of-01024.json.gz",
		}},
	}
	entries := hub.Catalog()
	require.Len(t, entries, len(want))
	for _, e := range entries {
		w, ok := want[e.Name]
		require.True(t, ok, e.Name)
		assert.Equal(t, w.repo, e.Repo)
		assert.Equal(t, w.gated, e.Gated, e.Name)
		// Every revision is either a full commit SHA or a named ref with its reason.
		assert.True(t, e.Pinned() != (e.Why != ""), "%s: pinned=%v why=%q", e.Name, e.Pinned(), e.Why)
		assert.Equal(t, hub.Dataset, e.Type, e.Name)
		assert.NotEqual(t, hub.FormatAuto, e.Format, e.Name)
		var urls []string
		for _, r := range e.Requests() {
			u, err := cl.URL(r)
			require.NoError(t, err)
			urls = append(urls, u)
		}
		if w.urls != nil {
			assert.Equal(t, w.urls, urls)
		}
	}

	e, err := hub.Lookup("c4")
	require.NoError(t, err)
	e.Files[0] = "changed"
	again, err := hub.Lookup("c4")
	require.NoError(t, err)
	assert.Equal(t, "en/c4-train.00000-of-01024.json.gz", again.Files[0], "Lookup hands out copies")

	_, err = hub.Lookup("wiki")
	require.ErrorContains(t, err, `no entry "wiki" (known: bc, c4)`)
}

// A model's tokenizer entry: the three files encode needs, at the model's pinned commit, each with
// its resolve URL.
func TestTokenizerEntry(t *testing.T) {
	cl, err := hub.New(hub.Options{})
	require.NoError(t, err)
	e := hub.TokenizerEntry("llama", "meta-llama/Llama-3.1-8B", "d04e592bb4f6aa9cfee91e2e20afa771667e1d4b", true)
	assert.True(t, e.Pinned())
	assert.True(t, e.Gated)
	assert.Equal(t, hub.Model, e.Type)
	var urls []string
	for _, r := range e.Requests() {
		u, err := cl.URL(r)
		require.NoError(t, err)
		urls = append(urls, u)
	}
	assert.Equal(t, []string{
		"https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/d04e592bb4f6aa9cfee91e2e20afa771667e1d4b/tokenizer.json",
		"https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/d04e592bb4f6aa9cfee91e2e20afa771667e1d4b/tokenizer_config.json",
		"https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/d04e592bb4f6aa9cfee91e2e20afa771667e1d4b/config.json",
	}, urls)
	e.Files[0] = "changed"
	assert.Equal(t, "tokenizer.json", hub.TokenizerEntry("x", "o/r", "main", false).Files[0], "entries hand out copies")
}
