package tasks

import (
	"errors"
	"fmt"
	"os"

	"github.com/rivalbench/rival/compare"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/data"
)

// What verify:result of one result needs from the training plan and the
// data: the run of this workspace it is checked against and that run's
// input fingerprints, recomputed here and handed to package tasks/results
// as a compare.Recomputed.

// verifyRunFor is the run of this workspace that a result is checked
// against: of the runs its targets make of the result's platform,
// framework and model (train:<platform>'s, then the demo's), the one that
// reproduces most of the result's dataset and configuration, on a tie the
// one on the result's dataset, then the first. Choosing by what was
// recorded needs no record of which target ran: any run that reproduces
// every input proves the result reproducible here.
func (w *Workspace) verifyRunFor(r *result.Result) (plannedRun, *datasetFingerprints) {
	platform, model, dataset := result.Text(r.Platform), result.Text(r.Model.Name), result.Text(r.Dataset.Name)
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
	if result.Text(r.Dataset.Name) != "" && result.Text(r.Model.Name) != "" {
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
		d, _, err := w.cache.FileDigest(spec.Path)
		got.TokenizerFingerprint = compare.Recomputation{Value: d.String(), Err: err}
	}
	got.ConfigFingerprint.Value, got.ConfigFingerprint.Err = run.configFingerprint()
	// The image of the result's own stack, whatever STACK says now.
	b := w.images()
	if stack, ok := stackOfResult(r); ok {
		if stack != "" {
			b.Stack = stack
		}
		if rec, err := b.Recorded(run.Platform); !errors.Is(err, os.ErrNotExist) {
			got.ImageDigest = compare.Recomputation{Value: rec.ImageID, Err: err}
		}
	} else {
		got.ImageDigest.Err = fmt.Errorf("the result's stack %s is no longer pinned here (core.Pins): its image cannot be rebuilt from this checkout", r.Framework.Stack)
	}
	got.EntryScriptDigest.Value, got.EntryScriptDigest.Err = frameworks.EntryScriptDigest(run.Framework)
	return got
}

// stackOfResult is the STACK word of the pin whose image a result names (framework.stack); a result
// without one (cpu, or written before results named their stack) keeps STACK as set. False when the
// named image is pinned on no stack.
func stackOfResult(r *result.Result) (string, bool) {
	if r.Framework.Stack == "" {
		return "", true
	}
	for _, p := range core.Pins {
		if p.Name() == r.Framework.Stack {
			return p.Stack, true
		}
	}
	return "", false
}
