package tasks

import "github.com/rivalbench/rival/hw"

// plannedRun is one training run a target of this workspace makes, as far
// as verify:result needs it: the encoded dataset it trains on and its
// configuration. The train targets and the demo each say which runs they
// make (trainTargetRun, demoRuns), and verify:result checks a result
// against the same runs.
type plannedRun struct {
	Platform, Framework, Model, Dataset string
	// Variant tells apart the demo's configurations ("dp1", "dp2").
	Variant string
	// TrainPrefix is the encoded train split, without .bin/.idx.
	TrainPrefix string
	// Config is the configuration before the CPU precision, which TrainTask
	// chooses; ConfigErr says why there is none.
	Config    *config
	ConfigErr error
}

// trainTargetRun is the run train:run, train:<platform> and train:cpu make
// of framework and model on platform: on the dataset encode writes for the
// model (a proxy trains on its full model's encoding, made with the same
// tokenizer) and in the platform's configuration.
func (w *Workspace) trainTargetRun(platform, framework, model, dataset string) plannedRun {
	cfg, err := w.platformConfig(platform)
	return plannedRun{Platform: platform, Framework: framework, Model: model, Dataset: dataset,
		TrainPrefix: w.data().DatasetPrefix(dataset, encodedModel(model), "train"), Config: cfg, ConfigErr: err}
}

// configFingerprint is the fingerprint of the configuration the run
// trains in, the CPU's precision chosen as TrainTask chooses it.
func (r plannedRun) configFingerprint() (string, error) {
	if r.ConfigErr != nil {
		return "", r.ConfigErr
	}
	cfg := r.Config
	if r.Platform == hw.PlatformCPU {
		var err error
		if cfg, _, err = cpuTrainConfig(cfg); err != nil {
			return "", err
		}
	}
	return cfg.fingerprint().String(), nil
}
