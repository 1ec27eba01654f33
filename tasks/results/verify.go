package results

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/safefile"
)

// VerifyResult implements verify:result of one result: rec, read from
// path, against got, the fingerprints of the workspace's run that rec is
// checked against, and against the training log rec records the digest of
// (in c, or beside path). It prints one line per check on out; any
// mismatch is an error.
func VerifyResult(ctx context.Context, out io.Writer, c *cache.Cache, path string, rec *result.Result, got compare.Recomputed) error {
	checks := compare.VerifyResult(rec, got)
	fromLog, unchecked := checkAgainstLog(ctx, c, path, rec)
	checks = append(checks, fromLog...)
	for _, fc := range checks {
		fmt.Fprintf(out, "%-8s %-24s recorded %s, workspace %s", fc.Status, fc.Field, orDash(fc.Recorded), orDash(fc.Workspace))
		if fc.Detail != "" {
			fmt.Fprintf(out, " (%s)", fc.Detail)
		}
		fmt.Fprintln(out)
	}
	if len(unchecked) > 0 {
		fmt.Fprintf(out, "note     the log does not print %s: taken from the result as recorded, so not checked against the log\n", strings.Join(unchecked, ", "))
	}
	if bad := compare.Failed(checks); len(bad) > 0 {
		var inputs, figures []string
		nIn := len(checks) - len(fromLog)
		for i, fc := range checks {
			if !fc.OK() && i < nIn {
				inputs = append(inputs, fc.Field)
			} else if !fc.OK() {
				figures = append(figures, fc.Field)
			}
		}
		var why []string
		if len(figures) > 0 {
			why = append(why, fmt.Sprintf("its figures cannot be trusted (%s): the JSON disagrees with its own training log or the log is not the one it was built from, so it was changed after the run", strings.Join(figures, ", ")))
		}
		if len(inputs) > 0 {
			why = append(why, fmt.Sprintf("this workspace would not reproduce %d of %d inputs (%s)", len(inputs), nIn, strings.Join(inputs, ", ")))
		}
		return fmt.Errorf("verify:result: %s: %s", path, strings.Join(why, "; "))
	}
	fmt.Fprintf(out, "verify:result: this workspace reproduces every input of %s, and every measured figure agrees with its training log\n", path)
	return nil
}

// VerifyInputs implements verify:result of two results, a read from pathA
// and b from pathB: it prints every input in which they differ on out; any
// difference apart from the hardware is an error.
func VerifyInputs(out io.Writer, pathA, pathB string, a, b []byte) error {
	diffs, err := compare.CompareInputs(a, b)
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
		return fmt.Errorf("verify:result: %s and %s differ in %d inputs apart from the hardware", pathA, pathB, len(bad))
	}
	fmt.Fprintf(out, "verify:result: %s and %s used identical inputs apart from the hardware\n", pathA, pathB)
	return nil
}

// checkAgainstLog finds the training log a result records the digest of
// (in the cache, where train keeps it, or next to the result: logs/<name>.log,
// <name>.log, or the file log.source names), checks its digest and
// re-derives every measured figure from it. unchecked names the facts the
// log does not print.
func checkAgainstLog(ctx context.Context, c *cache.Cache, path string, r *result.Result) (checks []compare.FieldCheck, unchecked []string) {
	log := findLog(ctx, c, path, r)
	lc, ok := compare.LogDigestCheck(r, log)
	checks = append(checks, lc)
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
func findLog(ctx context.Context, c *cache.Cache, path string, r *result.Result) *compare.LogFound {
	if d, err := cache.ParseDigest(strings.TrimPrefix(r.Log.Digest, "blake3:")); err == nil && c != nil {
		if data, err := c.ReadBlob(d); err == nil {
			return &compare.LogFound{Data: data, Where: "the cache (blob " + d.Short() + ")"}
		}
	}
	dir, base := filepath.Dir(path), strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	cands := []string{filepath.Join(dir, "logs", base+".log"), filepath.Join(dir, base+".log")}
	if r.Log.Source != "" {
		cands = append(cands, filepath.Join(dir, filepath.Base(r.Log.Source)), r.Log.Source)
	}
	var first *compare.LogFound
	for _, cand := range cands {
		// A log checked in memory, bounded like one read from the cache.
		data, err := safefile.ReadFile(ctx, cand, safefile.LimitResult)
		if err != nil {
			continue
		}
		f := &compare.LogFound{Data: data, Where: cand}
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
func logChecks(ctx context.Context, c *cache.Cache, inputs []compare.Input) map[string]compare.LogCheck {
	out := map[string]compare.LogCheck{}
	for _, in := range inputs {
		r := in.Result
		log := findLog(ctx, c, in.Source, r)
		dc, ok := compare.LogDigestCheck(r, log)
		if !ok {
			if dc.Status == compare.StatusMismatch {
				out[in.Source] = compare.LogCheck{Bad: []string{"log.digest"}}
			} else {
				out[in.Source] = compare.LogCheck{Why: dc.Detail}
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
