package data

import (
	"bufio"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/corpus"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/models"
)

// tokenizerDir is where the fetched tokenizer files of a tokenizer key
// (llama, qwen, mistral) live.
func (o Options) tokenizerDir(key string) string {
	return o.dataPath("tokenizers", key)
}

// fetchTokenizerTask downloads a model's tokenizer files (tokenizer.json,
// tokenizer_config.json, config.json) at the model's pinned revision (models.Model.HFRevision).
// Its key is what was asked, so a second fetch needs no network.
func (o Options) fetchTokenizerTask(model string) (*dag.Task, error) {
	m, err := models.Lookup(model)
	if err != nil {
		return nil, err
	}
	e := hub.TokenizerEntry(m.TokenizerKey, m.HFRepo, m.HFRevision, m.Gated)
	dir := o.tokenizerDir(e.Name)
	t := &dag.Task{
		ID:     "fetch tokenizer " + e.Name,
		Params: map[string]string{"repo": e.Repo, "revision": e.Revision, "files": strings.Join(e.Files, ",")},
	}
	for _, f := range e.Files {
		t.Outputs = append(t.Outputs, dag.Output{Path: filepath.Join(dir, filepath.FromSlash(f)), Compress: true})
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		c, err := o.Hub()
		if err != nil {
			return err
		}
		defer c.Close()
		for i, req := range e.Requests() {
			if _, err := c.Download(ctx, req, t.Outputs[i].Path); err != nil {
				return err
			}
		}
		return nil
	}
	return t, nil
}

// shardReaderVersion changes the fetch key when reading shards into JSONL
// changes: 2 is package jsonl (exact "text" key, strict UTF-8), as filter and
// encode read lines.
const shardReaderVersion = "2"

// fetchDatasetTask downloads a dataset's shards (resumable, under
// DATA_DIR/downloads) and writes its first DATA_SAMPLES documents as JSONL
// to DATA_DIR/raw/<name>.jsonl.
func (o Options) fetchDatasetTask(name string) (*dag.Task, error) {
	e, err := hub.Lookup(name)
	if err != nil {
		return nil, err
	}
	if e.Type != hub.Dataset {
		return nil, fmt.Errorf("fetch %s: not a dataset", name)
	}
	limit := o.Samples
	out := o.dataPath("raw", name+".jsonl")
	t := &dag.Task{
		ID: "fetch " + name,
		Params: map[string]string{"repo": e.Repo, "revision": e.Revision, "files": strings.Join(e.Files, ","),
			"DATA_SAMPLES": strconv.Itoa(limit)},
		Tools:   map[string]string{"shard reader": shardReaderVersion},
		Outputs: []dag.Output{{Path: out, Compress: true}},
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		c, err := o.Hub()
		if err != nil {
			return err
		}
		defer c.Close()
		var shards []string
		for _, req := range e.Requests() {
			dest := o.dataPath("downloads", e.Repo, filepath.FromSlash(req.File))
			d, err := c.Download(ctx, req, dest)
			if err != nil {
				return err
			}
			if !d.Verified {
				fmt.Fprintf(x.Log, "note: %s: the hub gave no sha256 for this file; kept unverified\n", req)
			}
			shards = append(shards, d.Path)
		}
		written := 0
		err = cache.WriteAtomic(out, 0o644, func(bw *bufio.Writer) error {
			cw := corpus.NewWriter(bw)
			for _, s := range shards {
				if written >= limit {
					break
				}
				n, err := o.Documents.Read(ctx, s, e.Format, limit-written, cw.Write)
				written += n
				if err != nil {
					return err
				}
			}
			return cw.Flush()
		})
		if err != nil {
			return fmt.Errorf("fetch %s: %w", name, err)
		}
		if written < limit {
			fmt.Fprintf(x.Log, "note: fetch %s: the shards hold %d documents, fewer than DATA_SAMPLES=%d\n", name, written, limit)
		}
		x.SetMeta(map[string]int{"documents": written})
		return nil
	}
	return t, nil
}
