package data

import (
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/models"
)

// Pipeline is the configured DAG up to encode: fetch DATASET, filter it,
// fetch each model's tokenizer and encode the filtered corpus per model
// into <DATA_DIR>/<dataset>-<model>-train and -test.
type Pipeline struct {
	Fetch, Filter *dag.Task
	Tokenizers    []*dag.Task
	Encodes       []*dag.Task
}

// BuildPipeline assembles the tasks for the configured dataset and models.
func (o Options) BuildPipeline() (*Pipeline, error) {
	name := o.Dataset
	fetch, err := o.fetchDatasetTask(name)
	if err != nil {
		return nil, err
	}
	filtered := o.dataPath("filtered", name+".jsonl")
	p := &Pipeline{Fetch: fetch, Filter: o.FilterTask(fetch.Outputs[0].Path, filtered, fetch)}
	for _, model := range o.Models {
		tt, err := o.fetchTokenizerTask(model)
		if err != nil {
			return nil, err
		}
		m, _ := models.Lookup(model)
		spec := TokenizerSpec{Path: tt.Outputs[0].Path, Model: &m, EOD: m.EOD}
		enc := o.EncodeTask(filtered, spec, o.encodePrefix(name, model), o.TrainSplit, p.Filter, tt)
		p.Tokenizers = append(p.Tokenizers, tt)
		p.Encodes = append(p.Encodes, enc)
	}
	return p, nil
}
