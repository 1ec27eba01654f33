package tasks

import (
	"errors"
	"io/fs"

	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

// trainInputs name one training run of the workspace: what trains, on which data and through which
// executor (Run, whose Workload trainingRun fills from Config), in the configuration Config (nil:
// the workspace's).
type trainInputs struct {
	training.Run
	Config *config
}

// trainTask builds one training run; package tasks/training does the work. A CPU trains in the
// precision it does fast: the configuration says so before anything is fingerprinted, so the key,
// the launch, the log and the result all name the precision that ran.
func (w *Workspace) trainTask(in trainInputs) (*dag.Task, error) {
	cfg := in.Config
	if cfg == nil {
		cfg = w.config
	}
	var prec training.CPUPrecision
	if in.Platform == hw.PlatformCPU {
		var err error
		if cfg, prec, err = cpuTrainConfig(cfg); err != nil {
			return nil, err
		}
	}
	run := trainingRun(in, cfg)
	run.Workload.CPUPrecision = prec
	site, err := w.trainingSite()
	if err != nil {
		return nil, err
	}
	return training.Task(run, site)
}

// trainingRun is in's run in the configuration cfg.
func trainingRun(in trainInputs, cfg *config) training.Run {
	r := in.Run
	r.Workload = training.Workload{
		Fair: fairFromConfig(cfg), NNodes: cfg.int("NNODES"), Values: cfg.trainingValues(),
		Fingerprint: cfg.fingerprint().String(), Timeout: cfg.get("TRAIN_TIMEOUT"), Force: cfg.bool("FORCE"),
	}
	return r
}

// trainingSite is where this workspace's runs write and what they share.
func (w *Workspace) trainingSite() (training.Site, error) {
	every, err := w.env.powerInterval()
	if err != nil {
		return training.Site{}, err
	}
	return training.Site{
		Root: w.root, OutputDir: w.path("OUTPUT_DIR"), DataDir: w.path("DATA_DIR"), CPUInfo: cpuFlagsPath,
		PowerInterval: every, RivalVersion: rivalVersion, Notes: &w.notes,
	}, nil
}

// trainLaunch is the launch of one run named name for a dataset fingerprint fp (see
// training.Launch), in the configuration cfg.
func (w *Workspace) trainLaunch(in trainInputs, cfg *config, name, fp string) (core.Launch, []executor.PathMap, string, error) {
	site, err := w.trainingSite()
	if err != nil {
		return core.Launch{}, nil, "", err
	}
	return training.Launch(trainingRun(in, cfg), site, name, fp)
}

// slurmScript is the batch script a run would submit (train:slurm-script).
func (w *Workspace) slurmScript(in trainInputs) (string, error) {
	ex, ok := in.Executor.(*executor.Slurm)
	if !ok {
		return "", errors.New("slurm script: the run is not a Slurm run")
	}
	cfg := in.Config
	if cfg == nil {
		cfg = w.config
	}
	fp := "unencoded"
	if m, err := training.ReadManifest(in.TrainPrefix); err == nil {
		fp = data.DatasetDigest(m.Fingerprint).Short()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	l, maps, _, err := w.trainLaunch(in, cfg, in.RunName(), fp)
	if err != nil {
		return "", err
	}
	_, script, err := ex.Job(l, maps)
	return script, err
}
