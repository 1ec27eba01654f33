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
			l, maps, _, err := w.trainLaunch(in, in.Config, runName(in.Platform, in.Framework, in.Model, in.Dataset, 0), w.launchFingerprint(in))
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

// A cluster job's preflight digest of its first samples is compared with Rival's as on one host: an
// equal one is kept for the result; another digest, another count or an unreadable line stops the
// job at once, naming both digests.
func TestClusterPreflightSampleLines(t *testing.T) {
	zeros, ones := strings.Repeat("0", 64), strings.Repeat("1", 64)
	want := &core.SampleDigest{Samples: 32, SHA256: zeros}
	for _, tc := range []struct {
		name, line, err string
	}{
		{"equal", `{"samples": 32, "sha256": "` + zeros + `"}`, ""},
		{"differs", `{"samples": 32, "sha256": "` + ones + `"}`,
			"sample_order: the trainer's first 32 samples (sha256 " + ones + ") are not those of Megatron's order Rival wrote (sha256 " + zeros + ")"},
		{"other count", `{"samples": 8, "sha256": "` + zeros + `"}`,
			"sample_order: the trainer's preflight digested its first 8 samples (sha256 " + zeros + "); Rival's digest of Megatron's order covers the first 32 (sha256 " + zeros + ")"},
		{"unreadable", `{"samples": 32, "sha256": `, "sample_order: the preflight's samples line"},
		{"unknown field", `{"samples": 32, "sha256": "` + zeros + `", "blake3": ""}`, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stopped := false
			p := newPreflightLines(core.Launch{Framework: "mega", Samples: want}, func() { stopped = true })
			p.see("preflight samples: " + tc.line)
			p.see("preflight samples: " + `{"samples": 32, "sha256": "` + zeros + `"}`) // only the first counts
			if tc.err == "" {
				assert.NoError(t, p.mismatch)
				assert.Equal(t, want, p.samples)
				assert.False(t, stopped)
				return
			}
			require.Error(t, p.mismatch)
			assert.Contains(t, p.mismatch.Error(), tc.err)
			assert.Nil(t, p.samples)
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
