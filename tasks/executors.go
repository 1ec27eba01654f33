package tasks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/internal/goprog"
	"github.com/rivalbench/rival/internal/units"
	"github.com/rivalbench/rival/kube/kubeproc"
	"github.com/rivalbench/rival/kube/kubespec"
	"github.com/rivalbench/rival/slurm"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/images"
)

// executorFor picks how runs of platform execute: through Slurm when
// NNODES > 1 or SLURM=1, in containers of the platform image for GPUs (and
// for cpu with CONTAINER=1), else as host processes.
func (w *Workspace) executorFor(ctx context.Context, platform string, host hw.Host) (executor.Executor, func(), error) {
	nothing := func() {}
	var rec images.Record
	var e *container.Engine
	needImage := platform != hw.PlatformCPU || w.env.container()
	if needImage {
		var err error
		if e, rec, err = w.images().Connect(ctx, platform); err != nil {
			return nil, nothing, err
		}
		nothing = func() { e.Close() }
	}
	if w.useKube() {
		ex, err := w.kubeExecutorFor(ctx, platform, host, &rec, true)
		return ex, nothing, err
	}
	if useSlurm(w.config) {
		var built *images.Record
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
		return &executor.Docker{Engine: e, ImageID: rec.ImageID, Platform: platform}, nothing, nil
	}
	if err := checkTorch(ctx, "/usr/bin/python3"); err != nil {
		return nil, nothing, err
	}
	return executor.Host{}, nothing, nil
}

// useSlurm reports whether runs go through Slurm: NNODES > 1 or SLURM=1.
func useSlurm(cfg *config) bool { return cfg.int("NNODES") > 1 || cfg.bool("SLURM") }

// newSlurmExecutor builds the executor for platform from the config.
func (w *Workspace) newSlurmExecutor(cfg *config, platform string, host hw.Host, image, imageID string) (*executor.Slurm, error) {
	pending, err := units.ParseAge(cfg.get("SLURM_PENDING_TIMEOUT"))
	if err != nil {
		return nil, err
	}
	gpus := len(host.GPUs)
	if platform == hw.PlatformCPU {
		gpus = 0
	}
	if err := slurm.Check(cfg.int("NNODES"), gpus, cfg.int("TP"), cfg.int("PP"), cfg.int("DP")); err != nil {
		return nil, err
	}
	return &executor.Slurm{
		Cluster: slurm.Cluster{PendingTimeout: pending}, Platform: platform, NNodes: cfg.int("NNODES"), GPUsPerNode: gpus,
		TP: cfg.int("TP"), PP: cfg.int("PP"), DP: cfg.int("DP"), Image: image, ImageID: imageID,
		Partition: cfg.get("SLURM_PARTITION"), Account: cfg.get("SLURM_ACCOUNT"), Tim: cfg.get("SLURM_TIME"),
	}, nil
}

// useKube reports whether multi-node runs go to Kubernetes: a cluster run (UseSlurm) with CLUSTER=k8s.
func (w *Workspace) useKube() bool { return useSlurm(w.config) && w.env.cluster() == "k8s" }

// newKubeExecutor builds the executor for platform from the config and the KUBE_ settings; connect
// false leaves it without a client (train:k8s-manifest).
func (w *Workspace) newKubeExecutor(ctx context.Context, cfg *config, platform string, host hw.Host, image string, connect bool) (*executor.Kube, error) {
	gpus := len(host.GPUs)
	if platform == hw.PlatformCPU {
		gpus = 0
	}
	if err := slurm.Check(cfg.int("NNODES"), gpus, cfg.int("TP"), cfg.int("PP"), cfg.int("DP")); err != nil {
		return nil, err
	}
	for _, name := range []string{"NAMESPACE", "SERVICE_ACCOUNT", "PRIORITY_CLASS", "DATA_CLAIM", "CACHE_CLAIM", "OUTPUT_CLAIM", "CONTEXT"} {
		if err := kubespec.CheckSetting("KUBE_"+name, w.env.kube(name)); err != nil {
			return nil, err
		}
	}
	sel, err := kubespec.ParseSelector(w.env.kube("NODE_SELECTOR"))
	if err != nil {
		return nil, fmt.Errorf("KUBE_NODE_SELECTOR: %w", err)
	}
	tol, err := kubespec.ParseTolerations(w.env.kube("TOLERATIONS"))
	if err != nil {
		return nil, fmt.Errorf("KUBE_TOLERATIONS: %w", err)
	}
	pending, err := units.ParseAge(w.env.kube("PENDING_TIMEOUT"))
	if err != nil {
		return nil, fmt.Errorf("KUBE_PENDING_TIMEOUT: %w", err)
	}
	helper := w.kubeHelper()
	k := &executor.Kube{
		Manifests: func(r kubespec.Run) ([]byte, error) { return helper.Manifest(ctx, r) },
		Platform:  platform, NNodes: cfg.int("NNODES"), GPUsPerNode: gpus, Image: image,
		Namespace: w.env.kube("NAMESPACE"), ServiceAccount: w.env.kube("SERVICE_ACCOUNT"),
		PriorityClass: w.env.kube("PRIORITY_CLASS"), NodeSelector: sel, Tolerations: tol,
		DataClaim: w.env.kube("DATA_CLAIM"), CacheClaim: w.env.kube("CACHE_CLAIM"), OutputClaim: w.env.kube("OUTPUT_CLAIM"),
		DataDir: w.path("DATA_DIR"), OutputDir: w.path("OUTPUT_DIR"), Grace: w.env.stopGrace(),
	}
	if connect {
		name, err := helper.Connect(ctx, w.env.kube("CONTEXT"))
		if err != nil {
			return nil, err
		}
		k.ClusterName = name
		k.Cluster = &kubeproc.Cluster{Helper: helper, Context: w.env.kube("CONTEXT"), PendingTimeout: pending,
			Status: func(s string) { fmt.Fprintln(os.Stderr, s) }}
	}
	return k, nil
}

// kubeHelper is the rival-kube program, which holds the Kubernetes client: built from this
// workspace's source into the cache's bin folder on first use.
func (w *Workspace) kubeHelper() *kubeproc.Helper {
	return &kubeproc.Helper{Dir: w.root, BinDir: w.binDir(), Notice: os.Stderr}
}

// program is p, one of the programs that hold a heavy library, built from this workspace's source
// into the cache's bin folder on first use.
func (w *Workspace) program(p goprog.Program) *goprog.Helper {
	return &goprog.Helper{Program: p, Dir: w.root, BinDir: w.binDir(), Notice: os.Stderr}
}

// binDir is the cache's bin folder, where those programs are built.
func (w *Workspace) binDir() string {
	dir := ""
	if w.cache != nil {
		dir = w.cache.Dir
	} else if d, err := cache.DefaultDir(); err == nil {
		dir = d
	}
	return filepath.Join(dir, "bin")
}

// kubeExecutorFor is the Kubernetes executor of platform; built is the image this host built, to
// check the pushed one is still it (nil: not checked).
func (w *Workspace) kubeExecutorFor(ctx context.Context, platform string, host hw.Host, built *images.Record, connect bool) (*executor.Kube, error) {
	if built != nil && built.ImageID == "" {
		built = nil
	}
	image, err := w.images().KubeImage(platform, w.env.kube("IMAGE"), built)
	if err != nil {
		return nil, err
	}
	cfg, err := w.platformConfig(platform)
	if err != nil {
		return nil, err
	}
	return w.newKubeExecutor(ctx, cfg, platform, host, image, connect)
}
