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
		"llama": {"meta-llama/Llama-3.1-8B", true, []string{
			"https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/d04e592bb4f6aa9cfee91e2e20afa771667e1d4b/tokenizer.json",
			"https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/d04e592bb4f6aa9cfee91e2e20afa771667e1d4b/tokenizer_config.json",
			"https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/d04e592bb4f6aa9cfee91e2e20afa771667e1d4b/config.json",
		}},
		"qwen":    {"Qwen/Qwen2.5-7B", false, nil},
		"mistral": {"mistralai/Mistral-7B-v0.1", false, nil},
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
		if e.Type == hub.Model {
			assert.Equal(t, []string{"tokenizer.json", "tokenizer_config.json", "config.json"}, e.Files)
			assert.True(t, e.Pinned(), e.Name)
		} else {
			assert.NotEqual(t, hub.FormatAuto, e.Format, e.Name)
		}
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
	require.ErrorContains(t, err, `no entry "wiki" (known: bc, c4, llama, mistral, qwen)`)
}
