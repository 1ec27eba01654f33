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
)

// compareVersion changes compare's key when the report's computation changes.
const compareVersion = "6"

// CompareTask writes OUTPUT_DIR/report.md, compare.png and compare.svg
// (and report.html) from every result under OUTPUT_DIR, under src.Dirs, in
// the cache and in the shared store (storeResults, which gives every result
// of RIVAL_STORE as bytes, or none). configDefaults is each configuration
// key's default, which the report sets apart. It is keyed by its input
// results' digests, so it is a hit when no result changed.
func CompareTask(src Sources, storeResults func(context.Context) ([][]byte, error), configDefaults map[string]string, deps ...*dag.Task) (*dag.Task, error) {
	outDir := src.OutDir
	report := filepath.Join(outDir, "report.md")
	png, svg := filepath.Join(outDir, "compare.png"), filepath.Join(outDir, "compare.svg")
	page := filepath.Join(outDir, "report.html")
	t := &dag.Task{
		ID:      strings.TrimSpace("compare " + strings.Join(src.relDirs(), " ")),
		Deps:    deps,
		Params:  map[string]string{},
		Tools:   map[string]string{"compare": compareVersion},
		Outputs: []dag.Output{{Path: report, Compress: true}, {Path: png}, {Path: svg, Compress: true}, {Path: page, Compress: true}},
	}
	var blobs [][]byte
	var files []string
	var threshold, target float64
	var hasTarget bool
	t.Prepare = func(ctx context.Context) error {
		var err error
		if threshold, err = src.historyThreshold(); err != nil {
			return err
		}
		t.Params["HISTORY_THRESHOLD"] = fmt.Sprint(threshold)
		if target, hasTarget, err = compare.ParseTargetLoss(src.TargetLoss); err != nil {
			return fmt.Errorf("config %w", err)
		}
		if hasTarget {
			t.Params["TARGET_LOSS"] = fmt.Sprint(target)
		}
		files, err = resultFiles(outDir, src.Dirs)
		if err != nil {
			return err
		}
		// The figures and report are outputs of this task, not inputs.
		t.Files = files
		if blobs, err = cachedResults(src.Cache); err != nil {
			return err
		}
		// Every result of RIVAL_STORE too, each verified by its BLAKE3.
		shared, err := storeResults(ctx)
		if err != nil {
			return err
		}
		blobs = append(blobs, shared...)
		var digests []string
		for _, b := range blobs {
			digests = append(digests, cache.HashBytes(b).String())
		}
		sort.Strings(digests)
		t.Params["cached results"] = strings.Join(digests, ",")
		if _, err := compare.ParsePriceEnv(compare.DefaultPrices(), os.Environ()); err != nil {
			return err
		}
		for _, p := range priceEnv() {
			t.Params[p] = os.Getenv(p)
		}
		return nil
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		inputs, problems := compare.LoadFiles(ctx, files, blobs)
		if err := ctx.Err(); err != nil {
			return err
		}
		prices, err := compare.ParsePriceEnv(compare.DefaultPrices(), os.Environ())
		if err != nil {
			return err
		}
		rep, err := compare.Analyze(inputs, prices)
		if errors.Is(err, compare.ErrNoResults) && len(problems) > 0 {
			return noResultsBecause(problems)
		}
		if err != nil {
			return err
		}
		rep.Skipped = problems
		rep.SetLogChecks(logChecks(ctx, src.Cache, inputs))
		if err := rep.SetHistoryThreshold(threshold); err != nil {
			return err
		}
		rep.SetTarget(target, hasTarget)
		rep.ConfigDefaults = map[string]string{}
		for k, v := range configDefaults {
			rep.ConfigDefaults[k] = v
		}
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return err
		}
		if err := cache.WriteAtomic(report, 0o644, func(bw *bufio.Writer) error { return rep.WriteMarkdown(bw) }); err != nil {
			return err
		}
		fig, err := rep.Figure()
		if err != nil {
			return err
		}
		if err := figure.Draw(ctx, src.Plot, fig, png, svg); err != nil {
			return err
		}
		if err := cache.WriteAtomic(page, 0o644, func(bw *bufio.Writer) error { return rep.WriteHTML(bw) }); err != nil {
			return err
		}
		var console strings.Builder
		rep.Console(&console)
		rep.ConsoleConfigs(&console)
		rep.ConsoleHistory(&console)
		x.SetMeta(map[string]string{"console": console.String()})
		return nil
	}
	return t, nil
}

// ReportCompare prints the console summary of t, a CompareTask that ran, on
// console, and on out where its files are, relative to root.
func ReportCompare(t *dag.Task, root string, console, out io.Writer) {
	var meta map[string]string
	if err := t.Meta(&meta); err == nil {
		fmt.Fprint(console, meta["console"])
	}
	rel := func(i int) string { return dag.RelPath(root, t.Outputs[i].Path) }
	fmt.Fprintf(out, "compare: report %s and %s, plots %s and %s\n", rel(0), rel(3), rel(1), rel(2))
}

func priceEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PRICE_") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
