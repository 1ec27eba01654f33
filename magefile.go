//go:build mage

// Rival: one fair LLM-training benchmark across AMD and NVIDIA hosts.
// Targets are thin: the work lives in tasks/ and the packages it uses.
package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/magefile/mage/mg"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks"
)

// Cache holds the cache maintenance targets.
type Cache mg.Namespace

// Filter holds the filtering targets.
type Filter mg.Namespace

// Encode holds the dataset encoding targets.
type Encode mg.Namespace

// Verify holds the verification targets.
type Verify mg.Namespace

// Train holds the training targets.
type Train mg.Namespace

// Purge holds the cleanup targets.
type Purge mg.Namespace

// Aliases give namespaces a plain form: `purge` is purge:output.
var Aliases = map[string]interface{}{
	"purge":  Purge.Output,
	"filter": Filter.Dataset,
	"encode": Encode.Datasets,
}

// Demo filters and encodes the sample corpus shipped in testdata/ and verifies the datasets.
func Demo(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.Demo(ctx)
	})
}

// Fetch downloads the configured dataset (DATASET, DATA_SAMPLES documents) and the tokenizers of MODELS from the Hugging Face Hub.
func Fetch(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		p, err := w.BuildPipeline()
		if err != nil {
			return err
		}
		return w.Runner.Run(ctx, append([]*tasks.Task{p.Fetch}, p.Tokenizers...)...)
	})
}

// Dataset fetches and filters the configured dataset (also: filter).
func (Filter) Dataset(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		p, err := w.BuildPipeline()
		if err != nil {
			return err
		}
		if err := w.Runner.Run(ctx, p.Filter); err != nil {
			return err
		}
		w.ReportFilter(p.Filter)
		return nil
	})
}

// Datasets encodes the filtered dataset for every model in MODELS into DATA_DIR/<dataset>-<model>-train/-test (also: encode).
func (Encode) Datasets(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		p, err := w.BuildPipeline()
		if err != nil {
			return err
		}
		if err := w.Runner.Run(ctx, p.Encodes...); err != nil {
			return err
		}
		w.ReportFilter(p.Filter)
		for _, e := range p.Encodes {
			w.ReportEncode(e)
		}
		return nil
	})
}

// File filters any local JSONL corpus: filter:file IN.jsonl OUT.jsonl.
func (Filter) File(ctx context.Context, in, out string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		t := w.FilterTask(abs(in), abs(out), nil)
		if err := w.Runner.Run(ctx, t); err != nil {
			return err
		}
		w.ReportFilter(t)
		return nil
	})
}

// File encodes any JSONL corpus into OUT.bin/OUT.idx: encode:file IN.jsonl TOKENIZER OUT (TOKENIZER: a path, or llama, qwen, mistral).
func (Encode) File(ctx context.Context, in, tok, out string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		spec, err := w.ResolveTokenizer(tok)
		if err != nil {
			return err
		}
		t := w.EncodeTask(abs(in), spec, abs(out), 0, nil)
		if err := w.Runner.Run(ctx, t); err != nil {
			return err
		}
		w.ReportEncode(t)
		return nil
	})
}

// Data checks every configured dataset (format, token ids, digests) and prints its fingerprint.
func (Verify) Data(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.VerifyData(w.ConfiguredDatasets())
	})
}

// Cpu trains the fsdp framework on the proxies of MODELS on this machine's CPU, no container needed.
func (Train) Cpu(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		var mdls []string
		for _, m := range w.Config.List("MODELS") {
			mdls = append(mdls, m+"-proxy")
		}
		plan, err := w.PlanTraining("cpu", []string{"fsdp"}, mdls, hw.Host{Platform: "cpu"}, tasks.HostExecutor{})
		if err != nil {
			return err
		}
		if err := w.Runner.Run(ctx, plan.Runs...); err != nil {
			return err
		}
		w.ReportRuns(plan.Runs)
		return nil
	})
}

// Stats shows the cache's entries, size and hit counts.
func (Cache) Stats(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.CacheStats() })
}

// Trim drops least recently used entries (RIVAL_CACHE_MAX, RIVAL_CACHE_MAX_AGE).
func (Cache) Trim(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.CacheTrim(ctx) })
}

// Verify rehashes every blob and output; corrupt entries are dropped.
func (Cache) Verify(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.CacheVerify(ctx) })
}

// Output removes OUTPUT_DIR (also: purge).
func (Purge) Output(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.Purge(false) })
}

// Data removes OUTPUT_DIR and DATA_DIR (also: purge data).
func (Purge) Data(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.Purge(true) })
}

// Wrap zips output/ with every result's provenance, to copy results off a host.
func Wrap(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		t, zipPath, err := w.WrapTask()
		if err != nil {
			return err
		}
		if err := w.Runner.Run(ctx, t); err != nil {
			return err
		}
		w.Printf("wrap: %s\n", zipPath)
		return nil
	})
}

// Extract turns any supported training log into a result JSON on stdout (facts the log lacks come from GPUS, SL, GBS, MBS, PRECISION, MODEL, FRAMEWORK, PLATFORM, GPU).
func Extract(ctx context.Context, logfile string) error {
	return tasks.Bare(ctx, func(ctx context.Context) error { return tasks.Extract(logfile, os.Stdout) })
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
