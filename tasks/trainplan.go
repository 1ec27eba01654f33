package tasks

import (
	"context"
	"fmt"
	"strings"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// Frameworks lists the framework short names in a fixed order.
func Frameworks() []string { return frameworks.Names() }

// DetectHost detects the GPUs of this machine, printing any warnings.
func (w *Workspace) DetectHost(ctx context.Context) (hw.Host, error) {
	h, err := hw.Detect(ctx)
	if err != nil {
		return h, err
	}
	for _, warn := range h.Warnings {
		w.Printf("hw: %s\n", warn)
	}
	return h, nil
}

// CheckPlatform refuses to train platform on a host of another kind.
func CheckPlatform(platform string, host hw.Host) error {
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

// TrainPlan is a set of training runs over the configured pipeline.
type TrainPlan struct {
	Pipeline *Pipeline
	Runs     []*Task
}

// PlanTraining builds the pipeline and one train task per framework ×
// model × repetition (RUNS) for platform, with exec running the launches.
// On the cpu platform models become their proxies and parallelism is one
// process. With skipRefused, a combination the framework refuses (TorchTitan
// and Qwen's QKV bias, say) is reported and left out instead of failing
// the whole plan: train:all asks for every combination, train:run for one.
func (w *Workspace) PlanTraining(platform string, fws, mdls []string, host hw.Host, exec Executor, skipRefused bool) (*TrainPlan, error) {
	cfg, err := w.platformConfig(platform)
	if err != nil {
		return nil, err
	}
	p, err := w.BuildPipeline()
	if err != nil {
		return nil, err
	}
	plan := &TrainPlan{Pipeline: p}
	for _, fw := range fws {
		for _, m := range mdls {
			in, err := w.trainInputsForCfg(p, cfg, platform, fw, m, host, exec)
			if err != nil {
				return nil, err
			}
			for run := 0; run < cfg.Int("RUNS"); run++ {
				in.RunIndex = run
				t, err := w.TrainTask(in)
				if err != nil && skipRefused {
					w.Printf("skipping %s × %s on %s: %v\n", fw, m, platform, err)
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

// ReportRuns prints where each run's result went.
func (w *Workspace) ReportRuns(runs []*Task) {
	for _, t := range runs {
		state := "ran"
		if t.Cached() {
			state = "cached"
		}
		w.Printf("%s: %s (%s)\n", t.ID, rel(w.Root, t.Outputs[0].Path), state)
	}
}

// trainInputsForCfg is one run of the configured pipeline under cfg.
func (w *Workspace) trainInputsForCfg(p *Pipeline, cfg *Config, platform, fw, model string, host hw.Host, exec Executor) (TrainInputs, error) {
	base := strings.TrimSuffix(model, "-proxy")
	i := -1
	for j, m := range cfg.List("MODELS") {
		if m == base {
			i = j
		}
	}
	if i < 0 {
		return TrainInputs{}, fmt.Errorf("model %s is not in MODELS=%s", base, cfg.Get("MODELS"))
	}
	if platform == hw.PlatformCPU && !strings.HasSuffix(model, "-proxy") {
		model += "-proxy"
	}
	mm, err := models.Lookup(model)
	if err != nil {
		return TrainInputs{}, err
	}
	enc := p.Encodes[i]
	tok := TokenizerSpec{Path: p.Tokenizers[i].Outputs[0].Path, Model: &mm, EOD: mm.EOD}
	return TrainInputs{
		Platform: platform, Framework: fw, Model: model, Dataset: cfg.Get("DATASET"),
		TrainPrefix: strings.TrimSuffix(enc.Outputs[0].Path, ".bin"), Tokenizer: tok, Encode: enc, Host: host, Config: cfg, Executor: exec,
	}, nil
}

// platformConfig is the configuration runs of platform use: on the cpu
// platform one process per node, so TP=PP=1 and DP=NNODES (GBS follows).
func (w *Workspace) platformConfig(platform string) (*Config, error) {
	if platform != hw.PlatformCPU {
		return w.Config, nil
	}
	return w.Config.With("train:cpu", map[string]string{"TP": "1", "PP": "1", "DP": w.Config.Get("NNODES"), "GBS": ""})
}
