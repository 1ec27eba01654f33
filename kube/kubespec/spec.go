// Package kubespec is the plain description of a Kubernetes run and of what came of it, with no
// Kubernetes library: the targets fill it in and check it, package kube turns it into the
// Service and Indexed Job (through client-go), and package kubeproc carries it as JSON to the
// rival-kube program that runs them. Keeping it apart keeps client-go and the API types out of
// the targets' build.
package kubespec

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
)

// Labels every object of a run carries; RunLabel selects all of them.
const (
	RunLabel       = "rival.dev/run"
	FrameworkLabel = "rival.dev/framework"
	// IndexAnnotation is where the Job controller writes a pod's completion index.
	IndexAnnotation = "batch.kubernetes.io/job-completion-index"
	// TrainContainer and PreflightContainer name the pod's containers.
	TrainContainer     = "train"
	PreflightContainer = "preflight"
)

// GPUResource is the extended resource a platform's GPUs are requested as: the names the NVIDIA
// and AMD device plugins advertise. The cpu platform requests none ("").
func GPUResource(platform string) (string, error) {
	switch platform {
	case hw.PlatformNVIDIA:
		return "nvidia.com/gpu", nil
	case hw.PlatformAMD:
		return "amd.com/gpu", nil
	case hw.PlatformCPU:
		return "", nil
	}
	return "", fmt.Errorf("kube: platform %q: want %s, %s or %s", platform, hw.PlatformNVIDIA, hw.PlatformAMD, hw.PlatformCPU)
}

// Volume mounts a folder of a PersistentVolumeClaim into every pod.
type Volume struct {
	Claim     string `json:"claim"`             // the PersistentVolumeClaim's name (in the run's namespace)
	SubPath   string `json:"subPath,omitempty"` // folder inside the claim, slash-separated and relative; "" for its root
	MountPath string `json:"mountPath"`         // absolute, inside the container
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// Step is a command run in the image with an environment and a working directory.
type Step struct {
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	WorkDir string            `json:"workDir,omitempty"`
}

// Toleration lets the pods onto nodes with a matching taint; the fields and their JSON are
// Kubernetes' own (core/v1 Toleration).
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator,omitempty"` // "Exists" (any value) or "Equal"
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"` // "", "NoSchedule", "PreferNoSchedule" or "NoExecute"
	// TolerationSeconds bounds how long a NoExecute toleration keeps a pod on a newly tainted node.
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// Run is one multi-node benchmark run as Kubernetes runs it: an Indexed Job of NNodes pods (the
// completion index is the node rank) and a headless Service that gives pod 0 the DNS name the
// other nodes meet at.
type Run struct {
	Name      string `json:"name"` // the Job's and the Service's name: a DNS label (lowercase, digits, '-'), at most 50 characters
	Namespace string `json:"namespace"`
	Platform  string `json:"platform"` // hw.PlatformNVIDIA, hw.PlatformAMD or hw.PlatformCPU
	NNodes    int    `json:"nnodes"`
	// GPUsPerNode is requested from each node as the platform's extended resource; 0 on cpu.
	GPUsPerNode int `json:"gpusPerNode,omitempty"`
	// Image is the platform image by digest (repo@sha256:...): every node must run the same bytes,
	// and a tag is resolved by each node on its own.
	Image string `json:"image"`
	// Train is the per-node launch. Its Command may carry the torchrun flags kube.PerNodeArgs
	// rewrites; Kubernetes fills in $(NODE_RANK), $(MASTER_ADDR) and $(MASTER_PORT) from each
	// pod's environment.
	Train Step `json:"train"`
	// Preflight, when set, runs in every pod as an init container before Train: a non-zero exit
	// fails the pod before torchrun starts.
	Preflight *Step    `json:"preflight,omitempty"`
	Volumes   []Volume `json:"volumes,omitempty"`
	// MasterPort is the rendezvous port; 0: core.DefaultMasterPort.
	MasterPort int `json:"masterPort,omitempty"`

	ServiceAccount    string            `json:"serviceAccount,omitempty"`
	PriorityClass     string            `json:"priorityClass,omitempty"`
	NodeSelector      map[string]string `json:"nodeSelector,omitempty"`
	Tolerations       []Toleration      `json:"tolerations,omitempty"`
	Framework         string            `json:"framework,omitempty"`        // a label value
	ActiveDeadline    int64             `json:"activeDeadline,omitempty"`   // seconds the Job may run in all; 0: no limit
	ShmSize           string            `json:"shmSize,omitempty"`          // size of the memory-backed /dev/shm; "" for 16Gi
	TTLAfterFinishedS *int32            `json:"ttlAfterFinished,omitempty"` // nil: the Job stays until Rival deletes it
	// PodAnnotations are added to every pod (a cluster's own conventions: sidecar or network settings).
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
}

var (
	envKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	digestRE = regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)
)

// reservedEnv are the variables the manifest sets per pod: the rendezvous (and torchrun's PET_
// forms) and the Job controller's own.
func reservedEnv(name string) bool {
	return core.IsRendezvousVar(name) || name == "JOB_COMPLETION_INDEX"
}

// IsSecretName reports whether a variable's name marks it as a credential, whose value must never be
// written into a manifest.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	for _, s := range []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY", "PRIVATE_KEY"} {
		if strings.Contains(up, s) {
			return true
		}
	}
	return false
}

// Validate checks a run and fills in its defaults. The shm size is checked where it becomes a
// Kubernetes quantity (kube.Objects), with the API library's own parser.
func (r Run) Validate() (Run, error) {
	if r.Name == "" || len(r.Name) > 50 || len(isDNS1123Label(r.Name)) > 0 {
		return r, fmt.Errorf("kube: run name %q: want a DNS label of at most 50 characters (lowercase letters, digits, '-'), so pod names <name>-<rank>-<suffix> stay valid", r.Name)
	}
	if r.Namespace == "" {
		return r, errors.New("kube: no namespace: set KUBE_NAMESPACE")
	}
	if errs := isDNS1123Label(r.Namespace); len(errs) > 0 {
		return r, fmt.Errorf("kube: namespace %q: %s", r.Namespace, strings.Join(errs, "; "))
	}
	for what, v := range map[string]string{"service account": r.ServiceAccount, "priority class": r.PriorityClass} {
		if errs := isDNS1123Subdomain(v); v != "" && len(errs) > 0 {
			return r, fmt.Errorf("kube: %s %q: %s", what, v, strings.Join(errs, "; "))
		}
	}
	if r.NNodes < 1 {
		return r, fmt.Errorf("kube: NNODES is %d: a run needs at least one node", r.NNodes)
	}
	res, err := GPUResource(r.Platform)
	if err != nil {
		return r, err
	}
	if r.GPUsPerNode < 0 || (res == "" && r.GPUsPerNode != 0) {
		return r, fmt.Errorf("kube: %d GPUs per node on platform %s: want 0 on cpu, >= 0 otherwise", r.GPUsPerNode, r.Platform)
	}
	if !digestRE.MatchString(r.Image) {
		return r, fmt.Errorf("kube: image %q is not named by digest: every node pulls it on its own, so a tag can give them different bytes; push the image with `go run mage.go image:push PLATFORM REGISTRY/REPOSITORY` and run the repo@sha256:... it prints", r.Image)
	}
	if len(r.Train.Command) == 0 || r.Train.Command[0] == "" {
		return r, errors.New("kube: the launch command is empty")
	}
	steps := []*Step{&r.Train}
	if r.Preflight != nil {
		if len(r.Preflight.Command) == 0 {
			return r, errors.New("kube: the preflight command is empty")
		}
		steps = append(steps, r.Preflight)
	}
	for _, s := range steps {
		if s.WorkDir != "" && !path.IsAbs(s.WorkDir) {
			return r, fmt.Errorf("kube: working directory %q is not absolute", s.WorkDir)
		}
		for k := range s.Env {
			if !envKeyRE.MatchString(k) {
				return r, fmt.Errorf("kube: environment name %q is not a variable name", k)
			}
			if IsSecretName(k) {
				return r, fmt.Errorf("kube: %s looks like a credential and a manifest is readable by anyone who can read the Job: keep it in a Kubernetes Secret, not in the run's environment", k)
			}
			if reservedEnv(k) {
				return r, fmt.Errorf("kube: %s is set by the manifest itself, per pod", k)
			}
		}
	}
	seen := map[string]bool{}
	for i, v := range r.Volumes {
		if len(isDNS1123Subdomain(v.Claim)) > 0 {
			return r, fmt.Errorf("kube: volume %d: claim name %q is not a valid PersistentVolumeClaim name", i, v.Claim)
		}
		if !path.IsAbs(v.MountPath) || path.Clean(v.MountPath) != v.MountPath {
			return r, fmt.Errorf("kube: volume %d: mount path %q must be a clean absolute path", i, v.MountPath)
		}
		if v.SubPath != "" && (path.IsAbs(v.SubPath) || path.Clean(v.SubPath) != v.SubPath || strings.HasPrefix(v.SubPath, "..")) {
			return r, fmt.Errorf("kube: volume %d: sub-path %q must be a clean relative path inside claim %s", i, v.SubPath, v.Claim)
		}
		if seen[v.MountPath] {
			return r, fmt.Errorf("kube: two volumes mount at %s", v.MountPath)
		}
		seen[v.MountPath] = true
	}
	if r.MasterPort == 0 {
		r.MasterPort = core.DefaultMasterPort
	}
	if r.MasterPort < 1 || r.MasterPort > 65535 {
		return r, fmt.Errorf("kube: master port %d is not a TCP port", r.MasterPort)
	}
	if r.ShmSize == "" {
		r.ShmSize = "16Gi"
	}
	return r, nil
}

// MasterAddr is pod 0's DNS name: an Indexed Job's pods are named <job>-<index> as hosts, and the
// headless Service of the same name (the pods' subdomain) publishes them.
func (r Run) MasterAddr() string {
	return fmt.Sprintf("%s-0.%s.%s.svc", r.Name, r.Name, r.Namespace)
}

// Labels are the labels of a run's objects and pods.
func (r Run) Labels() map[string]string {
	l := map[string]string{RunLabel: r.Name, "app.kubernetes.io/managed-by": "rival"}
	if r.Framework != "" && len(isLabelValue(r.Framework)) == 0 {
		l[FrameworkLabel] = r.Framework
	}
	return l
}

// ParseTolerations reads tolerations written as kubectl taints are: KEY[=VALUE]:EFFECT, or
// KEY:EFFECT / KEY to tolerate any value ("Exists"), comma-separated; EFFECT may be empty for all.
func ParseTolerations(s string) ([]Toleration, error) {
	var out []Toleration
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		kv, effect, _ := strings.Cut(item, ":")
		key, value, hasValue := strings.Cut(kv, "=")
		t := Toleration{Key: key, Operator: "Exists"}
		if hasValue {
			t.Operator, t.Value = "Equal", value
		}
		switch effect {
		case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
			t.Effect = effect
		default:
			return nil, fmt.Errorf("kube: toleration %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", item, effect)
		}
		if errs := isLabelKey(key); key == "" || len(errs) > 0 {
			return nil, fmt.Errorf("kube: toleration %q: key %q is not a label key", item, key)
		}
		if hasValue {
			if errs := isLabelValue(value); len(errs) > 0 {
				return nil, fmt.Errorf("kube: toleration %q: value %q: %s", item, value, strings.Join(errs, "; "))
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// ParseSelector reads a node selector written as KEY=VALUE pairs, comma-separated.
func ParseSelector(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("kube: node selector %q: want KEY=VALUE", item)
		}
		if old, seen := out[k]; seen {
			return nil, fmt.Errorf("kube: node selector names %s twice (%s=%s and %s): a node has one value per label; keep one", k, k, old, item)
		}
		if errs := isLabelKey(k); len(errs) > 0 {
			return nil, fmt.Errorf("kube: node selector %q: key %q: %s", item, k, strings.Join(errs, "; "))
		}
		if errs := isLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("kube: node selector %q: value %q: %s", item, v, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// CheckSetting checks a KUBE_ setting that names a Kubernetes object where the settings are read,
// so a typo is refused before anything is built or submitted: KUBE_NAMESPACE is a DNS label,
// KUBE_SERVICE_ACCOUNT, KUBE_PRIORITY_CLASS and the claims (KUBE_*_CLAIM) DNS subdomains, and
// KUBE_CONTEXT (a kubeconfig's name, any text) holds no control character. An empty value is
// the setting's absence.
func CheckSetting(name, value string) error {
	if value == "" {
		return nil
	}
	var errs []string
	switch {
	case name == "KUBE_NAMESPACE":
		errs = isDNS1123Label(value)
	case name == "KUBE_SERVICE_ACCOUNT", name == "KUBE_PRIORITY_CLASS", strings.HasSuffix(name, "_CLAIM"):
		errs = isDNS1123Subdomain(value)
	case name == "KUBE_CONTEXT":
		if strings.IndexFunc(value, unicode.IsControl) >= 0 {
			errs = []string{"must not hold control characters (a newline, a tab, an escape)"}
		}
	default:
		return fmt.Errorf("kube: %s is not a setting that names an object", name)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s=%q: %s", name, value, strings.Join(errs, "; "))
	}
	return nil
}
