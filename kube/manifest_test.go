package kube

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/rivalbench/rival/kube/kubespec"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current Manifest output")

const testDigest = "registry.example/rival/nvd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// torchrunLaunch is a single-node launch as frameworks/ builds it, to be made per-node.
var torchrunLaunch = []string{"torchrun", "--nnodes=2", "--node_rank=0", "--master_addr", "localhost", "--master_port=29500",
	"--nproc_per_node=8", "/workspace/Megatron-LM/pretrain_gpt.py", "--tensor-model-parallel-size", "2",
	"--data-path", "/rival/data/train_text_document", "--note", "keep $(HOME) literal"}

func goldenRuns() map[string]Run {
	return map[string]Run{
		"nvd-mega-2x8": {
			Name: "rival-nvd-mega-llama", Namespace: "bench", Platform: "nvd", NNodes: 2, GPUsPerNode: 8,
			Image: testDigest, Framework: "mega",
			Train: Step{Command: torchrunLaunch, WorkDir: "/workspace/Megatron-LM",
				Env: map[string]string{"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_DEBUG": "WARN"}},
			Preflight: &Step{Command: []string{"python3", "/rival/run/preflight.py"}, WorkDir: "/workspace/Megatron-LM",
				Env: map[string]string{"WORLD_SIZE": "16"}},
			Volumes: []Volume{
				{Claim: "rival-data", SubPath: "encoded/llama", MountPath: "/rival/data", ReadOnly: true},
				{Claim: "rival-data", SubPath: "tokenizers/llama", MountPath: "/rival/tokenizer", ReadOnly: true},
				{Claim: "rival-output", SubPath: "runs/train_nvd_mega_llama", MountPath: "/rival/run"},
				{Claim: "rival-data", SubPath: "megatron-cache/3f2a", MountPath: "/rival/cache"},
			},
			ServiceAccount: "trainer", PriorityClass: "batch-high",
			NodeSelector: map[string]string{"gpu.example/model": "h100"},
			Tolerations:  []kubespec.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}},
		},
		"amd-prim-2x8": {
			Name: "rival-amd-prim-qwen", Namespace: "default", Platform: "amd", NNodes: 2, GPUsPerNode: 8,
			Image: "registry.example/rival/amd@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210", Framework: "prim",
			Train:      Step{Command: []string{"bash", "/workspace/Primus/examples/run_pretrain.sh"}, WorkDir: "/workspace/Primus", Env: map[string]string{"EXP": "/rival/run/exp.yaml"}},
			MasterPort: 29700,
			Volumes:    []Volume{{Claim: "shared", SubPath: "output/runs/amd", MountPath: "/rival/run"}},
		},
		"cpu-fsdp-1": {
			Name: "rival-cpu-fsdp", Namespace: "default", Platform: "cpu", NNodes: 1,
			Image: testDigest, Train: Step{Command: []string{"python3", "/rival/run/train.py"}},
		},
	}
}

// The manifests of representative runs, byte for byte. Regenerate: go test ./kube -run TestManifestGolden -update
func TestManifestGolden(t *testing.T) {
	for name, r := range goldenRuns() {
		t.Run(name, func(t *testing.T) {
			got, err := Manifest(r)
			require.NoError(t, err)
			path := filepath.Join("testdata", "golden", name+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
				require.NoError(t, os.WriteFile(path, got, 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "regenerate with: go test ./kube -run TestManifestGolden -update")
			assert.Equal(t, string(want), string(got))
		})
	}
}

func TestObjectsWiring(t *testing.T) {
	svc, job, err := Objects(goldenRuns()["nvd-mega-2x8"])
	require.NoError(t, err)
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
	assert.Equal(t, "rival-nvd-mega-llama", job.Spec.Template.Spec.Subdomain, "pods resolve as <pod>.<service>")
	assert.EqualValues(t, 2, *job.Spec.Completions)
	assert.EqualValues(t, 2, *job.Spec.Parallelism)
	c := job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "8", c.Resources.Limits.Name("nvidia.com/gpu", "").String())
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	assert.Equal(t, "rival-nvd-mega-llama-0.rival-nvd-mega-llama.bench.svc", env["MASTER_ADDR"].Value)
	assert.Equal(t, "metadata.annotations['batch.kubernetes.io/job-completion-index']", env["NODE_RANK"].ValueFrom.FieldRef.FieldPath)
	assert.Contains(t, c.Command, "--node_rank=$(NODE_RANK)")
	assert.Contains(t, c.Command, "$(MASTER_ADDR)")
	assert.Contains(t, c.Command, "--master_port=$(MASTER_PORT)")
	assert.Contains(t, c.Command, "keep $$(HOME) literal", "a literal $( is escaped from Kubernetes' expansion")
	require.Len(t, job.Spec.Template.Spec.InitContainers, 1)
	assert.Equal(t, PreflightContainer, job.Spec.Template.Spec.InitContainers[0].Name)
}

// Objects refuses what kubespec's Validate refuses (its own test holds every case; one here shows
// the call), and the shared-memory size, which only the API's quantity parser can read.
func TestValidateRefuses(t *testing.T) {
	base := goldenRuns()["cpu-fsdp-1"]
	for _, tc := range []struct {
		name string
		edit func(*Run)
		want string
	}{
		{"tag only", func(r *Run) { r.Image = "registry.example/rival/nvd:latest" }, "not named by digest"},
		{"shm size", func(r *Run) { r.ShmSize = "16 gigs" }, `kube: shm size "16 gigs": quantities must match`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			tc.edit(&r)
			_, _, err := Objects(r)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The run's own tolerations become the API's field for field.
func TestTolerationsConverted(t *testing.T) {
	secs := int64(60)
	r := goldenRuns()["cpu-fsdp-1"]
	r.Tolerations = []kubespec.Toleration{{Key: "a", Operator: "Equal", Value: "b", Effect: "NoExecute", TolerationSeconds: &secs}, {Key: "c", Operator: "Exists"}}
	_, job, err := Objects(r)
	require.NoError(t, err)
	assert.Equal(t, []corev1.Toleration{
		{Key: "a", Operator: corev1.TolerationOpEqual, Value: "b", Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
		{Key: "c", Operator: corev1.TolerationOpExists},
	}, job.Spec.Template.Spec.Tolerations)
}
