package tasks

import (
	"context"
	"io"

	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/internal/live"
	"github.com/rivalbench/rival/tasks/data"
)

// The data targets: the work is in package data; here the workspace hands
// it the configured dataset, models, folders and settings.

// data is the configuration the data targets read, from config.env and the
// environment.
func (w *Workspace) data() data.Options {
	return data.Options{
		Root:           w.root,
		DataDir:        w.path("DATA_DIR"),
		Out:            w.out,
		Dataset:        w.config.get("DATASET"),
		Samples:        w.config.int("DATA_SAMPLES"),
		Models:         w.config.list("MODELS"),
		TrainSplit:     w.config.float("TRAIN_SPLIT"),
		FilterMinChars: w.config.get("FILTER_MIN_CHARS"),
		FilterMinWords: w.config.get("FILTER_MIN_WORDS"),
		EOD:            w.env.eod(),
		Hub:            w.hubClient,
		Documents:      hub.Documents{Parquet: w.program(hub.ParquetProgram)},
		Live:           func(out io.Writer) data.LiveLine { return live.New(out) },
	}
}

// hubClient is a Hub client for HF_ENDPOINT with the token from
// secrets.env or the environment.
func (w *Workspace) hubClient() (*hub.Client, error) {
	o := hub.OptionsFromEnv()
	o.Token = w.config.secret("HF_TOKEN")
	return hub.New(o)
}

// FetchTarget implements fetch: it downloads the configured dataset
// (DATASET, its first DATA_SAMPLES documents) and the tokenizer of every
// model in MODELS.
func (w *Workspace) FetchTarget(ctx context.Context) error {
	p, err := w.data().BuildPipeline()
	if err != nil {
		return err
	}
	return w.runner.Run(ctx, append([]*dag.Task{p.Fetch}, p.Tokenizers...)...)
}

// FilterTarget implements filter (filter:dataset): it fetches and filters
// the configured dataset, then reports what was kept.
func (w *Workspace) FilterTarget(ctx context.Context) error {
	d := w.data()
	p, err := d.BuildPipeline()
	if err != nil {
		return err
	}
	if err := w.runner.Run(ctx, p.Filter); err != nil {
		return err
	}
	d.ReportFilter(p.Filter)
	return nil
}

// EncodeTarget implements encode (encode:datasets): it fetches and filters
// the configured dataset and encodes it for every model in MODELS into
// DATA_DIR/<dataset>-<model>-train and -test, then reports the filter and
// every dataset written.
func (w *Workspace) EncodeTarget(ctx context.Context) error {
	d := w.data()
	p, err := d.BuildPipeline()
	if err != nil {
		return err
	}
	if err := w.runner.Run(ctx, p.Encodes...); err != nil {
		return err
	}
	d.ReportFilter(p.Filter)
	for _, e := range p.Encodes {
		d.ReportEncode(e)
	}
	return nil
}

// FilterFileTarget implements filter:file IN OUT: it filters any local
// JSONL corpus in into out (both relative to the current directory or
// absolute), then reports what was kept.
func (w *Workspace) FilterFileTarget(ctx context.Context, in, out string) error {
	d := w.data()
	t := d.FilterTask(absPath(in), absPath(out), nil)
	if err := w.runner.Run(ctx, t); err != nil {
		return err
	}
	d.ReportFilter(t)
	return nil
}

// EncodeFileTarget implements encode:file IN TOKENIZER OUT: it encodes any
// JSONL corpus in into out.bin and out.idx (in and out relative to the
// current directory or absolute) with tok, a tokenizer.json path or a model
// name (see data.Options.ResolveTokenizer), then reports the dataset written.
func (w *Workspace) EncodeFileTarget(ctx context.Context, in, tok, out string) error {
	d := w.data()
	ts, err := d.ResolveTokenizer(tok)
	if err != nil {
		return err
	}
	t := d.EncodeTask(absPath(in), ts, absPath(out), 0, nil)
	if err := w.runner.Run(ctx, t); err != nil {
		return err
	}
	d.ReportEncode(t)
	return nil
}

// ConfiguredDatasets lists the dataset prefixes config.env names: DATASET
// for every model in MODELS, train and test.
func (w *Workspace) ConfiguredDatasets() []string {
	d := w.data()
	var out []string
	for _, m := range d.Models {
		for _, s := range []string{"train", "test"} {
			out = append(out, d.DatasetPrefix(d.Dataset, m, s))
		}
	}
	return out
}

// VerifyData verifies every prefix, printing each fingerprint, and fails if
// any dataset is missing or wrong (data.Options.VerifyData).
func (w *Workspace) VerifyData(prefixes []string) error { return w.data().VerifyData(prefixes) }
