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

// Image holds the image build targets.
type Image mg.Namespace

// Compare holds the comparison targets.
type Compare mg.Namespace

// Store holds the targets of the shared store (RIVAL_STORE).
type Store mg.Namespace

// Purge holds the cleanup targets.
type Purge mg.Namespace

// Stack compares upstream releases: stack:diff.
type Stack mg.Namespace

// Aliases give namespaces a plain form: `purge` is purge:output.
var Aliases = map[string]interface{}{
	"purge":   Purge.Output,
	"image":   Image.Host,
	"compare": Compare.All,
	"filter":  Filter.Dataset,
	"encode":  Encode.Datasets,
}

// Demo runs the whole pipeline on the shipped sample: filter, encode, verify, train a proxy on the CPU in one process and in two (three runs each), compare; installs PyTorch when it may.
func Demo(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.Demo(ctx)
	})
}

// Fetch downloads the configured dataset (DATASET, DATA_SAMPLES documents) and the tokenizers of MODELS from the Hugging Face Hub.
func Fetch(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.FetchTarget(ctx) })
}

// Dataset fetches and filters the configured dataset (also: filter).
func (Filter) Dataset(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.FilterTarget(ctx) })
}

// Datasets encodes the filtered dataset for every model in MODELS into DATA_DIR/<dataset>-<model>-train/-test (also: encode).
func (Encode) Datasets(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.EncodeTarget(ctx) })
}

// File filters any local JSONL corpus: filter:file IN.jsonl OUT.jsonl.
func (Filter) File(ctx context.Context, in, out string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.FilterFileTarget(ctx, in, out) })
}

// File encodes any JSONL corpus into OUT.bin/OUT.idx: encode:file IN.jsonl TOKENIZER OUT (TOKENIZER: a path, or llama, qwen, mistral).
func (Encode) File(ctx context.Context, in, tok, out string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.EncodeFileTarget(ctx, in, tok, out) })
}

// Data checks every configured dataset (format, token ids, digests) and prints its fingerprint.
func (Verify) Data(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.VerifyData(w.ConfiguredDatasets())
	})
}

// Cpu trains the fsdp framework on the proxies of MODELS on the host's CPU, no container needed.
func (Train) Cpu(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.TrainTarget(ctx, hw.PlatformCPU, []string{"fsdp"}, nil)
	})
}

// Host builds the image for this host's detected platform (also: image).
func (Image) Host(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.ImageTarget(ctx, "")
	})
}

// Amd builds the AMD image (amd.Dockerfile, FROM rocm/primus) through the Docker Engine API.
func (Image) Amd(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.ImageTarget(ctx, "amd") })
}

// Nvd builds the NVIDIA image (nvd.Dockerfile, FROM nvcr.io/nvidia/nemo) through the Docker Engine API.
func (Image) Nvd(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.ImageTarget(ctx, "nvd") })
}

// Cpu builds the CPU image (cpu.Dockerfile FROM IMAGE_BASE) for containerized CPU runs.
func (Image) Cpu(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.ImageTarget(ctx, hw.PlatformCPU) })
}

// Push pushes a platform image to a registry for Slurm clusters: image:push PLATFORM REGISTRY/REPOSITORY[:TAG]
// (credentials from `docker login`). Slurm runs of PLATFORM then name the pushed digest.
func (Image) Push(ctx context.Context, platform, repository string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.ImagePushTarget(ctx, platform, repository)
	})
}

// Run trains one framework on one model: train:run PLATFORM FRAMEWORK MODEL (platform amd, nvd or cpu).
func (Train) Run(ctx context.Context, platform, framework, model string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.TrainTarget(ctx, platform, []string{framework}, []string{model})
	})
}

// Amd trains every framework × model of MODELS on this AMD host.
func (Train) Amd(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.TrainTarget(ctx, "amd", nil, nil) })
}

// Nvd trains every framework × model of MODELS on this NVIDIA host.
func (Train) Nvd(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.TrainTarget(ctx, "nvd", nil, nil) })
}

// All trains every framework × model of MODELS for the detected platform.
func (Train) All(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.TrainTarget(ctx, "", nil, nil) })
}

// Check runs each launch's framework validation in the platform image, without GPUs: train:check PLATFORM [FRAMEWORK [MODEL]].
func (Train) Check(ctx context.Context, platform, framework, model string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.CheckTarget(ctx, platform, framework, model)
	})
}

// SlurmScript prints the Slurm batch script of one run without submitting it: train:slurm-script PLATFORM FRAMEWORK MODEL.
func (Train) SlurmScript(ctx context.Context, platform, framework, model string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.SlurmScriptTarget(ctx, platform, framework, model)
	})
}

// K8sManifest prints the Kubernetes objects of one run without submitting them: train:k8s-manifest PLATFORM FRAMEWORK MODEL.
func (Train) K8sManifest(ctx context.Context, platform, framework, model string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.KubeManifestTarget(ctx, platform, framework, model)
	})
}

// Shell starts an interactive container of the platform image with a training run's devices and mounts.
func Shell(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.ShellTarget(ctx) })
}

// All compares every result in OUTPUT_DIR and the cache: report.html (one page, opens in any browser), report.md, compare.png, compare.svg (also: compare).
func (Compare) All(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.CompareTarget(ctx, nil) })
}

// Dir compares the results under DIR (copied from other hosts or unpacked from wrap) with the local ones: report.html, report.md, compare.png, compare.svg.
func (Compare) Dir(ctx context.Context, dir string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.CompareTarget(ctx, []string{abs(dir)}) })
}

// History compares each workload across software stacks, hosts and dates (HISTORY_THRESHOLD): history.md, history.png, history.svg.
func (Compare) History(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.HistoryTarget(ctx, nil) })
}

// Result checks that this workspace reproduces every input of a result: verify:result RESULT.json, or store:ID for a result in RIVAL_STORE.
func (Verify) Result(ctx context.Context, result string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.VerifyResults(ctx, []string{result}, os.Stdout)
	})
}

// Results checks that two results had identical inputs apart from the hardware: verify:results A.json B.json (store:ID names a result in RIVAL_STORE).
func (Verify) Results(ctx context.Context, a, b string) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error {
		return w.VerifyResults(ctx, []string{a, b}, os.Stdout)
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
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.WrapTarget(ctx) })
}

// Extract turns any supported training log into a result JSON on stdout (facts the log lacks come from GPUS, SL, GBS, MBS, PRECISION, MODEL, FRAMEWORK, PLATFORM, GPU); with -v (or EXTRACT_VERBOSE=1) it explains on stderr what was read, skipped or flagged per step.
func Extract(ctx context.Context, logfile string) error {
	return tasks.Bare(ctx, func(ctx context.Context) error {
		return tasks.ExtractTarget(logfile, mg.Verbose(), os.Stdout, os.Stderr)
	})
}

// Diff lists what changed between two upstream trees of one framework that touches Rival's launches (options and keys renamed, removed, added, deprecated, defaults, stock configs, the files its launches depend on, each with file:line): stack:diff FRAMEWORK OLD_TREE NEW_TREE (mega, prim, titan; nemo takes BRIDGE_TREE,MEGATRON_TREE). RIVAL_PYTHON runs the extractors; STACK_DIFF_JSON writes the report as JSON.
func (Stack) Diff(ctx context.Context, framework, old, cur string) error {
	return tasks.Bare(ctx, func(ctx context.Context) error {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		return tasks.StackDiffTarget(ctx, wd, framework, old, cur, os.Stdout)
	})
}

// Ls lists every result in RIVAL_STORE: platform, framework, model, dataset, date, host, tokens/s/GPU.
func (Store) Ls(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.StoreListTarget(ctx, os.Stdout) })
}

// Pull copies every result in RIVAL_STORE and its log into OUTPUT_DIR/store, each verified by its BLAKE3.
func (Store) Pull(ctx context.Context) error {
	return tasks.Main(ctx, func(ctx context.Context, w *tasks.Workspace) error { return w.StorePullTarget(ctx) })
}

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
