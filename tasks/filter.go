package tasks

import (
	"bufio"
	"context"
	"fmt"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/corpus"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/safefile"
)

// filterVersion changes the key of every filter task when its rules change.
const filterVersion = "2"

// filterTask drops documents of in under the configured minimums, writing
// out. upstream, when not nil, is the task that produces in.
func (w *Workspace) filterTask(in, out string, upstream *dag.Task) *dag.Task {
	t := &dag.Task{
		ID:     "filter " + rel(w.Root, in),
		Params: map[string]string{"FILTER_MIN_CHARS": w.Config.get("FILTER_MIN_CHARS"), "FILTER_MIN_WORDS": w.Config.get("FILTER_MIN_WORDS")},
		Tools:  map[string]string{"filter": filterVersion},
		// Filtered text compresses well; the output is the next task's input.
		Outputs: []dag.Output{{Path: out, Compress: true}},
	}
	if upstream != nil {
		t.Deps = []*dag.Task{upstream}
	} else {
		t.Files = []string{in}
	}
	opts := corpus.FilterOptions{MinChars: w.Config.int("FILTER_MIN_CHARS"), MinWords: w.Config.int("FILTER_MIN_WORDS")}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		f, _, err := safefile.Open(in)
		if err != nil {
			return fmt.Errorf("filter: %w", err)
		}
		defer f.Close()
		var st corpus.FilterStats
		err = cache.WriteAtomic(out, 0o644, func(bw *bufio.Writer) error {
			var err error
			st, err = corpus.Filter(f, bw, opts)
			return err
		})
		if err != nil {
			return fmt.Errorf("filter %s: %w", in, err)
		}
		x.SetMeta(st)
		return nil
	}
	return t
}

// FilterFileTarget implements filter:file IN OUT: it filters any local
// JSONL corpus in into out (both relative to the current directory or
// absolute), then reports what was kept.
func (w *Workspace) FilterFileTarget(ctx context.Context, in, out string) error {
	t := w.filterTask(absPath(in), absPath(out), nil)
	if err := w.Runner.Run(ctx, t); err != nil {
		return err
	}
	w.reportFilter(t)
	return nil
}

// reportFilter prints what a finished filter task kept and dropped.
func (w *Workspace) reportFilter(t *dag.Task) {
	var st corpus.FilterStats
	if err := t.Meta(&st); err == nil && st.Read > 0 {
		w.printf("%s: %s\n", t.ID, st)
	}
}
