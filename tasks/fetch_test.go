package tasks

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/hub/hubtest"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/tasks/data"
)

// fakeHub publishes what the configured pipeline needs: the Qwen and
// Mistral tokenizer files and a gzip'd C4-style shard.
func fakeHub(t *testing.T, docs int) *hubtest.Server {
	t.Helper()
	s := hubtest.New()
	t.Cleanup(s.Close)
	for _, name := range []string{"qwen", "mistral"} {
		m, err := models.Lookup(name)
		require.NoError(t, err)
		e := hub.TokenizerEntry(name, m.HFRepo, m.HFRevision, m.Gated)
		tok, err := os.ReadFile(map[string]string{"qwen": qwenTok, "mistral": mistralTok}[name])
		require.NoError(t, err)
		for _, f := range e.Files {
			content := []byte(`{"model_type": "` + name + `"}`)
			if f == "tokenizer.json" {
				content = tok
			}
			s.Add(hubtest.File{Repo: e.Repo, Revision: e.Revision, Path: f, Content: content, LFS: f == "tokenizer.json"})
		}
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for i := 0; i < docs; i++ {
		fmt.Fprintf(zw, `{"text":"Document %d has enough words to pass the filter because it keeps going and going with plain words for quite a while, more than one hundred characters.","timestamp":"2019-04-25T12:57:54Z","url":"https://example.com/%d"}`+"\n", i, i)
	}
	require.NoError(t, zw.Close())
	e, err := hub.Lookup("c4")
	require.NoError(t, err)
	s.Add(hubtest.File{Dataset: true, Repo: e.Repo, Revision: e.Revision, Path: e.Files[0], Content: buf.Bytes(), LFS: true})
	return s
}

func TestPipelineFetchFilterEncode(t *testing.T) {
	s := fakeHub(t, 50)
	t.Setenv("HF_ENDPOINT", s.URL())
	w, log := newWorkspace(t, "DATASET=c4\nMODELS=qwen,mistral\nDATA_SAMPLES=40\n")
	p, err := w.data().BuildPipeline()
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), p.Encodes...))
	assert.Equal(t, "tasks: 6 run, 0 cached", w.runner.Summary(), log.String())

	raw, err := os.ReadFile(p.Fetch.Outputs[0].Path)
	require.NoError(t, err)
	assert.Equal(t, 40, strings.Count(string(raw), "\n"), "DATA_SAMPLES caps the documents")
	for _, m := range []string{"qwen", "mistral"} {
		for _, split := range []string{"train", "test"} {
			fp, err := data.VerifyDataset(w.data().DatasetPrefix("c4", m, split))
			require.NoError(t, err)
			assert.EqualValues(t, map[string]int64{"train": 32, "test": 8}[split], fp.Documents)
		}
	}

	// A second run needs no network: every task is a cache hit.
	before := len(s.Hits())
	s.Close()
	w2, _ := newWorkspaceAt(t, w.root)
	p2, err := w2.data().BuildPipeline()
	require.NoError(t, err)
	require.NoError(t, w2.runner.Run(context.Background(), p2.Encodes...))
	assert.Equal(t, "tasks: 0 run, 6 cached", w2.runner.Summary())
	assert.Len(t, s.Hits(), before)
}

func TestFetchGatedWithoutTokenNamesTheFix(t *testing.T) {
	s := hubtest.New()
	t.Cleanup(s.Close)
	m, err := models.Lookup("llama")
	require.NoError(t, err)
	e := hub.TokenizerEntry("llama", m.HFRepo, m.HFRevision, m.Gated)
	for _, f := range e.Files {
		s.Add(hubtest.File{Repo: e.Repo, Revision: e.Revision, Path: f, Content: []byte("{}"), Gated: true})
	}
	t.Setenv("HF_ENDPOINT", s.URL())
	t.Setenv("HF_TOKEN", "")
	w, _ := newWorkspace(t, "MODELS=llama\n")
	p, err := w.data().BuildPipeline()
	require.NoError(t, err)
	task := p.Tokenizers[0]
	err = w.runner.Run(context.Background(), task)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HF_TOKEN")
	for _, o := range task.Outputs {
		assert.NoFileExists(t, o.Path)
	}

	// With the token in secrets.env it works, and the token is in no record.
	require.NoError(t, os.WriteFile(filepath.Join(w.root, "secrets.env"), []byte("HF_TOKEN="+hubtest.Token+"\n"), 0o600))
	w2, log := newWorkspaceAt(t, w.root)
	p, err = w2.data().BuildPipeline()
	require.NoError(t, err)
	task = p.Tokenizers[0]
	require.NoError(t, w2.runner.Run(context.Background(), task))
	assert.NotContains(t, log.String(), hubtest.Token)
	err = filepath.Walk(w2.cache.Dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			assert.NotContains(t, string(b), hubtest.Token, p)
		}
		return nil
	})
	require.NoError(t, err)
}

// The fetch, filter and encode targets, as `go run mage.go fetch`,
// `filter` and `encode` call them: each runs its part of the configured
// pipeline and reports it.
func TestPipelineTargets(t *testing.T) {
	s := fakeHub(t, 20)
	t.Setenv("HF_ENDPOINT", s.URL())
	w, log := newWorkspace(t, "DATASET=c4\nMODELS=qwen,mistral\nDATA_SAMPLES=10\n")
	ctx := context.Background()

	// fetch: the dataset's first DATA_SAMPLES documents and both tokenizers, nothing filtered.
	require.NoError(t, w.FetchTarget(ctx))
	assert.Equal(t, "tasks: 3 run, 0 cached", w.runner.Summary(), log.String())
	raw, err := os.ReadFile(w.path("DATA_DIR", "raw", "c4.jsonl"))
	require.NoError(t, err)
	assert.Equal(t, 10, strings.Count(string(raw), "\n"))
	for _, key := range []string{"qwen", "mistral"} {
		assert.FileExists(t, filepath.Join(w.path("DATA_DIR", "tokenizers", key), "tokenizer.json"))
	}
	assert.NoFileExists(t, w.path("DATA_DIR", "filtered", "c4.jsonl"))

	// filter: every fake document is long enough; the report names the task.
	require.NoError(t, w.FilterTarget(ctx))
	assert.Contains(t, log.String(), "filter data/raw/c4.jsonl: kept 10 of 10 documents")
	assert.FileExists(t, w.path("DATA_DIR", "filtered", "c4.jsonl"))

	// encode: TRAIN_SPLIT 0.8 of 10 documents is 8 train and 2 test, per model.
	log.Reset()
	require.NoError(t, w.EncodeTarget(ctx))
	assert.Contains(t, log.String(), "filter data/raw/c4.jsonl: kept 10 of 10 documents", "encode reports its filter too")
	for _, m := range []string{"qwen", "mistral"} {
		assert.Contains(t, log.String(), "data/c4-"+m+"-train: 8 documents, 8 sequences")
		assert.Contains(t, log.String(), "data/c4-"+m+"-test: 2 documents, 2 sequences")
	}
}

// DATASET=bc is the hub's parquet conversion: fetch reads it through the rival-parquet program,
// built on first use, and writes each row's text unchanged.
func TestFetchParquetDataset(t *testing.T) {
	s := fakeHub(t, 0)
	t.Setenv("HF_ENDPOINT", s.URL())
	type row struct {
		Text string `parquet:"text"`
	}
	var rows []row
	for i := range 30 {
		rows = append(rows, row{fmt.Sprintf("Book sentence %d, with \"quotes\", a tab\tand é.", i)})
	}
	var buf bytes.Buffer
	require.NoError(t, parquet.Write(&buf, rows, parquet.MaxRowsPerRowGroup(7)))
	e, err := hub.Lookup("bc")
	require.NoError(t, err)
	s.Add(hubtest.File{Dataset: true, Repo: e.Repo, Revision: e.Revision, Path: e.Files[0], Content: buf.Bytes(), LFS: true})

	w, log := newWorkspace(t, "DATASET=bc\nMODELS=qwen\nDATA_SAMPLES=20\n")
	p, err := w.data().BuildPipeline()
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(context.Background(), p.Fetch), log.String())
	raw, err := os.ReadFile(p.Fetch.Outputs[0].Path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	require.Len(t, lines, 20, "DATA_SAMPLES caps the rows")
	for i, line := range lines {
		var doc struct{ Text string }
		require.NoError(t, json.Unmarshal([]byte(line), &doc))
		assert.Equal(t, rows[i].Text, doc.Text)
	}
	assert.FileExists(t, w.program(hub.ParquetProgram).Path(), "built into the cache's bin folder")
}
