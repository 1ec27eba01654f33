package tasks

import "github.com/rivalbench/rival/hw"

// demoModel is the proxy the demo trains: Mistral's architecture and its
// Apache-2.0 tokenizer, shrunk to train in seconds on two CPU cores.
const demoModel = "mistral-proxy"

// demoRepeats is how often the demo repeats each configuration, so the
// report has confidence intervals.
const demoRepeats = 3

// demoConfig shrinks the fair configuration to a CPU-sized run; every
// other key (seed, optimizer) stays as config.env says.
var demoConfig = map[string]string{
	"SL": "128", "MBS": "2", "GA": "2", "DP": "1", "TP": "1", "PP": "1", "GBS": "",
	"TRAIN_ITERS": "16", "WARMUP_STEPS": "2", "LR": "1.0e-3", "MIN_LR": "1.0e-4", "PROFILE": "0",
	// The held-out split evaluated every 4 iterations, 8 sequences from the first each time.
	"EVAL_INTERVAL_SAMPLES": "16", "EVAL_SAMPLES": "8",
}

// demoTargetLoss is the held-out loss the demo's report measures time to when TARGET_LOSS is empty:
// the proxy's held-out loss falls from about 9 after 4 iterations to about 6.5 after 16.
const demoTargetLoss = "7"

// demoVariant is one configuration the demo compares: the same global
// batch (MBS × DP × GA = 4) in one process or in two data-parallel ones.
type demoVariant struct {
	Name   string // joins the run's name: train_cpu_fsdp_mistral-proxy_sample_dp2.json
	Values map[string]string
}

var demoVariants = []demoVariant{
	{Name: "dp1", Values: map[string]string{"DP": "1", "GA": "2"}},
	{Name: "dp2", Values: map[string]string{"DP": "2", "GA": "1"}},
}

// demoPrefix is where the demo encodes the sample corpus: its train and
// test splits are demoPrefix()+"-train" and "-test".
func (w *Workspace) demoPrefix() string { return w.path("DATA_DIR", "demo", "sample-mistral") }

// demoRuns are the runs the demo trains, each DemoRuns times: DemoModel on
// the sample in each of demoVariants, with the demo's configuration.
func (w *Workspace) demoRuns() ([]plannedRun, error) {
	var out []plannedRun
	for _, v := range demoVariants {
		cfg, err := w.config.with("demo", demoConfig)
		if err != nil {
			return nil, err
		}
		if cfg, err = cfg.with("demo "+v.Name, v.Values); err != nil {
			return nil, err
		}
		if cfg, err = cfg.onDemoDataset(); err != nil {
			return nil, err
		}
		out = append(out, plannedRun{Platform: hw.PlatformCPU, Framework: "fsdp", Model: demoModel, Dataset: sampleDataset, Variant: v.Name,
			TrainPrefix: w.demoPrefix() + "-train", Config: cfg})
	}
	return out, nil
}
