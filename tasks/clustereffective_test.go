package tasks

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/kube"
	"github.com/rivalbench/rival/kube/kubetest"
	"github.com/rivalbench/rival/tasks/training"
)

// withField is the workload's effective configuration with one field changed, as a preflight line.
func withField(t *testing.T, workload []byte, field string, v any) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(workload, &m))
	if field != "" {
		m[field] = v
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return effective.LinePrefix + string(b)
}

// podLogs is a log source whose preflight container prints pre and whose launch container prints train.
type podLogs struct{ pre, train []string }

func (p podLogs) Logs(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
	lines := p.train
	if container == kube.PreflightContainer {
		lines = p.pre
	}
	return io.NopCloser(strings.NewReader(strings.Join(lines, "\n") + "\n")), nil
}

// A Kubernetes run's preflight (an init container in the image on the cluster) reads back the
// effective configuration: the executor returns it for the result, and a read-back that differs from
// the workload ends the job, naming the field with both values.
func TestKubeRunReadsTheEffectiveConfiguration(t *testing.T) {
	e := kubetest.Start(t)
	defer kubetest.Stop()
	e.AddGPUNodes(t, "cpu", 2, "nvidia.com/gpu", 8, map[string]string{"pool": "cpu"})
	e.Namespace(t, "bench")
	e.Claim(t, "bench", "rival-data")
	e.Claim(t, "bench", "rival-output")
	zeros, ones := strings.Repeat("0", 64), strings.Repeat("1", 64)
	for _, tc := range []struct {
		name, field, samples, err string
	}{
		{"equal", "", `{"samples": 32, "sha256": "` + zeros + `"}`, ""},
		{"differs", "norm_eps", "", "stopped the run (job deleted): fsdp does not build Rival's workload (1 field(s)): norm_eps: the framework built 1e-06, Rival's workload is 1e-05"},
		{"samples differ", "", `{"samples": 32, "sha256": "` + ones + `"}`,
			"stopped the run (job deleted): sample_order: the trainer's first 32 samples (sha256 " + ones + ") are not those of Megatron's order Rival wrote (sha256 " + zeros + "): it would train on other token sequences"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, in, ex := kubeInputs(t, map[string]string{"KUBE_TOLERATIONS": "", "KUBE_PRIORITY_CLASS": "", "KUBE_SERVICE_ACCOUNT": ""})
			l, maps, _, err := w.trainLaunch(in, in.Config, training.Name(in.Platform, in.Framework, in.Model, in.Dataset, 0), w.launchFingerprint(in))
			require.NoError(t, err)
			require.NotNil(t, l.Preflight, "fsdp launches carry their trainer's check")
			l.Samples = &core.SampleDigest{Samples: 32, SHA256: zeros} // what staging the run sets
			pre := []string{withField(t, l.Workload, "", nil)}
			if tc.field != "" {
				pre[0] = withField(t, l.Workload, tc.field, 1e-6)
			}
			if tc.samples != "" {
				pre = append(pre, "preflight samples: "+tc.samples)
			}
			ex.Cluster = &kube.Cluster{Client: e.Client, PendingTimeout: time.Minute, Poll: 100 * time.Millisecond,
				Logs: podLogs{pre: append(pre, "preflight ok: fsdp"), train: []string{"step 1"}}}
			ex.ClusterName = "rival-test"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			info, err := ex.Run(ctx, l, maps, func(string) {})
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
			} else {
				require.NoError(t, err)
				require.NotNil(t, info.Effective)
				assert.Equal(t, 1e-5, info.Effective.NormEps)
				require.NotNil(t, info.Samples, "the preflight's digest is returned for the result")
				assert.Equal(t, zeros, info.Samples.SHA256)
			}
			jobs, err := e.Client.BatchV1().Jobs("bench").List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, jobs.Items, "the Job is deleted")
		})
	}
}

// train:check on a cluster setup runs the preflights in the image on this host; without a Docker
// daemon it says which cluster executor it checks for.
func TestTrainCheckNamesTheClusterExecutor(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
users: [{name: u, user: {token: t}}]
`), 0o600))
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	for _, tc := range []struct {
		name     string
		settings map[string]string
		want     string
	}{
		{"kubernetes", nil, "train:check: a Kubernetes setup is checked in the image on this host"},
		{"slurm", map[string]string{"CLUSTER": "slurm"}, "train:check: a Slurm setup is checked in the image on this host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, in, _ := kubeInputs(t, tc.settings)
			err := w.CheckTarget(context.Background(), hw.PlatformCPU, "fsdp", in.Model)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
