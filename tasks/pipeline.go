package tasks

import (
	"context"

	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/models"
)

// pipeline builds the configured DAG up to encode: fetch DATASET, filter
// it, fetch each model's tokenizer and encode the filtered corpus per model
// into <DATA_DIR>/<dataset>-<model>-train and -test.
type pipeline struct {
	Fetch, Filter *dag.Task
	Tokenizers    []*dag.Task
	Encodes       []*dag.Task
}

// buildPipeline assembles the tasks for the configured dataset and models.
func (w *Workspace) buildPipeline() (*pipeline, error) {
	name := w.Config.get("DATASET")
	fetch, err := w.fetchDatasetTask(name)
	if err != nil {
		return nil, err
	}
	filtered := w.path("DATA_DIR", "filtered", name+".jsonl")
	p := &pipeline{Fetch: fetch, Filter: w.filterTask(fetch.Outputs[0].Path, filtered, fetch)}
	for _, model := range w.Config.list("MODELS") {
		tt, err := w.fetchTokenizerTask(model)
		if err != nil {
			return nil, err
		}
		m, _ := models.Lookup(model)
		spec := tokenizerSpec{Path: tt.Outputs[0].Path, Model: &m, EOD: m.EOD}
		enc := w.encodeTask(filtered, spec, w.encodePrefix(name, model), w.Config.float("TRAIN_SPLIT"), p.Filter, tt)
		p.Tokenizers = append(p.Tokenizers, tt)
		p.Encodes = append(p.Encodes, enc)
	}
	return p, nil
}

// FetchTarget implements fetch: it downloads the configured dataset
// (DATASET, its first DATA_SAMPLES documents) and the tokenizer of every
// model in MODELS.
func (w *Workspace) FetchTarget(ctx context.Context) error {
	p, err := w.buildPipeline()
	if err != nil {
		return err
	}
	return w.Runner.Run(ctx, append([]*dag.Task{p.Fetch}, p.Tokenizers...)...)
}

// FilterTarget implements filter (filter:dataset): it fetches and filters
// the configured dataset, then reports what was kept.
func (w *Workspace) FilterTarget(ctx context.Context) error {
	p, err := w.buildPipeline()
	if err != nil {
		return err
	}
	if err := w.Runner.Run(ctx, p.Filter); err != nil {
		return err
	}
	w.reportFilter(p.Filter)
	return nil
}

// EncodeTarget implements encode (encode:datasets): it fetches and filters
// the configured dataset and encodes it for every model in MODELS into
// DATA_DIR/<dataset>-<model>-train and -test, then reports the filter and
// every dataset written.
func (w *Workspace) EncodeTarget(ctx context.Context) error {
	p, err := w.buildPipeline()
	if err != nil {
		return err
	}
	if err := w.Runner.Run(ctx, p.Encodes...); err != nil {
		return err
	}
	w.reportFilter(p.Filter)
	for _, e := range p.Encodes {
		w.reportEncode(e)
	}
	return nil
}
