package tasks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/result"
)

// compareVersion changes compare's key when the report's computation changes.
const compareVersion = "4"

// resultFiles lists result JSON files under top (OUTPUT_DIR, leaving out
// runs/, where runs keep scratch files such as generated configs) and under
// dirs (results copied from other hosts), recursively and sorted.
func resultFiles(top string, dirs []string) ([]string, error) {
	var out []string
	walk := func(root string, skip string) error {
		if _, err := os.Stat(root); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return filepath.WalkDir(root, func(p string, de os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.IsDir() && skip != "" && p == skip {
				return filepath.SkipDir
			}
			if !de.IsDir() && strings.HasSuffix(p, ".json") {
				if de.Type()&os.ModeSymlink != 0 {
					if _, err := os.Stat(p); err != nil {
						return nil // a dangling link is no result; it must not block the others
					}
				}
				out = append(out, p)
			}
			return nil
		})
	}
	if err := walk(top, filepath.Join(top, "runs")); err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := walk(d, ""); err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}

// cachedResults returns every result recorded by a train task in the cache.
func (w *Workspace) cachedResults() ([][]byte, error) {
	recs, err := w.Cache.Records()
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, r := range recs {
		if !strings.HasPrefix(r.Task, "train ") || len(r.Outputs) == 0 {
			continue
		}
		if data, err := w.Cache.ReadBlob(r.Outputs[0].Digest); err == nil {
			out = append(out, data)
		}
	}
	return out, nil
}

// CompareTask writes OUTPUT_DIR/report.md, compare.png and compare.svg
// from every result under OUTPUT_DIR, under dirs, and in the cache. It is
// keyed by its input results' digests, so it is a hit when no result
// changed.
func (w *Workspace) CompareTask(dirs []string, deps ...*dag.Task) (*dag.Task, error) {
	outDir := w.Path("OUTPUT_DIR")
	report := filepath.Join(outDir, "report.md")
	png, svg := filepath.Join(outDir, "compare.png"), filepath.Join(outDir, "compare.svg")
	page := filepath.Join(outDir, "report.html")
	t := &dag.Task{
		ID:      strings.TrimSpace("compare " + strings.Join(relAll(w.Root, dirs), " ")),
		Deps:    deps,
		Params:  map[string]string{},
		Tools:   map[string]string{"compare": compareVersion},
		Outputs: []dag.Output{{Path: report, Compress: true}, {Path: png}, {Path: svg, Compress: true}, {Path: page, Compress: true}},
	}
	var blobs [][]byte
	var files []string
	t.Prepare = func(ctx context.Context) error {
		var err error
		files, err = resultFiles(outDir, dirs)
		if err != nil {
			return err
		}
		// The figures and report are outputs of this task, not inputs.
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
		if _, err := compare.ParsePriceEnv(compare.DefaultPrices(), os.Environ()); err != nil {
			return err
		}
		for _, p := range priceEnv() {
			t.Params[p] = os.Getenv(p)
		}
		return nil
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		inputs, problems := compare.LoadFiles(files, blobs)
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
		rep.ConfigDefaults = map[string]string{}
		for _, k := range ConfigKeys() {
			rep.ConfigDefaults[k.Name] = k.Default
		}
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return err
		}
		if err := cache.WriteAtomic(report, 0o644, func(bw *bufio.Writer) error { return rep.WriteMarkdown(bw) }); err != nil {
			return err
		}
		if err := rep.WritePlots(png, svg); err != nil {
			return err
		}
		if err := cache.WriteAtomic(page, 0o644, func(bw *bufio.Writer) error { return rep.WriteHTML(bw) }); err != nil {
			return err
		}
		var console strings.Builder
		rep.Console(&console)
		rep.ConsoleConfigs(&console)
		x.SetMeta(map[string]string{"console": console.String()})
		return nil
	}
	return t, nil
}

// noResultsBecause says why no file could be compared: every rejected
// result with its reason (the first 20), files that are not results
// counted.
func noResultsBecause(problems []compare.Problem) error {
	var b strings.Builder
	invalid, ignored := 0, 0
	for _, p := range problems {
		if p.Kind == "ignored" {
			ignored++
			continue
		}
		invalid++
		if invalid <= 20 {
			fmt.Fprintf(&b, "\n  %s: %s", p.Source, p.Reason)
		}
	}
	if invalid > 20 {
		fmt.Fprintf(&b, "\n  ... and %d more", invalid-20)
	}
	if ignored > 0 {
		fmt.Fprintf(&b, "\n  (%d JSON files that are not results were ignored)", ignored)
	}
	if invalid == 0 {
		return fmt.Errorf("%w%s", compare.ErrNoResults, b.String())
	}
	return fmt.Errorf("no results to compare: %d result files were rejected:%s", invalid, b.String())
}

// ReportCompare prints compare's console summary and where the files are.
func (w *Workspace) ReportCompare(t *dag.Task, out io.Writer) {
	var meta map[string]string
	if err := t.Meta(&meta); err == nil {
		fmt.Fprint(out, meta["console"])
	}
	w.Printf("compare: report %s and %s, plots %s and %s\n", rel(w.Root, t.Outputs[0].Path), rel(w.Root, t.Outputs[3].Path), rel(w.Root, t.Outputs[1].Path), rel(w.Root, t.Outputs[2].Path))
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

func relAll(root string, ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = rel(root, p)
	}
	return out
}

// verifyWorkspace recomputes input fingerprints from this workspace for
// verify:result.
type verifyWorkspace struct {
	w *Workspace
	// demoDP is the DP the result recorded, to pick the demo configuration
	// it ran ("1" or "2"); empty for other results.
	demoDP string
}

func (v verifyWorkspace) DatasetFingerprint(dataset, model string) (string, error) {
	prefix := v.w.DatasetPrefix(dataset, model, "train")
	if dataset == "sample" {
		prefix = v.w.Path("DATA_DIR", "demo", "sample-mistral-train")
	}
	fp, err := VerifyDataset(prefix)
	if err != nil {
		return "", err
	}
	return fp.Digest, nil
}

func (v verifyWorkspace) TokenizerFingerprint(model string) (string, error) {
	spec, err := v.w.ResolveTokenizer(model)
	if err != nil {
		return "", err
	}
	d, _, err := v.w.Cache.FileDigest(spec.Path)
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

func (v verifyWorkspace) ConfigFingerprint(platform, framework, model string) (string, error) {
	cfg := v.w.Config
	var err error
	if platform == "cpu" {
		if strings.HasSuffix(model, "-proxy") && model == DemoModel {
			// The demo's shrunk configuration, as demo uses it.
			if c, err2 := cfg.With("demo", demoConfig); err2 == nil {
				cfg = c
				for _, dv := range demoVariants {
					if dv.Values["DP"] == v.demoDP {
						if c, err2 := cfg.With("demo "+dv.Name, dv.Values); err2 == nil {
							cfg = c
						}
					}
				}
			}
		} else if cfg, err = cfg.With("train:cpu", map[string]string{"TP": "1", "PP": "1", "DP": "1", "GBS": ""}); err != nil {
			return "", err
		}
		// The precision this CPU trains in, as the run recorded it.
		if cfg, _, err = cpuTrainConfig(cfg); err != nil {
			return "", err
		}
	}
	return cfg.Fingerprint().String(), nil
}

func (v verifyWorkspace) ImageDigest(platform string) (string, error) {
	rec, err := readImageRecord(v.w.Path("DATA_DIR", "images", platform+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return rec.ImageID, err
}

func (v verifyWorkspace) EntryScriptDigest(framework string) (string, error) {
	return frameworks.EntryScriptDigest(framework)
}

// VerifyResults implements verify:result: one file is checked against
// this workspace, two files against each other. Any mismatch is an error.
func (w *Workspace) VerifyResults(paths []string, out io.Writer) error {
	datas := make([][]byte, len(paths))
	for i, p := range paths {
		d, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("verify:result: %w", err)
		}
		datas[i] = d
	}
	if len(paths) == 1 {
		vw := verifyWorkspace{w: w}
		var rec result.Result
		if json.Unmarshal(datas[0], &rec) == nil && rec.Provenance != nil {
			vw.demoDP = rec.Provenance.Config["DP"]
		}
		checks, err := compare.VerifyResult(datas[0], vw)
		if err != nil {
			return err
		}
		for _, c := range checks {
			fmt.Fprintf(out, "%-8s %-24s recorded %s, workspace %s", c.Status, c.Field, orDash(c.Recorded), orDash(c.Workspace))
			if c.Detail != "" {
				fmt.Fprintf(out, " (%s)", c.Detail)
			}
			fmt.Fprintln(out)
		}
		if bad := compare.Failed(checks); len(bad) > 0 {
			return fmt.Errorf("verify:result: %d of %d inputs of %s would not be reproduced by this workspace", len(bad), len(checks), paths[0])
		}
		fmt.Fprintf(out, "verify:result: this workspace reproduces every input of %s\n", paths[0])
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
