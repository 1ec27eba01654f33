package executor

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/kube/kubespec"
)

// Kube hands a run to a Kubernetes cluster (CLUSTER=k8s): an Indexed Job with one pod per
// node running the same framework launch in the pushed platform image, a headless Service for the
// rendezvous, the data, cache and run folders from PersistentVolumeClaims. It follows the Job,
// streams rank 0's log, and deletes the Job, its pods and the Service however the run ends.
//
// It describes the run (kubespec.Run) and leaves the Kubernetes client to Cluster and Manifests:
// in the product, the rival-kube program (kube/kubeproc), so that client-go stays out of the
// targets' build.
type Kube struct {
	Cluster KubeCluster // nil: the manifests can be printed, not run
	// Manifests is a run's objects as YAML (train:k8s-manifest).
	Manifests   func(kubespec.Run) ([]byte, error)
	ClusterName string // the kubeconfig's name for the cluster, for the result
	Platform    string
	NNodes      int
	GPUsPerNode int
	Image       string // repo@sha256:...

	Namespace, ServiceAccount, PriorityClass string
	NodeSelector                             map[string]string
	Tolerations                              []kubespec.Toleration
	// The claims and the folders of this workspace they hold: DataClaim holds DataDir (datasets,
	// tokenizers), CacheClaim DataDir/megatron-cache (DataClaim when empty), OutputClaim OutputDir.
	DataClaim, CacheClaim, OutputClaim string
	DataDir, OutputDir                 string
	// Grace is how long deleting the run's objects may take once it ends.
	Grace time.Duration
}

// KubeCluster runs a run on a cluster to its end and deletes its objects however it ends:
// kubeproc.Cluster (through the rival-kube program), or kube.Cluster in process.
type KubeCluster interface {
	Execute(ctx context.Context, r kubespec.Run, grace time.Duration, onLine func(string)) (kubespec.Final, error)
}

// Kind implements Executor.
func (k *Kube) Kind() Kind { return KindKube }

// ImageDigest implements Executor.
func (k *Kube) ImageDigest() string { return k.Image }

// Place implements Executor: the usual /rival mount points.
func (k *Kube) Place(dirs []PathMap) []PathMap { return dirs }

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

// kubeRun is the kubespec.Run of a launch.
func (k *Kube) kubeRun(launch core.Launch, maps []PathMap) (kubespec.Run, error) {
	runDir := ""
	var vols []kubespec.Volume
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
			return kubespec.Run{}, err
		}
		vols = append(vols, kubespec.Volume{Claim: claim, SubPath: sub, MountPath: m.Inside, ReadOnly: m.ReadOnly})
	}
	if runDir == "" {
		return kubespec.Run{}, errors.New("kube: no run folder among the mounts")
	}
	r := kubespec.Run{
		Name: jobName(runDir), Namespace: k.Namespace, Platform: k.Platform, NNodes: k.NNodes, GPUsPerNode: k.GPUsPerNode,
		Image: k.Image, Framework: launch.Framework, Volumes: vols,
		Train:          kubespec.Step{Command: launch.Command, Env: launch.Env, WorkDir: launch.WorkDir},
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
		r.Preflight = &kubespec.Step{Command: p.Command, Env: env, WorkDir: wd}
	}
	return r, nil
}

// Manifest is the YAML a launch submits (train:k8s-manifest). The run is checked here first, so
// that a setting to fix is told without building the Kubernetes client.
func (k *Kube) Manifest(launch core.Launch, maps []PathMap) ([]byte, error) {
	r, err := k.kubeRun(launch, maps)
	if err != nil {
		return nil, err
	}
	if r, err = r.Validate(); err != nil {
		return nil, err
	}
	if k.Manifests == nil {
		return nil, errors.New("kube: no way to write manifests")
	}
	return k.Manifests(r)
}

// Run implements Executor.
func (k *Kube) Run(ctx context.Context, launch core.Launch, maps []PathMap, onLine func(string)) (Info, error) {
	if k.Cluster == nil {
		return Info{}, errors.New("kube: no cluster client")
	}
	r, err := k.kubeRun(launch, maps)
	if err != nil {
		return Info{}, err
	}
	if r, err = r.Validate(); err != nil {
		return Info{}, err
	}
	grace := k.Grace
	if grace <= 0 {
		grace = StopGrace
	}
	info := Info{ImageID: k.Image, KubeJob: k.ClusterName + "/" + r.Namespace + "/" + r.Name}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	pf := newPreflightLines(launch, stop)
	final, err := k.Cluster.Execute(rctx, r, grace, func(l string) {
		pf.see(l)
		onLine(l)
	})
	info.NodeList, info.ExitCode, info.Ran, info.Effective, info.Samples, info.HeldOut = final.Nodes, final.ExitCode, pf.ran, pf.effective, pf.samples, pf.heldOut
	if pf.mismatch != nil {
		return info, fmt.Errorf("preflight of Kubernetes job %s stopped the run (job deleted): %w", info.KubeJob, pf.mismatch)
	}
	if err != nil && pf.failed != "" {
		return info, fmt.Errorf("preflight of Kubernetes job %s stopped the run before torchrun started: %s", info.KubeJob, pf.failed)
	}
	return info, err
}
