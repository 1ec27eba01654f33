package tasks

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/internal/units"
	"github.com/rivalbench/rival/kube"
	"github.com/rivalbench/rival/slurm"
)

// kubeExecutor hands a run to a Kubernetes cluster (CLUSTER=k8s): an Indexed Job with one pod per
// node running the same framework launch in the pushed platform image, a headless Service for the
// rendezvous, the data, cache and run folders from PersistentVolumeClaims. It follows the Job,
// streams rank 0's log, and deletes the Job, its pods and the Service however the run ends.
type kubeExecutor struct {
	Cluster     *kube.Cluster // nil: the manifests can be printed, not run
	ClusterName string        // the kubeconfig's name for the cluster, for the result
	Platform    string
	NNodes      int
	GPUsPerNode int
	Image       string // repo@sha256:...

	Namespace, ServiceAccount, PriorityClass string
	NodeSelector                             map[string]string
	Tolerations                              []corev1.Toleration
	// The claims and the folders of this workspace they hold: DataClaim holds DataDir (datasets,
	// tokenizers), CacheClaim DataDir/megatron-cache (DataClaim when empty), OutputClaim OutputDir.
	DataClaim, CacheClaim, OutputClaim string
	DataDir, OutputDir                 string
	// Grace is how long deleting the run's objects may take once it ends.
	Grace time.Duration
}

// Kind implements Executor.
func (k *kubeExecutor) Kind() executorKind { return executorKube }

// ImageDigest implements Executor.
func (k *kubeExecutor) ImageDigest() string { return k.Image }

// Place implements Executor: the usual /rival mount points.
func (k *kubeExecutor) Place(dirs []PathMap) []PathMap { return dirs }

var dnsUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// jobName is a run's Job and Service name: its run folder's name as a DNS label, with a short hash
// of the folder so that two runs never share one.
func jobName(runDir string) string {
	base := strings.Trim(dnsUnsafe.ReplaceAllString(strings.ToLower(filepath.Base(runDir)), "-"), "-")
	base = strings.TrimPrefix(base, "train-")
	if len(base) > 36 {
		base = strings.Trim(base[:36], "-")
	}
	return "rival-" + base + "-" + fmt.Sprintf("%x", sha256.Sum256([]byte(runDir)))[:6]
}

// claimPath is where a host folder lies inside the claim that holds root.
func claimPath(claim, setting, root, host string) (string, error) {
	if claim == "" {
		return "", fmt.Errorf("kube: no claim for %s: set %s to a PersistentVolumeClaim that holds %s (see docs/kubernetes.md)", host, setting, root)
	}
	rel, err := filepath.Rel(root, host)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("kube: %s is outside %s, which %s=%s holds: keep the run's folders under DATA_DIR and OUTPUT_DIR", host, root, setting, claim)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

// kubeRun is the kube.Run of a launch.
func (k *kubeExecutor) kubeRun(launch core.Launch, maps []PathMap) (kube.Run, error) {
	runDir := ""
	var vols []kube.Volume
	for _, m := range maps {
		claim, setting, root := k.DataClaim, "KUBE_DATA_CLAIM", k.DataDir
		switch m.Role {
		case "run":
			runDir = m.Host
			claim, setting, root = k.OutputClaim, "KUBE_OUTPUT_CLAIM", k.OutputDir
		case "cache":
			if k.CacheClaim != "" {
				claim, setting, root = k.CacheClaim, "KUBE_CACHE_CLAIM", filepath.Join(k.DataDir, "megatron-cache")
			}
		}
		sub, err := claimPath(claim, setting, root, m.Host)
		if err != nil {
			return kube.Run{}, err
		}
		vols = append(vols, kube.Volume{Claim: claim, SubPath: sub, MountPath: m.Inside, ReadOnly: m.ReadOnly})
	}
	if runDir == "" {
		return kube.Run{}, errors.New("kube: no run folder among the mounts")
	}
	r := kube.Run{
		Name: jobName(runDir), Namespace: k.Namespace, Platform: k.Platform, NNodes: k.NNodes, GPUsPerNode: k.GPUsPerNode,
		Image: k.Image, Framework: launch.Framework, Volumes: vols,
		Train:          kube.Step{Command: launch.Command, Env: launch.Env, WorkDir: launch.WorkDir},
		ServiceAccount: k.ServiceAccount, PriorityClass: k.PriorityClass, NodeSelector: k.NodeSelector, Tolerations: k.Tolerations,
	}
	if p := launch.Preflight; p != nil {
		env := map[string]string{}
		for key, v := range p.Env {
			if !core.IsRendezvousVar(key) { // the manifest sets those per pod
				env[key] = v
			}
		}
		wd := p.WorkDir
		if wd == "" {
			wd = launch.WorkDir
		}
		r.Preflight = &kube.Step{Command: p.Command, Env: env, WorkDir: wd}
	}
	return r, nil
}

// objects are the Service and Job of a launch.
func (k *kubeExecutor) objects(launch core.Launch, maps []PathMap) (*corev1.Service, *batchv1.Job, error) {
	r, err := k.kubeRun(launch, maps)
	if err != nil {
		return nil, nil, err
	}
	return kube.Objects(r)
}

// manifest is the YAML a launch submits (train:k8s-manifest).
func (k *kubeExecutor) manifest(launch core.Launch, maps []PathMap) ([]byte, error) {
	r, err := k.kubeRun(launch, maps)
	if err != nil {
		return nil, err
	}
	return kube.Manifest(r)
}

// Run implements Executor.
func (k *kubeExecutor) Run(ctx context.Context, launch core.Launch, maps []PathMap, onLine func(string)) (execInfo, error) {
	if k.Cluster == nil {
		return execInfo{}, errors.New("kube: no cluster client")
	}
	svc, job, err := k.objects(launch, maps)
	if err != nil {
		return execInfo{}, err
	}
	grace := k.Grace
	if grace <= 0 {
		grace = stopGrace
	}
	info := execInfo{ImageID: k.Image, KubeJob: k.ClusterName + "/" + job.Namespace + "/" + job.Name}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	pf := newPreflightLines(launch, stop)
	final, err := k.Cluster.Run(rctx, svc, job, grace, func(l string) {
		pf.see(l)
		onLine(l)
	})
	info.NodeList, info.ExitCode, info.Ran, info.Effective, info.Samples = final.Nodes, final.ExitCode, pf.ran, pf.effective, pf.samples
	if pf.mismatch != nil {
		return info, fmt.Errorf("preflight of Kubernetes job %s stopped the run (job deleted): %w", info.KubeJob, pf.mismatch)
	}
	if err != nil && pf.failed != "" {
		return info, fmt.Errorf("preflight of Kubernetes job %s stopped the run before torchrun started: %s", info.KubeJob, pf.failed)
	}
	return info, err
}

// useKube reports whether multi-node runs go to Kubernetes: a cluster run (UseSlurm) with CLUSTER=k8s.
func (w *Workspace) useKube() bool { return useSlurm(w.Config) && w.Env.cluster() == "k8s" }

// kubeImage is the image Kubernetes runs of platform use: KUBE_IMAGE, else what image:push delivered.
// Only a digest will do: each node pulls on its own.
func (w *Workspace) kubeImage(platform string, built *imageRecord) (string, error) {
	if v := w.Env.kube("IMAGE"); v != "" {
		return v, nil
	}
	rec, err := w.readPushRecord(platform)
	if err != nil {
		return "", err
	}
	if rec == nil {
		return "", fmt.Errorf("kube: the %s image exists only in this host's Docker daemon and every node pulls it from a registry: push it with `go run mage.go image:push %s REGISTRY/REPOSITORY[:TAG]`, or set KUBE_IMAGE=REPOSITORY@sha256:...", platform, platform)
	}
	if built != nil && built.ImageID != "" && built.ImageID != rec.LocalID {
		return "", fmt.Errorf("the %s image was rebuilt (%s) after image:push pushed %s (%s): push it again with `go run mage.go image:push %s %s`",
			platform, shortID(built.ImageID), rec.Ref(), shortID(rec.LocalID), platform, rec.Repository)
	}
	return rec.Ref(), nil
}

// newKubeExecutor builds the executor for platform from the config and the KUBE_ settings; connect
// false leaves it without a client (train:k8s-manifest).
func (w *Workspace) newKubeExecutor(cfg *Config, platform string, host hw.Host, image string, connect bool) (*kubeExecutor, error) {
	gpus := len(host.GPUs)
	if platform == hw.PlatformCPU {
		gpus = 0
	}
	if err := slurm.Check(cfg.int("NNODES"), gpus, cfg.int("TP"), cfg.int("PP"), cfg.int("DP")); err != nil {
		return nil, err
	}
	sel, err := kube.ParseSelector(w.Env.kube("NODE_SELECTOR"))
	if err != nil {
		return nil, fmt.Errorf("KUBE_NODE_SELECTOR: %w", err)
	}
	tol, err := kube.ParseTolerations(w.Env.kube("TOLERATIONS"))
	if err != nil {
		return nil, fmt.Errorf("KUBE_TOLERATIONS: %w", err)
	}
	pending, err := units.ParseAge(w.Env.kube("PENDING_TIMEOUT"))
	if err != nil {
		return nil, fmt.Errorf("KUBE_PENDING_TIMEOUT: %w", err)
	}
	k := &kubeExecutor{
		Platform: platform, NNodes: cfg.int("NNODES"), GPUsPerNode: gpus, Image: image,
		Namespace: w.Env.kube("NAMESPACE"), ServiceAccount: w.Env.kube("SERVICE_ACCOUNT"),
		PriorityClass: w.Env.kube("PRIORITY_CLASS"), NodeSelector: sel, Tolerations: tol,
		DataClaim: w.Env.kube("DATA_CLAIM"), CacheClaim: w.Env.kube("CACHE_CLAIM"), OutputClaim: w.Env.kube("OUTPUT_CLAIM"),
		DataDir: w.path("DATA_DIR"), OutputDir: w.path("OUTPUT_DIR"), Grace: w.Env.stopGrace(),
	}
	if connect {
		client, name, err := kube.Connect(w.Env.kube("CONTEXT"))
		if err != nil {
			return nil, err
		}
		k.ClusterName = name
		k.Cluster = &kube.Cluster{Client: client, PendingTimeout: pending, Status: func(s string) { fmt.Fprintln(os.Stderr, s) }}
	}
	return k, nil
}

// kubeExecutorFor is the Kubernetes executor of platform; built is the image this host built, to
// check the pushed one is still it (nil: not checked).
func (w *Workspace) kubeExecutorFor(platform string, host hw.Host, built *imageRecord, connect bool) (*kubeExecutor, error) {
	if built != nil && built.ImageID == "" {
		built = nil
	}
	image, err := w.kubeImage(platform, built)
	if err != nil {
		return nil, err
	}
	cfg, err := w.platformConfig(platform)
	if err != nil {
		return nil, err
	}
	return w.newKubeExecutor(cfg, platform, host, image, connect)
}
