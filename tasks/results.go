package tasks

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/compare/figure"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/tasks/results"
)

// The results targets: the work is in package tasks/results; here the
// workspace hands it the configured folders, the cache, the shared store's
// results and, for verify:result, what this checkout recomputes of a run.

// resultSources is where compare and compare:history read results: OUTPUT_DIR,
// dirs and the cache.
func (w *Workspace) resultSources(dirs []string) results.Sources {
	return results.Sources{Root: w.root, OutDir: w.path("OUTPUT_DIR"), Dirs: dirs, Cache: w.cache, HistoryThreshold: w.config.get("HISTORY_THRESHOLD"), TargetLoss: w.config.get("TARGET_LOSS"),
		Plot: w.program(figure.Program)}
}

// compareTask is compare over OUTPUT_DIR, dirs, the cache and RIVAL_STORE
// (results.CompareTask), after deps.
func (w *Workspace) compareTask(dirs []string, deps ...*dag.Task) (*dag.Task, error) {
	return w.compareTaskFrom(w.resultSources(dirs), deps...)
}

// compareTaskFrom is compareTask over src.
func (w *Workspace) compareTaskFrom(src results.Sources, deps ...*dag.Task) (*dag.Task, error) {
	defaults := map[string]string{}
	for _, k := range configKeyDocs() {
		defaults[k.Name] = k.Default
	}
	return results.CompareTask(src, w.remote.Results, defaults, deps...)
}

// reportCompare prints compare's console summary on out and where the files are.
func (w *Workspace) reportCompare(t *dag.Task, out io.Writer) {
	results.ReportCompare(t, w.root, out, w.out)
}

// CompareTarget runs compare over OUTPUT_DIR, the cache and dirs.
func (w *Workspace) CompareTarget(ctx context.Context, dirs []string) error {
	t, err := w.compareTask(dirs)
	if err != nil {
		return err
	}
	if err := w.runner.Run(ctx, t); err != nil {
		return err
	}
	var sb strings.Builder
	w.reportCompare(t, &sb)
	fmt.Fprint(os.Stdout, sb.String())
	return nil
}

// HistoryTarget runs compare:history over OUTPUT_DIR, the cache and dirs and
// prints each step's ratio, interval and verdict.
func (w *Workspace) HistoryTarget(ctx context.Context, dirs []string) error {
	t, err := results.HistoryTask(w.resultSources(dirs))
	if err != nil {
		return err
	}
	if err := w.runner.Run(ctx, t); err != nil {
		return err
	}
	results.ReportHistory(t, w.root, w.out)
	return nil
}

// ExtractTarget is the extract target: results.Extract to out, explained on
// errOut with -v (verbose) or EXTRACT_VERBOSE.
func ExtractTarget(logfile string, verbose bool, out, errOut io.Writer) error {
	var explain io.Writer
	if verbose || processEnvironment().extractVerbose() {
		explain = errOut
	}
	return results.Extract(logfile, rivalVersion, out, explain)
}

// VerifyResults implements verify:result: one file is checked against
// this workspace, two files against each other. Any mismatch is an error.
// A path may be a store:ID reference.
func (w *Workspace) VerifyResults(ctx context.Context, paths []string, out io.Writer) error {
	datas := make([][]byte, len(paths))
	for i, p := range paths {
		d, err := w.readResultArg(p)
		if err != nil {
			return fmt.Errorf("verify:result: %w", err)
		}
		datas[i] = d
	}
	if len(paths) == 1 {
		rec, err := compare.ReadResult(datas[0]) // the one parse: every check reads rec
		if err != nil {
			return err
		}
		run, fps := w.verifyRunFor(rec)
		return results.VerifyResult(ctx, out, w.cache, paths[0], rec, w.recompute(rec, run, fps))
	}
	return results.VerifyInputs(out, paths[0], paths[1], datas[0], datas[1])
}
