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
	for _, differ := range []bool{false, true} {
		t.Run(map[bool]string{false: "equal", true: "differs"}[differ], func(t *testing.T) {
			w, in, ex := kubeInputs(t, map[string]string{"KUBE_TOLERATIONS": "", "KUBE_PRIORITY_CLASS": "", "KUBE_SERVICE_ACCOUNT": ""})
			l, maps, _, err := w.trainLaunch(in, in.Config, RunName(in.Platform, in.Framework, in.Model, in.Dataset, 0), w.launchFingerprint(in))
			require.NoError(t, err)
			require.NotNil(t, l.Preflight, "fsdp launches carry their trainer's check")
			line := withField(t, l.Workload, "", nil)
			if differ {
				line = withField(t, l.Workload, "norm_eps", 1e-6)
			}
			ex.Cluster = &kube.Cluster{Client: e.Client, PendingTimeout: time.Minute, Poll: 100 * time.Millisecond,
				Logs: podLogs{pre: []string{line, "preflight ok: fsdp"}, train: []string{"step 1"}}}
			ex.ClusterName = "rival-test"
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			info, err := ex.Run(ctx, l, maps, func(string) {})
			if differ {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "stopped the run (job deleted): fsdp does not build Rival's workload (1 field(s)): norm_eps: the framework built 1e-06, Rival's workload is 1e-05")
			} else {
				require.NoError(t, err)
				require.NotNil(t, info.Effective)
				assert.Equal(t, 1e-5, info.Effective.NormEps)
			}
			jobs, err := e.Client.BatchV1().Jobs("bench").List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, jobs.Items, "the Job is deleted")
		})
	}
}

// The preflight lines of a cluster job: the read-back is kept when it equals the workload; when it
// differs or cannot be read the job is stopped at once.
func TestClusterPreflightLines(t *testing.T) {
	line := func(c effective.Config) string {
		b, err := json.Marshal(c)
		require.NoError(t, err)
		return effective.LinePrefix + string(b)
	}
	workload := effective.Config{Hidden: 8}
	full, err := json.Marshal(workload)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, line, err string
	}{
		{"equal", line(workload), ""},
		{"differs", line(effective.Config{Hidden: 16}), "fsdp does not build Rival's workload (1 field(s)): hidden: the framework built 16, Rival's workload is 8"},
		{"unreadable", effective.LinePrefix + `{"hidden":`, "effective: configuration JSON"},
		{"unknown field", strings.Replace(line(workload), `"hidden"`, `"hiden"`, 1), "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stopped := false
			p := newPreflightLines(core.Launch{Framework: "fsdp", Workload: full}, func() { stopped = true })
			p.see(`preflight ran: {"torch": "2.6.0"}`)
			p.see(tc.line)
			assert.Equal(t, "torch 2.6.0", p.ran)
			if tc.err == "" {
				assert.NoError(t, p.mismatch)
				require.NotNil(t, p.effective)
				assert.Equal(t, workload, *p.effective)
				assert.False(t, stopped)
				return
			}
			require.Error(t, p.mismatch)
			assert.Contains(t, p.mismatch.Error(), tc.err)
			assert.True(t, stopped, "the job is stopped")
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

// Whatever a job's log holds, following its preflight lines never panics, and a read-back is kept
// only when it equals the workload.
func FuzzPreflightLines(f *testing.F) {
	full, err := json.Marshal(effective.Config{Hidden: 8})
	require.NoError(f, err)
	f.Add(effective.LinePrefix + string(full))
	f.Add(effective.LinePrefix + `{"hidden":`)
	f.Add(`preflight ran: {"torch": "2.6.0"}`)
	f.Add("preflight failed: x")
	f.Fuzz(func(t *testing.T, line string) {
		p := newPreflightLines(core.Launch{Framework: "fsdp", Workload: full}, func() {})
		p.see(line)
		if p.effective != nil && p.mismatch == nil {
			assert.Equal(t, effective.Config{Hidden: 8}, *p.effective)
		}
	})
}
