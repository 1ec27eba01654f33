package tasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/english"
)

// historyVersion changes compare:history's key when its computation changes.
const historyVersion = "1"

// historyThreshold reads HISTORY_THRESHOLD from the configuration.
func (w *Workspace) historyThreshold() (float64, error) {
	th, err := compare.ParseHistoryThreshold(w.Config.get("HISTORY_THRESHOLD"))
	if err != nil {
		return 0, fmt.Errorf("config %w", err)
	}
	return th, nil
}

// historyTask writes OUTPUT_DIR/history.md, and history.png and
// history.svg when a workload ran on more than one stack, host or date,
// from every result under OUTPUT_DIR, under dirs and in the cache. Like
// compare it is keyed by its input results' digests and HISTORY_THRESHOLD.
func (w *Workspace) historyTask(dirs []string, deps ...*dag.Task) (*dag.Task, error) {
	outDir := w.path("OUTPUT_DIR")
	report := filepath.Join(outDir, "history.md")
	png, svg := filepath.Join(outDir, "history.png"), filepath.Join(outDir, "history.svg")
	t := &dag.Task{
		ID:      strings.TrimSpace("compare:history " + strings.Join(relAll(w.Root, dirs), " ")),
		Deps:    deps,
		Params:  map[string]string{},
		Tools:   map[string]string{"compare:history": historyVersion},
		Outputs: []dag.Output{{Path: report, Compress: true}, {Path: png}, {Path: svg, Compress: true}},
	}
	var blobs [][]byte
	var files []string
	var threshold float64
	t.Prepare = func(ctx context.Context) error {
		var err error
		if threshold, err = w.historyThreshold(); err != nil {
			return err
		}
		t.Params["HISTORY_THRESHOLD"] = fmt.Sprint(threshold)
		if files, err = resultFiles(outDir, dirs); err != nil {
			return err
		}
		t.Files = files
		if blobs, err = w.cachedResults(); err != nil {
			return err
		}
		var digests []string
		for _, b := range blobs {
			digests = append(digests, cache.HashBytes(b).String())
		}
		sort.Strings(digests)
		t.Params["cached results"] = strings.Join(digests, ",")
		return nil
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		inputs, problems := compare.LoadFiles(ctx, files, blobs)
		if err := ctx.Err(); err != nil {
			return err
		}
		rep, err := compare.Analyze(inputs, compare.DefaultPrices())
		if errors.Is(err, compare.ErrNoResults) && len(problems) > 0 {
			return noResultsBecause(problems)
		}
		if err != nil {
			return err
		}
		rep.Skipped = problems
		if err := rep.SetHistoryThreshold(threshold); err != nil {
			return err
		}
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return err
		}
		if err := cache.WriteAtomic(report, 0o644, func(bw *bufio.Writer) error { return rep.WriteHistoryMarkdown(bw) }); err != nil {
			return err
		}
		if err := rep.WriteHistoryPlots(png, svg); err != nil {
			return err
		}
		var console strings.Builder
		if rep.History == nil {
			fmt.Fprintf(&console, "compare:history: %s; no workload ran on more than one software stack, host or date\n", english.Plural(len(rep.Inputs), "result"))
		}
		rep.ConsoleHistory(&console)
		x.SetMeta(map[string]string{"console": console.String()})
		return nil
	}
	return t, nil
}

// HistoryTarget runs compare:history over OUTPUT_DIR, the cache and dirs and
// prints each step's ratio, interval and verdict.
func (w *Workspace) HistoryTarget(ctx context.Context, dirs []string) error {
	t, err := w.historyTask(dirs)
	if err != nil {
		return err
	}
	if err := w.Runner.Run(ctx, t); err != nil {
		return err
	}
	var meta map[string]string
	if err := t.Meta(&meta); err == nil {
		fmt.Fprint(w.Out, meta["console"])
	}
	w.printf("compare:history: report %s, trend figure %s and %s\n", rel(w.Root, t.Outputs[0].Path), rel(w.Root, t.Outputs[1].Path), rel(w.Root, t.Outputs[2].Path))
	return nil
}
