package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/safefile"
	"github.com/rivalbench/rival/tasks/data"
)

// verifyRunFor is the run of this workspace that a result is checked
// against: of the runs its targets make of the result's platform,
// framework and model (train:<platform>'s, then the demo's), the one that
// reproduces most of the result's dataset and configuration, on a tie the
// one on the result's dataset, then the first. Choosing by what was
// recorded needs no record of which target ran: any run that reproduces
// every input proves the result reproducible here.
func (w *Workspace) verifyRunFor(r *result.Result) (plannedRun, *datasetFingerprints) {
	platform, model, dataset := strOrEmpty(r.Platform), strOrEmpty(r.Model.Name), strOrEmpty(r.Dataset.Name)
	fw := r.Framework.Name
	runs := []plannedRun{w.trainTargetRun(platform, fw, model, dataset)}
	if demo, err := w.demoRuns(); err == nil {
		for _, d := range demo {
			if d.Platform == platform && d.Framework == fw && d.Model == model {
				runs = append(runs, d)
			}
		}
	}
	fps := &datasetFingerprints{}
	best, bestScore := 0, -1
	for i, run := range runs {
		score := 0 // two per input reproduced, one for the result's dataset
		if r.Dataset.Fingerprint != nil && dataset != "" && model != "" {
			if got, err := fps.of(run.TrainPrefix); err == nil && got.String() == *r.Dataset.Fingerprint {
				score += 2
			}
		}
		if r.ConfigFingerprint != nil {
			if got, err := run.configFingerprint(); err == nil && got == *r.ConfigFingerprint {
				score += 2
			}
		}
		if run.Dataset == dataset {
			score++
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return runs[best], fps
}

// datasetFingerprints verifies each dataset once, however many runs train
// on it: VerifyDataset reads every token.
type datasetFingerprints struct {
	seen map[string]datasetFingerprint
}

type datasetFingerprint struct {
	digest indexed.Digest
	err    error
}

func (d *datasetFingerprints) of(prefix string) (indexed.Digest, error) {
	if f, ok := d.seen[prefix]; ok {
		return f.digest, f.err
	}
	var f datasetFingerprint
	if fp, err := data.VerifyDataset(prefix); err != nil {
		f.err = err
	} else {
		f.digest = fp.Digest
	}
	if d.seen == nil {
		d.seen = map[string]datasetFingerprint{}
	}
	d.seen[prefix] = f
	return f.digest, f.err
}

// recompute is, for verify:result, every input fingerprint of run (the run
// of this workspace result r is checked against) as this checkout and its
// cache give it.
func (w *Workspace) recompute(r *result.Result, run plannedRun, fps *datasetFingerprints) compare.Recomputed {
	var got compare.Recomputed
	// The dataset is read whole: only for a result that names what it
	// trained on (compare reports the others as not recorded).
	if strOrEmpty(r.Dataset.Name) != "" && strOrEmpty(r.Model.Name) != "" {
		if d, err := fps.of(run.TrainPrefix); err == nil {
			got.DatasetFingerprint.Value = d.String()
		} else if run.Variant != "" {
			// The demo's data comes from the demo, not from encode.
			got.DatasetFingerprint.Err = fmt.Errorf("%s: the demo's sample corpus is not encoded here: run `go run mage.go demo` first (it encodes and trains it)", run.TrainPrefix)
		} else {
			got.DatasetFingerprint.Err = err
		}
	}
	if spec, err := w.data().ResolveTokenizer(run.Model); err != nil && run.Variant != "" {
		got.TokenizerFingerprint.Err = fmt.Errorf("no tokenizer for %s here: run `go run mage.go demo` first (it writes the tokenizer it trains with)", run.Model)
	} else if err != nil {
		got.TokenizerFingerprint.Err = err
	} else {
		d, _, err := w.Cache.FileDigest(spec.Path)
		got.TokenizerFingerprint = compare.Recomputation{Value: d.String(), Err: err}
	}
	got.ConfigFingerprint.Value, got.ConfigFingerprint.Err = run.configFingerprint()
	if rec, err := readImageRecord(w.path("DATA_DIR", "images", run.Platform+".json")); !errors.Is(err, os.ErrNotExist) {
		got.ImageDigest = compare.Recomputation{Value: rec.ImageID, Err: err}
	}
	got.EntryScriptDigest.Value, got.EntryScriptDigest.Err = frameworks.EntryScriptDigest(run.Framework)
	return got
}

// VerifyResults implements verify:result: one file is checked against
// this workspace, two files against each other. Any mismatch is an error.
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
		checks := compare.VerifyResult(rec, w.recompute(rec, run, fps))
		logChecks, unchecked := w.checkAgainstLog(ctx, paths[0], rec)
		checks = append(checks, logChecks...)
		for _, c := range checks {
			fmt.Fprintf(out, "%-8s %-24s recorded %s, workspace %s", c.Status, c.Field, orDash(c.Recorded), orDash(c.Workspace))
			if c.Detail != "" {
				fmt.Fprintf(out, " (%s)", c.Detail)
			}
			fmt.Fprintln(out)
		}
		if len(unchecked) > 0 {
			fmt.Fprintf(out, "note     the log does not print %s: taken from the result as recorded, so not checked against the log\n", strings.Join(unchecked, ", "))
		}
		if bad := compare.Failed(checks); len(bad) > 0 {
			var inputs, figures []string
			nIn := len(checks) - len(logChecks)
			for i, c := range checks {
				if !c.OK() && i < nIn {
					inputs = append(inputs, c.Field)
				} else if !c.OK() {
					figures = append(figures, c.Field)
				}
			}
			var why []string
			if len(figures) > 0 {
				why = append(why, fmt.Sprintf("its figures cannot be trusted (%s): the JSON disagrees with its own training log or the log is not the one it was built from, so it was changed after the run", strings.Join(figures, ", ")))
			}
			if len(inputs) > 0 {
				why = append(why, fmt.Sprintf("this workspace would not reproduce %d of %d inputs (%s)", len(inputs), nIn, strings.Join(inputs, ", ")))
			}
			return fmt.Errorf("verify:result: %s: %s", paths[0], strings.Join(why, "; "))
		}
		fmt.Fprintf(out, "verify:result: this workspace reproduces every input of %s, and every measured figure agrees with its training log\n", paths[0])
		return nil
	}
	diffs, err := compare.CompareInputs(datas[0], datas[1])
	if err != nil {
		return err
	}
	for _, d := range diffs {
		kind := "DIFFERS"
		if d.HardwareBound {
			kind = "hardware"
		}
		fmt.Fprintf(out, "%-8s %-24s %s | %s", kind, d.Field, orDash(d.A), orDash(d.B))
		if d.Detail != "" {
			fmt.Fprintf(out, " (%s)", d.Detail)
		}
		fmt.Fprintln(out)
	}
	if bad := compare.Mismatches(diffs); len(bad) > 0 {
		return fmt.Errorf("verify:result: %s and %s differ in %d inputs apart from the hardware", paths[0], paths[1], len(bad))
	}
	fmt.Fprintf(out, "verify:result: %s and %s used identical inputs apart from the hardware\n", paths[0], paths[1])
	return nil
}

// checkAgainstLog finds the training log a result records the digest of
// (in the cache, where train keeps it, or next to the result: logs/<name>.log,
// <name>.log, or the file log.source names), checks its digest and
// re-derives every measured figure from it. unchecked names the facts the
// log does not print.
func (w *Workspace) checkAgainstLog(ctx context.Context, path string, r *result.Result) (checks []compare.FieldCheck, unchecked []string) {
	log := w.findLog(ctx, path, r)
	c, ok := compare.LogDigestCheck(r, log)
	checks = append(checks, c)
	if !ok {
		return checks, nil
	}
	figs, unchecked, err := compare.VerifyLog(r, log.Data)
	if err != nil {
		return append(checks, compare.FieldCheck{Field: "measured figures", Status: compare.StatusUnavailable, Detail: err.Error()}), nil
	}
	return append(checks, figs...), unchecked
}

// findLog returns the log whose digest the result records, or the first
// candidate found when none has it (so the digest check can name it), or
// nil.
func (w *Workspace) findLog(ctx context.Context, path string, r *result.Result) *compare.LogFound {
	if d, err := cache.ParseDigest(strings.TrimPrefix(r.Log.Digest, "blake3:")); err == nil && w.Cache != nil {
		if data, err := w.Cache.ReadBlob(d); err == nil {
			return &compare.LogFound{Data: data, Where: "the cache (blob " + d.Short() + ")"}
		}
	}
	dir, base := filepath.Dir(path), strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	cands := []string{filepath.Join(dir, "logs", base+".log"), filepath.Join(dir, base+".log")}
	if r.Log.Source != "" {
		cands = append(cands, filepath.Join(dir, filepath.Base(r.Log.Source)), r.Log.Source)
	}
	var first *compare.LogFound
	for _, c := range cands {
		// A log checked in memory, bounded like one read from the cache.
		data, err := safefile.ReadFile(ctx, c, safefile.LimitResult)
		if err != nil {
			continue
		}
		f := &compare.LogFound{Data: data, Where: c}
		if "blake3:"+cache.HashBytes(data).String() == r.Log.Digest {
			return f
		}
		if first == nil {
			first = f
		}
	}
	return first
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// logChecks checks every input of a comparison against its training log
// (as verify:result does): compare marks what it could not check and
// warns about what disagrees.
func (w *Workspace) logChecks(ctx context.Context, inputs []compare.Input) map[string]compare.LogCheck {
	out := map[string]compare.LogCheck{}
	for _, in := range inputs {
		r := in.Result
		log := w.findLog(ctx, in.Source, r)
		c, ok := compare.LogDigestCheck(r, log)
		if !ok {
			if c.Status == compare.StatusMismatch {
				out[in.Source] = compare.LogCheck{Bad: []string{"log.digest"}}
			} else {
				out[in.Source] = compare.LogCheck{Why: c.Detail}
			}
			continue
		}
		figs, _, err := compare.VerifyLog(r, log.Data)
		if err != nil {
			out[in.Source] = compare.LogCheck{Why: err.Error()}
			continue
		}
		lc := compare.LogCheck{Checked: true}
		for _, f := range compare.Failed(figs) {
			lc.Bad = append(lc.Bad, f.Field)
		}
		out[in.Source] = lc
	}
	return out
}
