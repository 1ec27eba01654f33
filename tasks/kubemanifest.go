package tasks

import (
	"context"
	"errors"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

// kubeManifest is the manifest a run would submit (train:k8s-manifest).
func (w *Workspace) kubeManifest(in trainInputs) ([]byte, error) {
	ex, ok := in.Executor.(*executor.Kube)
	if !ok {
		return nil, errors.New("k8s manifest: the run is not a Kubernetes run")
	}
	cfg := in.Config
	if cfg == nil {
		cfg = w.config
	}
	l, maps, _, err := w.trainLaunch(in, cfg, in.RunName(), w.launchFingerprint(in))
	if err != nil {
		return nil, err
	}
	return ex.Manifest(l, maps)
}

// KubeManifestTarget prints the Service and Job of one run without submitting them.
func (w *Workspace) KubeManifestTarget(ctx context.Context, platform, framework, model string) error {
	host, err := w.clusterHost(ctx, platform)
	if err != nil {
		return err
	}
	if err := w.checkKubeSettings("train:k8s-manifest", platform); err != nil {
		return err
	}
	ex, err := w.kubeExecutorFor(ctx, platform, host, nil, false)
	if err != nil {
		return err
	}
	cfg, err := w.platformConfig(platform)
	if err != nil {
		return err
	}
	return w.printLaunchFile(cfg, platform, framework, model, host, ex, w.kubeManifest)
}

// launchFingerprint is the dataset fingerprint a launch's cache folder is named by, "unencoded" when
// the dataset is not encoded yet (as train:slurm-script names it).
func (w *Workspace) launchFingerprint(in trainInputs) string {
	if m, err := training.ReadManifest(in.TrainPrefix); err == nil {
		return data.DatasetDigest(m.Fingerprint).Short()
	}
	return "unencoded"
}

// clusterHost is the host a cluster run's nodes are taken to be: this host's GPUs, or, on a login
// node without any, GPUS_PER_NODE of them.
func (w *Workspace) clusterHost(ctx context.Context, platform string) (hw.Host, error) {
	host := hw.Host{Platform: platform}
	if platform == hw.PlatformCPU {
		return host, nil
	}
	host, err := w.detectHost(ctx)
	if err != nil {
		return host, err
	}
	if len(host.GPUs) == 0 {
		host = hw.Host{Platform: platform}
		for i := 0; i < w.env.gpUsPerNode(); i++ {
			host.GPUs = append(host.GPUs, hw.GPU{Index: i})
		}
	}
	return host, nil
}
