package tasks

import (
	"context"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/hw"
)

// executorFor picks how runs of platform execute: through Slurm when
// NNODES > 1 or SLURM=1, in containers of the platform image for GPUs (and
// for cpu with CONTAINER=1), else as host processes.
func (w *Workspace) executorFor(ctx context.Context, platform string, host hw.Host) (executor, func(), error) {
	nothing := func() {}
	var rec imageRecord
	var e *container.Engine
	needImage := platform != hw.PlatformCPU || w.Env.container()
	if needImage {
		var err error
		if e, rec, err = w.ensurePlatformImage(ctx, platform); err != nil {
			return nil, nothing, err
		}
		nothing = func() { e.Close() }
	}
	if w.useKube() {
		ex, err := w.kubeExecutorFor(platform, host, &rec, true)
		return ex, nothing, err
	}
	if useSlurm(w.Config) {
		var built *imageRecord
		if needImage {
			built = &rec
		}
		image, ran, err := w.slurmImage(platform, built)
		if err != nil {
			return nil, nothing, err
		}
		cfg, err := w.platformConfig(platform)
		if err != nil {
			return nil, nothing, err
		}
		ex, err := w.newSlurmExecutor(cfg, platform, host, image, ran)
		return ex, nothing, err
	}
	if needImage {
		return &dockerExecutor{Engine: e, Image: rec, Platform: platform}, nothing, nil
	}
	if err := checkTorch(ctx, "/usr/bin/python3"); err != nil {
		return nil, nothing, err
	}
	return hostExecutor{}, nothing, nil
}
