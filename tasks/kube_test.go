package tasks

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/kube"
	"github.com/rivalbench/rival/kube/kubetest"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/training"
)

const kubeTestImage = "registry.example/rival/cpu@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// kubeInputs is the demo's cpu fsdp run handed to Kubernetes with two nodes.
func kubeInputs(t *testing.T, settings map[string]string) (*Workspace, trainInputs, *executor.Kube) {
	t.Helper()
	w, _ := newWorkspace(t, "")
	base := map[string]string{"CLUSTER": "k8s", "KUBE_IMAGE": kubeTestImage, "KUBE_NAMESPACE": "bench",
		"KUBE_DATA_CLAIM": "rival-data", "KUBE_OUTPUT_CLAIM": "rival-output", "KUBE_NODE_SELECTOR": "pool=cpu",
		"KUBE_TOLERATIONS": "dedicated=bench:NoSchedule", "KUBE_SERVICE_ACCOUNT": "trainer", "KUBE_PRIORITY_CLASS": "batch"}
	for k, v := range settings {
		base[k] = v
	}
	w.env = w.env.with(base)
	in := newTrainInputs(t, w, executor.Host{})
	// The claims hold DATA_DIR and OUTPUT_DIR: the tokenizer too lives under DATA_DIR.
	src := filepath.Dir(in.Tokenizer.Path)
	dst := w.path("DATA_DIR", "tokenizers", "mistral")
	require.NoError(t, os.MkdirAll(dst, 0o755))
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range ents {
		if b, err := os.ReadFile(filepath.Join(src, e.Name())); err == nil {
			require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
		}
	}
	in.Tokenizer.Path = filepath.Join(dst, filepath.Base(in.Tokenizer.Path))
	cfg, err := in.Config.with("test", map[string]string{"NNODES": "2", "DP": "2"})
	require.NoError(t, err)
	w.config = cfg
	ex, err := w.kubeExecutorFor(context.Background(), hw.PlatformCPU, hw.Host{Platform: hw.PlatformCPU}, nil, false)
	require.NoError(t, err)
	in.Config, in.Executor = cfg, ex
	return w, in, ex
}

func TestKubeManifestOfARun(t *testing.T) {
	w, in, _ := kubeInputs(t, nil)
	out, err := w.kubeManifest(in)
	require.NoError(t, err)
	docs := strings.Split(string(out), "\n---\n")
	require.Len(t, docs, 2)
	var job batchv1.Job
	require.NoError(t, yaml.Unmarshal([]byte(docs[1]), &job))
	assert.Equal(t, "bench", job.Namespace)
	assert.EqualValues(t, 2, *job.Spec.Completions)
	pod := job.Spec.Template.Spec
	assert.Equal(t, "trainer", pod.ServiceAccountName)
	assert.Equal(t, "batch", pod.PriorityClassName)
	assert.Equal(t, map[string]string{"pool": "cpu"}, pod.NodeSelector)
	require.Len(t, pod.Tolerations, 1)
	assert.Equal(t, kubeTestImage, pod.Containers[0].Image)
	claims := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		claims[m.MountPath] = m.SubPath
	}
	assert.Equal(t, filepath.ToSlash(filepath.Join("runs", training.Name(in.Platform, in.Framework, in.Model, in.Dataset, 0))), claims["/rival/run"])
	assert.Contains(t, claims, "/rival/data")
	assert.Contains(t, claims, "/rival/tokenizer")
	assert.Contains(t, claims, "/rival/cache")
}

func TestKubeSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		settings map[string]string
		want     string
	}{
		{map[string]string{"KUBE_IMAGE": "registry.example/rival/cpu:latest"}, "not named by digest"},
		{map[string]string{"KUBE_DATA_CLAIM": ""}, "KUBE_DATA_CLAIM"},
		{map[string]string{"KUBE_OUTPUT_CLAIM": ""}, "KUBE_OUTPUT_CLAIM"},
	} {
		w, in, _ := kubeInputs(t, tc.settings)
		_, err := w.kubeManifest(in)
		require.Error(t, err, tc.settings)
		assert.Contains(t, err.Error(), tc.want)
	}
	w, _ := newWorkspace(t, "")
	w.env = w.env.with(map[string]string{"KUBE_TOLERATIONS": "a:Never"})
	cfg, err := w.config.with("test", map[string]string{"NNODES": "1", "DP": "1"})
	require.NoError(t, err)
	_, err = w.newKubeExecutor(context.Background(), cfg, hw.PlatformCPU, hw.Host{Platform: hw.PlatformCPU}, kubeTestImage, false)
	assert.ErrorContains(t, err, "KUBE_TOLERATIONS")
}

// The executor against a real API server: the run's objects go in, KWOK runs the pods on fake
// nodes, rank 0's log streams from the log source, and nothing is left after.
func TestKubeExecutorRunsOnARealAPIServer(t *testing.T) {
	e := kubetest.Start(t)
	defer kubetest.Stop()
	e.AddGPUNodes(t, "cpu", 2, "nvidia.com/gpu", 8, map[string]string{"pool": "cpu"})
	e.Namespace(t, "bench")
	e.Claim(t, "bench", "rival-data")
	e.Claim(t, "bench", "rival-output")
	w, in, ex := kubeInputs(t, map[string]string{"KUBE_TOLERATIONS": "", "KUBE_PRIORITY_CLASS": "", "KUBE_SERVICE_ACCOUNT": ""})
	ex.Cluster = &kube.Cluster{Client: e.Client, Logs: staticLogs{"step 1", "step 2"}, PendingTimeout: time.Minute, Poll: 100 * time.Millisecond}
	ex.ClusterName = "rival-test"
	l, maps, _, err := w.trainLaunch(in, in.Config, training.Name(in.Platform, in.Framework, in.Model, in.Dataset, 0), w.launchFingerprint(in))
	require.NoError(t, err)
	var lines []string
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := ex.Run(ctx, l, maps, func(s string) { lines = append(lines, s) })
	require.NoError(t, err)
	assert.Len(t, info.NodeList, 2)
	assert.True(t, strings.HasPrefix(info.KubeJob, "rival-test/bench/rival-"), info.KubeJob)
	assert.Equal(t, kubeTestImage, info.ImageID)
	assert.Equal(t, []string{"step 1", "step 2"}, lines)
	jobs, err := e.Client.BatchV1().Jobs("bench").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, jobs.Items, "the Job is deleted after the run")
}

// staticLogs is a log source whose launch container prints the given lines (a KWOK pod prints none).
type staticLogs []string

func (s staticLogs) Logs(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
	if container != kube.TrainContainer {
		return io.NopCloser(strings.NewReader("")), nil
	}
	return io.NopCloser(strings.NewReader(strings.Join(s, "\n") + "\n")), nil
}

// A two-node run of each framework on each of its GPU platforms goes through the executor against
// the real API server: the launch train:k8s-manifest prints is admitted, its two pods run on two
// fake 8-GPU nodes of the platform's GPU resource, rank 0's log streams, and nothing is left.
func TestKubeExecutorRunsEachFramework(t *testing.T) {
	e := kubetest.Start(t)
	defer kubetest.Stop()
	e.AddGPUNodes(t, "nv", 2, "nvidia.com/gpu", 8, nil)
	e.AddGPUNodes(t, "mi", 2, "amd.com/gpu", 8, nil)
	e.Namespace(t, "bench")
	e.Claim(t, "bench", "rival-data")
	e.Claim(t, "bench", "rival-output")
	for _, fw := range frameworks.Names() {
		for _, platform := range frameworks.Platforms(fw) {
			if platform == hw.PlatformCPU {
				continue
			}
			t.Run(platform+"-"+fw, func(t *testing.T) {
				w, _ := newWorkspace(t, "")
				w.env = w.env.with(map[string]string{"CLUSTER": "k8s", "KUBE_IMAGE": kubeTestImage, "KUBE_NAMESPACE": "bench",
					"KUBE_DATA_CLAIM": "rival-data", "KUBE_OUTPUT_CLAIM": "rival-output", "GPUS_PER_NODE": "8"})
				cfg, err := w.config.with("test", map[string]string{"NNODES": "2", "TP": "1", "PP": "1", "DP": "16"})
				require.NoError(t, err)
				w.config = cfg
				host, err := w.clusterHost(context.Background(), platform)
				require.NoError(t, err)
				ex, err := w.kubeExecutorFor(context.Background(), platform, host, nil, false)
				require.NoError(t, err)
				ex.Cluster = &kube.Cluster{Client: e.Client, Logs: staticLogs{"iteration 1/2", "iteration 2/2"}, PendingTimeout: time.Minute, Poll: 100 * time.Millisecond}
				p, err := w.data().BuildPipeline()
				require.NoError(t, err)
				in, err := w.trainInputsForCfg(p, cfg, platform, fw, "llama", host, ex)
				require.NoError(t, err)
				l, maps, _, err := w.trainLaunch(in, cfg, training.Name(platform, fw, in.Model, in.Dataset, 0), w.launchFingerprint(in))
				require.NoError(t, err)
				var lines []string
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				info, err := ex.Run(ctx, l, maps, func(s string) { lines = append(lines, s) })
				require.NoError(t, err)
				require.Len(t, info.NodeList, 2)
				prefix := map[string]string{hw.PlatformNVIDIA: "nv-", hw.PlatformAMD: "mi-"}[platform]
				for _, n := range info.NodeList {
					assert.True(t, strings.HasPrefix(n, prefix), "%s ran on %s", platform, n)
				}
				assert.NotEqual(t, info.NodeList[0], info.NodeList[1])
				assert.Equal(t, []string{"iteration 1/2", "iteration 2/2"}, lines)
				jobs, err := e.Client.BatchV1().Jobs("bench").List(ctx, metav1.ListOptions{})
				require.NoError(t, err)
				assert.Empty(t, jobs.Items)
			})
		}
	}
}
