package tasks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// detectHost detects the GPUs of the host, printing any warnings.
func (w *Workspace) detectHost(ctx context.Context) (hw.Host, error) {
	h, err := hw.Detect(ctx)
	if err != nil {
		return h, err
	}
	for _, warn := range h.Warnings {
		w.printf("hw: %s\n", warn)
	}
	return h, nil
}

// checkPlatform refuses to train platform on a host of another kind.
func checkPlatform(platform string, host hw.Host) error {
	switch platform {
	case hw.PlatformCPU:
		return nil
	case hw.PlatformAMD, hw.PlatformNVIDIA:
	default:
		return fmt.Errorf("unknown platform %q (amd, nvd or cpu)", platform)
	}
	if host.Platform == hw.PlatformCPU || len(host.GPUs) == 0 {
		return fmt.Errorf("train %s: this host has no GPU (detected through %s); use train:cpu for CPU runs", platform, orNone(host.Source))
	}
	if host.Platform != platform {
		return fmt.Errorf("train %s: this host is %s (%d × %s); run train:%s here", platform, platformName(host.Platform), len(host.GPUs), host.GPUs[0].Name, host.Platform)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "no tool"
	}
	return s
}

func platformName(p string) string {
	switch p {
	case hw.PlatformAMD:
		return "an AMD host"
	case hw.PlatformNVIDIA:
		return "an NVIDIA host"
	}
	return "a CPU-only host"
}

// trainPlan is a set of training runs over the configured pipeline.
type trainPlan struct {
	Pipeline *data.Pipeline
	Runs     []*dag.Task
}

// planTraining builds the pipeline and one train task per framework ×
// model × repetition (RUNS) for platform, with exec running the launches.
// On the cpu platform models become their proxies and parallelism is one
// process. With skipRefused, a combination the framework refuses (TorchTitan
// and Qwen's QKV bias, say) is reported and left out instead of failing
// the whole plan: train:all asks for every combination, train:run for one.
func (w *Workspace) planTraining(platform string, fws, mdls []string, host hw.Host, exec executor.Executor, skipRefused bool) (*trainPlan, error) {
	cfg, err := w.platformConfig(platform)
	if err != nil {
		return nil, err
	}
	p, err := w.data().BuildPipeline()
	if err != nil {
		return nil, err
	}
	plan := &trainPlan{Pipeline: p}
	for _, fw := range fws {
		for _, m := range mdls {
			in, err := w.trainInputsForCfg(p, cfg, platform, fw, m, host, exec)
			if err != nil {
				return nil, err
			}
			for run := 0; run < cfg.int("RUNS"); run++ {
				in.RunIndex = run
				t, err := w.trainTask(in)
				if err != nil && skipRefused {
					w.printf("skipping %s × %s on %s: %v\n", fw, m, platform, err)
					break
				}
				if err != nil {
					return nil, err
				}
				plan.Runs = append(plan.Runs, t)
			}
		}
	}
	return plan, nil
}

// reportRuns prints where each run's result went.
func (w *Workspace) reportRuns(runs []*dag.Task) {
	if len(runs) > 1 {
		// The runner starts every run at once and they take the host-wide training lock in
		// whatever order their goroutines reach it: nothing orders them on purpose.
		w.printf("%s in plan order (the lines above follow the order in which the runs took the host-wide training lock, one at a time, which the runner's parallel workers decide)\n",
			english.Plural(len(runs), "run"))
	}
	for _, t := range runs {
		state := "ran"
		if t.Cached() {
			state = "cached"
		}
		w.printf("%s: %s (%s)\n", t.ID, rel(w.root, t.Outputs[0].Path), state)
	}
}

// printLaunchFile writes to stdout what render makes of one run of the configured pipeline under
// cfg: the targets that print a run's launch file without submitting it (train:slurm-script,
// kube:manifest).
func (w *Workspace) printLaunchFile(cfg *config, platform, fw, model string, host hw.Host, exec executor.Executor, render func(trainInputs) ([]byte, error)) error {
	p, err := w.data().BuildPipeline()
	if err != nil {
		return err
	}
	in, err := w.trainInputsForCfg(p, cfg, platform, fw, model, host, exec)
	if err != nil {
		return err
	}
	out, err := render(in)
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(out)
	return err
}

// trainInputsForCfg is one run of the configured pipeline under cfg.
func (w *Workspace) trainInputsForCfg(p *data.Pipeline, cfg *config, platform, fw, model string, host hw.Host, exec executor.Executor) (trainInputs, error) {
	base := encodedModel(model)
	i := -1
	for j, m := range cfg.list("MODELS") {
		if m == base {
			i = j
		}
	}
	if i < 0 {
		return trainInputs{}, fmt.Errorf("model %s is not in MODELS=%s", base, cfg.get("MODELS"))
	}
	if platform == hw.PlatformCPU && !strings.HasSuffix(model, "-proxy") {
		model += "-proxy"
	}
	mm, err := models.Lookup(model)
	if err != nil {
		return trainInputs{}, err
	}
	enc := p.Encodes[i]
	tok := data.TokenizerSpec{Path: p.Tokenizers[i].Outputs[0].Path, Model: &mm, EOD: mm.EOD}
	stack, err := w.trainStack(platform)
	if err != nil {
		return trainInputs{}, err
	}
	return trainInputs{Run: training.Run{
		Platform: platform, Framework: fw, Model: model, Dataset: cfg.get("DATASET"), Stack: stack, ImageBase: w.trainImageBase(platform),
		TrainPrefix: strings.TrimSuffix(enc.Outputs[0].Path, ".bin"), Tokenizer: tok, Encode: enc, Host: host, Executor: exec,
	}, Config: cfg}, nil
}

// trainStack is the stack a run of platform uses: STACK on amd and nvd, none on cpu (its PyTorch is
// the host's or the cpu image's, recorded by the run).
func (w *Workspace) trainStack(platform string) (string, error) {
	stack, err := w.env.stack() // a misspelt STACK is an error on cpu too
	if err != nil || platform == hw.PlatformCPU {
		return "", err
	}
	return stack, nil
}

// trainImageBase is IMAGE_BASE for a run of platform that builds its image from it: amd and nvd
// (the cpu image has no pinned base to replace).
func (w *Workspace) trainImageBase(platform string) string {
	if platform == hw.PlatformCPU {
		return ""
	}
	return w.env.imageBase()
}

// checkFrameworks is what train:check PLATFORM FRAMEWORK checks: every framework that runs on the
// platform for "all", else the one asked for when it runs there or the old suite's remap runs another
// in its place (prim on nvd is checked as the nemo launch train:run would build).
func checkFrameworks(platform, framework string) ([]string, error) {
	var native []string
	for _, f := range frameworks.Names() {
		if slices.Contains(platformsOf(f), platform) {
			native = append(native, f)
		}
	}
	if framework == "all" {
		return native, nil
	}
	if _, _, err := frameworks.Resolve(framework, platform); err != nil {
		return nil, fmt.Errorf("train:check: framework %q does not run on %s (there: %s, or all)", framework, platform, strings.Join(native, ", "))
	}
	return []string{framework}, nil
}

// CheckTarget is train:check PLATFORM [FRAMEWORK [MODEL]] ("all" for every one): it builds each
// launch exactly as the run would and runs its preflight inside the platform image, without GPUs.
func (w *Workspace) CheckTarget(ctx context.Context, platform, framework, model string) error {
	host := hw.Host{Platform: platform}
	if platform != hw.PlatformCPU {
		var err error
		if host, err = w.detectHost(ctx); err != nil {
			return err
		}
		if host.Platform != platform || len(host.GPUs) == 0 {
			// Checking from a machine without the platform's GPUs: GPUS_PER_NODE says how many.
			n := w.env.gpUsPerNode()
			host = hw.Host{Platform: platform}
			for i := 0; i < n; i++ {
				host.GPUs = append(host.GPUs, hw.GPU{Index: i})
			}
		}
	}
	fws, err := checkFrameworks(platform, framework)
	if err != nil {
		return err
	}
	var mdls []string
	for _, m := range w.config.list("MODELS") {
		switch model {
		case "all", m:
			mdls = append(mdls, m)
		case m + "-proxy":
			mdls = append(mdls, model)
		}
	}
	if len(mdls) == 0 {
		return fmt.Errorf("train:check: model %q is not in MODELS=%s", model, w.config.get("MODELS"))
	}
	cfg, err := w.platformConfig(platform)
	if err != nil {
		return err
	}
	ex, closeEx, err := w.executorFor(ctx, platform, host)
	if err != nil {
		return err
	}
	defer closeEx()
	if _, kok := ex.(*executor.Kube); kok || isSlurm(ex) {
		// The check runs in the image on this host, not as a job.
		e, err := container.Connect(ctx)
		if err != nil {
			return fmt.Errorf("train:check: a %s setup is checked in the image on this host: %w", clusterName(ex), err)
		}
		defer e.Close()
		rec, _, err := w.images().Ensure(ctx, e, platform)
		if err != nil {
			return err
		}
		ex = &executor.Docker{Engine: e, ImageID: rec.ImageID, Platform: platform}
	}
	p, err := w.data().BuildPipeline()
	if err != nil {
		return err
	}
	failed := 0
	for _, fw := range fws {
		for _, m := range mdls {
			in, err := w.trainInputsForCfg(p, cfg, platform, fw, m, host, ex)
			if err != nil {
				return err
			}
			name := in.RunName() // RunIndex 0
			// With the dataset encoded, the launch reads it as train would (its fingerprint's cache
			// folder, Rival's sample order written there) and the preflight's digest of what the
			// framework's data path reads must equal Rival's; without it, the data is train's to check.
			fp, encoded := "unencoded", false
			if man, err := training.ReadManifest(in.TrainPrefix); err == nil {
				fp, encoded = data.DatasetDigest(man.Fingerprint).Short(), true
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			l, maps, cacheDir, err := w.trainLaunch(in, cfg, name, fp)
			if err != nil {
				w.printf("%s × %s: %v\n", fw, in.Model, err)
				failed++
				continue
			}
			if l.Preflight == nil {
				w.printf("%s × %s: no preflight for %s\n", fw, in.Model, l.Framework)
				continue
			}
			// The dataset may not be encoded yet: the folders still have to exist to be mounted.
			for _, m := range maps {
				if err := os.MkdirAll(m.Host, 0o755); err != nil {
					return err
				}
			}
			if err := writeLaunchFiles(maps, l); err != nil {
				return err
			}
			dataLine := "  data: " + in.TrainPrefix + " is not encoded: split, sample order and what the framework reads are checked by train (run encode first to check them here)"
			if encoded {
				prefix, err := filepath.Abs(in.TrainPrefix)
				if err != nil {
					return err
				}
				order, digest, err := training.WriteSampleOrder(prefix, cacheDir, trainingRun(in, cfg).Workload.Fair)
				if err != nil {
					w.printf("%s × %s: %v\n", fw, in.Model, err)
					failed++
					continue
				}
				l.Samples = digest
				dataLine = fmt.Sprintf("  data: %s (split %s), Rival's order (seed %d, SL %d): the framework reads the same first %d samples (SHA-256 %s)",
					in.TrainPrefix, training.MegatronSplit, order.Seed, order.SequenceLength, order.DigestSamples, order.SHA256[:min(12, len(order.SHA256))])
			}
			rep, err := training.Preflight(ctx, ex, name, l, maps)
			if err != nil {
				w.printf("%s × %s: %v\n", fw, in.Model, err)
				failed++
				continue
			}
			w.printf("%s × %s: %s\n", fw, in.Model, rep.OK)
			if rep.Ran != "" {
				w.printf("  in the image: %s\n", rep.Ran)
			}
			w.printf("%s\n", dataLine)
			if rep.Effective != nil {
				w.printf("  effective configuration equals the workload, field by field (%d fields)\n", len(effective.Fields()))
			} else {
				w.printf("  no effective configuration read back for %s\n", l.Framework)
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("train:check %s: %d launch(es) failed their preflight", platform, failed)
	}
	return nil
}

// writeLaunchFiles writes a launch's files into the run folder (the placed folder with role "run").
func writeLaunchFiles(maps []executor.PathMap, l core.Launch) error {
	for _, m := range maps {
		if m.Role != "run" {
			continue
		}
		for rel, data := range l.Files {
			if err := cache.WriteFileAtomic(filepath.Join(m.Host, filepath.FromSlash(rel)), data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	return errors.New("train:check: the launch has no run folder")
}

// encodedModel is the model whose encoding a model trains on: a proxy (models names each
// <base>-proxy) trains on its full model's encoding, made with the same tokenizer.
func encodedModel(model string) string { return strings.TrimSuffix(model, "-proxy") }

// clusterName names the cluster executor ex submits to, for messages: "Slurm" or "Kubernetes".
func clusterName(ex executor.Executor) string {
	if _, ok := ex.(*executor.Kube); ok {
		return "Kubernetes"
	}
	return "Slurm"
}

func isSlurm(ex executor.Executor) bool {
	_, ok := ex.(*executor.Slurm)
	return ok
}
