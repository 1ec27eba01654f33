package tasks

import (
	"context"
	"path/filepath"
)

// Demo runs what the pipeline has on the sample corpus in testdata/sample:
// filter it into OUTPUT_DIR/demo.
func (w *Workspace) Demo(ctx context.Context) error {
	in := filepath.Join(w.Root, "testdata", "sample", "corpus.jsonl")
	filtered := w.Path("OUTPUT_DIR", "demo", "sample-filtered.jsonl")
	ft := w.FilterTask(in, filtered, nil)
	if err := w.Runner.Run(ctx, ft); err != nil {
		return err
	}
	w.ReportFilter(ft)
	w.Printf("demo: filtered corpus at %s\n", rel(w.Root, filtered))
	return nil
}
