package kube

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/kube/kubespec"
)

// The plain description of a run lives in kubespec, which the targets build against without
// client-go; these names keep this package's callers reading as before.
type (
	Run      = kubespec.Run
	Volume   = kubespec.Volume
	Step     = kubespec.Step
	Final    = kubespec.Final
	RunError = kubespec.RunError
)

// Labels every object of a run carries; RunLabel selects all of them.
const (
	RunLabel           = kubespec.RunLabel
	FrameworkLabel     = kubespec.FrameworkLabel
	IndexAnnotation    = kubespec.IndexAnnotation
	TrainContainer     = kubespec.TrainContainer
	PreflightContainer = kubespec.PreflightContainer
)

// GPUResource is the extended resource a platform's GPUs are requested as (kubespec.GPUResource).
func GPUResource(platform string) (corev1.ResourceName, error) {
	res, err := kubespec.GPUResource(platform)
	return corev1.ResourceName(res), err
}

// validate is kubespec's Validate and the check of the shm size as a quantity, which needs the
// API library's parser.
func validate(run Run) (Run, error) {
	r, err := run.Validate()
	if err != nil {
		return r, err
	}
	if _, err := resource.ParseQuantity(r.ShmSize); err != nil {
		return r, fmt.Errorf("kube: shm size %q: %v", r.ShmSize, err)
	}
	return r, nil
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
func env(r Run, s Step) []corev1.EnvVar {
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

// Objects validates r and returns its headless Service and Indexed Job.
func Objects(run Run) (*corev1.Service, *batchv1.Job, error) {
	r, err := validate(run)
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
		Command: PerNodeArgs(r.Train.Command), Env: env(r, r.Train), WorkingDir: r.Train.WorkDir,
		VolumeMounts: mounts, Resources: resources,
		Ports: []corev1.ContainerPort{{Name: "rendezvous", ContainerPort: int32(r.MasterPort)}},
	}
	var inits []corev1.Container
	if r.Preflight != nil {
		inits = append(inits, corev1.Container{
			Name: PreflightContainer, Image: r.Image, ImagePullPolicy: corev1.PullIfNotPresent,
			Command: slices.Clone(r.Preflight.Command), Env: env(r, *r.Preflight), WorkingDir: r.Preflight.WorkDir,
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
					Tolerations:        tolerations(r.Tolerations),
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

// tolerations are the run's tolerations as the API's.
func tolerations(ts []kubespec.Toleration) []corev1.Toleration {
	if ts == nil {
		return nil
	}
	out := make([]corev1.Toleration, len(ts))
	for i, t := range ts {
		out[i] = corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value,
			Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds}
	}
	return out
}
