package results

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/compare/figure"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/english"
)

// historyVersion changes compare:history's key when its computation changes.
const historyVersion = "1"

// HistoryTask writes OUTPUT_DIR/history.md, and history.png and
// history.svg when a workload ran on more than one stack, host or date,
// from every result under OUTPUT_DIR, under src.Dirs and in the cache. Like
// compare it is keyed by its input results' digests and HISTORY_THRESHOLD.
func HistoryTask(src Sources) (*dag.Task, error) {
	outDir := src.OutDir
	report := filepath.Join(outDir, "history.md")
	png, svg := filepath.Join(outDir, "history.png"), filepath.Join(outDir, "history.svg")
	t := &dag.Task{
		ID:      strings.TrimSpace("compare:history " + strings.Join(src.relDirs(), " ")),
		Params:  map[string]string{},
		Tools:   map[string]string{"compare:history": historyVersion},
		Outputs: []dag.Output{{Path: report, Compress: true}, {Path: png}, {Path: svg, Compress: true}},
	}
	var blobs [][]byte
	var files []string
	var threshold float64
	t.Prepare = func(ctx context.Context) error {
		var err error
		if threshold, err = src.historyThreshold(); err != nil {
			return err
		}
		t.Params["HISTORY_THRESHOLD"] = fmt.Sprint(threshold)
		if files, err = resultFiles(outDir, src.Dirs); err != nil {
			return err
		}
		t.Files = files
		if blobs, err = cachedResults(src.Cache); err != nil {
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
		fig, err := rep.HistoryFigure()
		if err != nil {
			return err
		}
		if err := figure.Draw(ctx, src.Plot, fig, png, svg); err != nil {
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

// ReportHistory prints on out the console summary of t, a HistoryTask that
// ran (each step's ratio, interval and verdict), and where its files are,
// relative to root.
func ReportHistory(t *dag.Task, root string, out io.Writer) {
	var meta map[string]string
	if err := t.Meta(&meta); err == nil {
		fmt.Fprint(out, meta["console"])
	}
	rel := func(i int) string { return dag.RelPath(root, t.Outputs[i].Path) }
	fmt.Fprintf(out, "compare:history: report %s, trend figure %s and %s\n", rel(0), rel(1), rel(2))
}
