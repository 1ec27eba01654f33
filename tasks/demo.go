package tasks

import (
	"context"
	"path/filepath"
)

// Demo runs the pipeline on the sample corpus in testdata/sample: filter
// it, then encode it with the bundled Mistral 7B tokenizer into a train and
// a test dataset under DATA_DIR, and verify them.
func (w *Workspace) Demo(ctx context.Context) error {
	in := filepath.Join(w.Root, "testdata", "sample", "corpus.jsonl")
	filtered := w.Path("DATA_DIR", "demo", "sample-filtered.jsonl")
	ft := w.FilterTask(in, filtered, nil)
	tok, err := w.ResolveTokenizer("mistral")
	if err != nil {
		return err
	}
	prefix := w.Path("DATA_DIR", "demo", "sample-mistral")
	et := w.EncodeTask(filtered, tok, prefix, w.Config.Float("TRAIN_SPLIT"), ft)
	if err := w.Runner.Run(ctx, et); err != nil {
		return err
	}
	w.ReportFilter(ft)
	w.ReportEncode(et)
	return w.VerifyData([]string{prefix + "-train", prefix + "-test"})
}
