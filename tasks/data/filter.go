package data

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

// FilterTask drops documents of in under the configured minimums, writing
// out. upstream, when not nil, is the task that produces in.
func (o Options) FilterTask(in, out string, upstream *dag.Task) *dag.Task {
	t := &dag.Task{
		ID:     "filter " + rel(o.Root, in),
		Params: map[string]string{"FILTER_MIN_CHARS": o.FilterMinChars, "FILTER_MIN_WORDS": o.FilterMinWords},
		Tools:  map[string]string{"filter": filterVersion},
		// Filtered text compresses well; the output is the next task's input.
		Outputs: []dag.Output{{Path: out, Compress: true}},
	}
	if upstream != nil {
		t.Deps = []*dag.Task{upstream}
	} else {
		t.Files = []string{in}
	}
	opts := corpus.FilterOptions{MinChars: atoi(o.FilterMinChars), MinWords: atoi(o.FilterMinWords)}
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

// ReportFilter prints what a finished filter task kept and dropped.
func (o Options) ReportFilter(t *dag.Task) {
	var st corpus.FilterStats
	if err := t.Meta(&st); err == nil && st.Read > 0 {
		fmt.Fprintf(o.Out, "%s: %s\n", t.ID, st)
	}
}
