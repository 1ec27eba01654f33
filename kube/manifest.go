package kube

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

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
// and AMD device plugins advertise. The cpu platform requests none.
func GPUResource(platform string) (corev1.ResourceName, error) {
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
	Claim     string // the PersistentVolumeClaim's name (in the run's namespace)
	SubPath   string // folder inside the claim, slash-separated and relative; "" for its root
	MountPath string // absolute, inside the container
	ReadOnly  bool
}

// Step is a command run in the image with an environment and a working directory.
type Step struct {
	Command []string
	Env     map[string]string
	WorkDir string
}

// Run is one multi-node benchmark run as Kubernetes runs it: an Indexed Job of NNodes pods (the
// completion index is the node rank) and a headless Service that gives pod 0 the DNS name the
// other nodes meet at.
type Run struct {
	Name      string // the Job's and the Service's name: a DNS label (lowercase, digits, '-'), at most 50 characters
	Namespace string
	Platform  string // hw.PlatformNVIDIA, hw.PlatformAMD or hw.PlatformCPU
	NNodes    int
	// GPUsPerNode is requested from each node as the platform's extended resource; 0 on cpu.
	GPUsPerNode int
	// Image is the platform image by digest (repo@sha256:...): every node must run the same bytes,
	// and a tag is resolved by each node on its own.
	Image string
	// Train is the per-node launch. Its Command may carry the torchrun flags PerNodeArgs rewrites;
	// Kubernetes fills in $(NODE_RANK), $(MASTER_ADDR) and $(MASTER_PORT) from each pod's environment.
	Train Step
	// Preflight, when set, runs in every pod as an init container before Train: a non-zero exit
	// fails the pod before torchrun starts.
	Preflight *Step
	Volumes   []Volume
	// MasterPort is the rendezvous port; 0: core.DefaultMasterPort.
	MasterPort int

	ServiceAccount    string
	PriorityClass     string
	NodeSelector      map[string]string
	Tolerations       []corev1.Toleration
	Framework         string // a label value
	ActiveDeadline    int64  // seconds the Job may run in all; 0: no limit
	ShmSize           string // size of the memory-backed /dev/shm; "" for 16Gi
	TTLAfterFinishedS *int32 // nil: the Job stays until Rival deletes it
	// PodAnnotations are added to every pod (a cluster's own conventions: sidecar or network settings).
	PodAnnotations map[string]string
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

// Validate checks a run and fills in its defaults.
func (r Run) Validate() (Run, error) {
	if r.Name == "" || len(r.Name) > 50 || len(validation.IsDNS1123Label(r.Name)) > 0 {
		return r, fmt.Errorf("kube: run name %q: want a DNS label of at most 50 characters (lowercase letters, digits, '-'), so pod names <name>-<rank>-<suffix> stay valid", r.Name)
	}
	if r.Namespace == "" {
		return r, errors.New("kube: no namespace: set KUBE_NAMESPACE")
	}
	if errs := validation.IsDNS1123Label(r.Namespace); len(errs) > 0 {
		return r, fmt.Errorf("kube: namespace %q: %s", r.Namespace, strings.Join(errs, "; "))
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
		if len(validation.IsDNS1123Subdomain(v.Claim)) > 0 {
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
	if _, err := resource.ParseQuantity(r.ShmSize); err != nil {
		return r, fmt.Errorf("kube: shm size %q: %v", r.ShmSize, err)
	}
	return r, nil
}

// MasterAddr is pod 0's DNS name: an Indexed Job's pods are named <job>-<index> as hosts, and the
// headless Service of the same name (the pods' subdomain) publishes them.
func (r Run) MasterAddr() string {
	return fmt.Sprintf("%s-0.%s.%s.svc", r.Name, r.Name, r.Namespace)
}

// PerNodeArgs returns a copy of a single-node launch with torchrun's per-node flags (--node_rank,
// --master_addr, --master_port, as --flag=value or --flag value, dashes or underscores) set to the
// pod's variables, which Kubernetes expands, and every other "$(" escaped so it stays literal.
func PerNodeArgs(cmd []string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		out[i] = strings.ReplaceAll(a, "$(", "$$(")
	}
	flags := map[string]string{
		"--node_rank": core.EnvNodeRank, "--node-rank": core.EnvNodeRank,
		"--master_addr": core.EnvMasterAddr, "--master-addr": core.EnvMasterAddr,
		"--master_port": core.EnvMasterPort, "--master-port": core.EnvMasterPort,
	}
	for i := 0; i < len(out); i++ {
		name, _, hasValue := strings.Cut(out[i], "=")
		v, ok := flags[name]
		if !ok {
			continue
		}
		if hasValue {
			out[i] = name + "=$(" + v + ")"
		} else if i+1 < len(out) {
			out[i+1] = "$(" + v + ")"
			i++
		}
	}
	return out
}

// env is a pod's environment: the rendezvous first (the rank from the completion index), then the
// step's own variables in name order.
func (r Run) env(s Step) []corev1.EnvVar {
	rank := corev1.EnvVar{Name: core.EnvNodeRank, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + IndexAnnotation + "']"}}}
	var out []corev1.EnvVar
	for _, v := range core.NodeEnv(core.Node{NNodes: strconv.Itoa(r.NNodes), GPUsPerNode: strconv.Itoa(r.GPUsPerNode),
		MasterAddr: r.MasterAddr(), MasterPort: strconv.Itoa(r.MasterPort)}) {
		if v.Name == core.EnvGPUsPerNode && r.GPUsPerNode == 0 {
			continue
		}
		e := corev1.EnvVar{Name: v.Name, Value: v.Value}
		if v.Name == core.EnvNodeRank {
			e = rank
		}
		out = append(out, e, corev1.EnvVar{Name: "PET_" + v.Name, Value: "$(" + v.Name + ")"})
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, corev1.EnvVar{Name: k, Value: strings.ReplaceAll(s.Env[k], "$(", "$$(")})
	}
	return out
}

// Labels are the labels of a run's objects and pods.
func (r Run) Labels() map[string]string {
	l := map[string]string{RunLabel: r.Name, "app.kubernetes.io/managed-by": "rival"}
	if r.Framework != "" && len(validation.IsValidLabelValue(r.Framework)) == 0 {
		l[FrameworkLabel] = r.Framework
	}
	return l
}

// Objects validates r and returns its headless Service and Indexed Job.
func Objects(run Run) (*corev1.Service, *batchv1.Job, error) {
	r, err := run.Validate()
	if err != nil {
		return nil, nil, err
	}
	labels := r.Labels()
	meta := metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace, Labels: labels}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{RunLabel: r.Name},
			// The rendezvous starts before any pod is ready: publish every pod at once.
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "rendezvous", Port: int32(r.MasterPort), TargetPort: intstr.FromInt32(int32(r.MasterPort))}},
		},
	}

	mounts := []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}}
	shm := resource.MustParse(r.ShmSize)
	volumes := []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}}}
	claims := map[string]string{}
	for _, v := range r.Volumes {
		name, ok := claims[v.Claim]
		if !ok {
			name = fmt.Sprintf("claim-%d", len(claims))
			claims[v.Claim] = name
			volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.Claim}}})
		}
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: v.MountPath, SubPath: v.SubPath, ReadOnly: v.ReadOnly})
	}

	gpuRes, _ := GPUResource(r.Platform)
	var resources corev1.ResourceRequirements
	if gpuRes != "" && r.GPUsPerNode > 0 {
		q := *resource.NewQuantity(int64(r.GPUsPerNode), resource.DecimalSI)
		resources.Limits = corev1.ResourceList{gpuRes: q}
		resources.Requests = corev1.ResourceList{gpuRes: q}
	}
	train := corev1.Container{
		Name: TrainContainer, Image: r.Image, ImagePullPolicy: corev1.PullIfNotPresent,
		Command: PerNodeArgs(r.Train.Command), Env: r.env(r.Train), WorkingDir: r.Train.WorkDir,
		VolumeMounts: mounts, Resources: resources,
		Ports: []corev1.ContainerPort{{Name: "rendezvous", ContainerPort: int32(r.MasterPort)}},
	}
	var inits []corev1.Container
	if r.Preflight != nil {
		inits = append(inits, corev1.Container{
			Name: PreflightContainer, Image: r.Image, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: slices.Clone(r.Preflight.Command), Env: r.env(*r.Preflight), WorkingDir: r.Preflight.WorkDir,
			VolumeMounts: mounts,
		})
		for i := range inits[0].Command {
			inits[0].Command[i] = strings.ReplaceAll(inits[0].Command[i], "$(", "$$(")
		}
	}
	n := int32(r.NNodes)
	indexed := batchv1.IndexedCompletion
	zero := int32(0)
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: *meta.DeepCopy(),
		Spec: batchv1.JobSpec{
			Completions: &n, Parallelism: &n, CompletionMode: &indexed,
			// A benchmark that loses a node is not retried on another: the run fails as it is.
			BackoffLimit:            &zero,
			TTLSecondsAfterFinished: r.TTLAfterFinishedS,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: r.PodAnnotations},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					Subdomain:          r.Name,
					ServiceAccountName: r.ServiceAccount,
					PriorityClassName:  r.PriorityClass,
					NodeSelector:       r.NodeSelector,
					Tolerations:        r.Tolerations,
					InitContainers:     inits,
					Containers:         []corev1.Container{train},
					Volumes:            volumes,
				},
			},
		},
	}
	if r.ActiveDeadline > 0 {
		d := r.ActiveDeadline
		job.Spec.ActiveDeadlineSeconds = &d
	}
	return svc, job, nil
}

// Manifest is a run's objects as YAML documents, the Service first: what `kubectl apply -f` takes.
func Manifest(r Run) ([]byte, error) {
	svc, job, err := Objects(r)
	if err != nil {
		return nil, err
	}
	var out []byte
	for i, o := range []any{svc, job} {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("kube: %v", err)
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, b...)
	}
	return out, nil
}

// ParseTolerations reads tolerations written as kubectl taints are: KEY[=VALUE]:EFFECT, or
// KEY:EFFECT / KEY to tolerate any value ("Exists"), comma-separated; EFFECT may be empty for all.
func ParseTolerations(s string) ([]corev1.Toleration, error) {
	var out []corev1.Toleration
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		kv, effect, _ := strings.Cut(item, ":")
		key, value, hasValue := strings.Cut(kv, "=")
		t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists}
		if hasValue {
			t.Operator, t.Value = corev1.TolerationOpEqual, value
		}
		switch e := corev1.TaintEffect(effect); e {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			t.Effect = e
		default:
			return nil, fmt.Errorf("kube: toleration %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", item, effect)
		}
		if errs := validation.IsQualifiedName(key); key == "" || len(errs) > 0 {
			return nil, fmt.Errorf("kube: toleration %q: key %q is not a label key", item, key)
		}
		if hasValue {
			if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
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
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("kube: node selector %q: key %q: %s", item, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return nil, fmt.Errorf("kube: node selector %q: value %q: %s", item, v, strings.Join(errs, "; "))
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
