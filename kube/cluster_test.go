package kube_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rivalbench/rival/kube"
	"github.com/rivalbench/rival/kube/kubespec"
	"github.com/rivalbench/rival/kube/kubetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	kubetest.Stop()
	os.Exit(code)
}

const digest = "registry.example/rival/nvd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var nodesOnce sync.Once

// env is the shared control plane with four fake nodes of 8 NVIDIA GPUs each.
func env(t *testing.T) *kubetest.Env {
	t.Helper()
	e := kubetest.Start(t)
	nodesOnce.Do(func() { e.AddGPUNodes(t, "gpu", 4, "nvidia.com/gpu", 8, nil) })
	return e
}

// logServer serves each container's log the way the API server's log endpoint streams it: a KWOK
// pod prints nothing, so rank 0's lines come from here, behind the same LogSource interface.
type logServer struct {
	srv *httptest.Server
}

func newLogServer(t *testing.T) *logServer {
	s := &logServer{srv: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /NAMESPACE/POD/CONTAINER
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(w, "%s %s step %d/3\n", parts[1], parts[2], i)
		}
	}))}
	t.Cleanup(s.srv.Close)
	return s
}

func (s *logServer) Logs(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.srv.URL+"/"+namespace+"/"+pod+"/"+container, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("log server: %s", resp.Status)
	}
	return resp.Body, nil
}

func testRun(name, ns string, nnodes, gpus int) kube.Run {
	return kube.Run{
		Name: name, Namespace: ns, Platform: "nvd", NNodes: nnodes, GPUsPerNode: gpus, Image: digest, Framework: "mega",
		Train: kube.Step{Command: []string{"torchrun", "--nnodes=2", "--node_rank=0", "--master_addr=localhost", "--master_port=29500", "train.py"},
			Env: map[string]string{"NCCL_DEBUG": "WARN"}},
		Preflight: &kube.Step{Command: []string{"python3", "preflight.py"}},
	}
}

func cluster(t *testing.T, e *kubetest.Env, pending time.Duration) *kube.Cluster {
	return &kube.Cluster{Client: e.Client, Logs: newLogServer(t), PendingTimeout: pending, Poll: 100 * time.Millisecond,
		Status: func(s string) { t.Log(s) }}
}

func TestManifestsAcceptedByAPIServer(t *testing.T) {
	e := env(t)
	ns := e.Namespace(t, "accept")
	for _, r := range []kube.Run{
		testRun("accept-nvd", ns, 2, 8),
		{Name: "accept-amd", Namespace: ns, Platform: "amd", NNodes: 2, GPUsPerNode: 8, Image: digest,
			Train:        kube.Step{Command: []string{"bash", "run.sh"}},
			Volumes:      []kube.Volume{{Claim: "data", SubPath: "encoded", MountPath: "/rival/data", ReadOnly: true}, {Claim: "out", MountPath: "/rival/run"}},
			NodeSelector: map[string]string{"pool": "mi300"}, Tolerations: []kubespec.Toleration{{Key: "amd.com/gpu", Operator: "Exists"}}},
		{Name: "accept-cpu", Namespace: ns, Platform: "cpu", NNodes: 1, Image: digest, Train: kube.Step{Command: []string{"python3", "train.py"}}},
	} {
		svc, job, err := kube.Objects(r)
		require.NoError(t, err)
		require.NoError(t, kube.DryRun(context.Background(), e.Client, svc, job), r.Name)
		// A dry run stores nothing.
		_, err = e.Client.BatchV1().Jobs(ns).Get(context.Background(), r.Name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err))
	}
	// The server refuses what its validation refuses: a port out of range slips past nothing.
	svc, job, err := kube.Objects(testRun("accept-bad", ns, 1, 8))
	require.NoError(t, err)
	job.Spec.Template.Spec.Containers[0].Ports[0].ContainerPort = 70000
	assert.Error(t, kube.DryRun(context.Background(), e.Client, svc, job))
}

func TestRunCompletesWithRankAndRendezvous(t *testing.T) {
	e := env(t)
	ns := e.Namespace(t, "complete")
	r := testRun("two-nodes", ns, 2, 8)
	svc, job, err := kube.Objects(r)
	require.NoError(t, err)
	c := cluster(t, e, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, c.Submit(ctx, svc, job))

	// Each pod's rank and rendezvous, as the Job controller and the manifest set them.
	var pods []corev1.Pod
	require.Eventually(t, func() bool {
		l, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.RunLabel + "=two-nodes"})
		pods = l.Items
		return err == nil && len(pods) == 2
	}, time.Minute, 50*time.Millisecond)
	seen := map[string]bool{}
	for _, p := range pods {
		idx := p.Annotations[kube.IndexAnnotation]
		seen[idx] = true
		assert.Equal(t, "two-nodes-"+idx, p.Spec.Hostname, "an indexed pod's host name is <job>-<rank>")
		assert.Equal(t, "two-nodes", p.Spec.Subdomain)
		envs := map[string]corev1.EnvVar{}
		for _, v := range p.Spec.Containers[0].Env {
			envs[v.Name] = v
		}
		assert.Equal(t, "two-nodes-0.two-nodes."+ns+".svc", envs["MASTER_ADDR"].Value, "rank 0's host name under the Service")
		assert.Equal(t, "2", envs["NNODES"].Value)
		assert.Equal(t, "metadata.annotations['"+kube.IndexAnnotation+"']", envs["NODE_RANK"].ValueFrom.FieldRef.FieldPath)
		assert.Contains(t, p.Spec.Containers[0].Command, "--node_rank=$(NODE_RANK)")
	}
	assert.Equal(t, map[string]bool{"0": true, "1": true}, seen)

	var lines []string
	final, err := c.Follow(ctx, job, func(l string) { lines = append(lines, l) })
	require.NoError(t, err)
	require.Len(t, final.Nodes, 2)
	assert.NotEqual(t, final.Nodes[0], final.Nodes[1], "8 GPUs a pod on 8-GPU nodes: one pod per node")
	assert.Equal(t, []string{"two-nodes-0", "two-nodes-1"}, []string{final.Pods[0][:11], final.Pods[1][:11]})
	// Rank 0's preflight, then its launch; no other rank's.
	require.Len(t, lines, 6)
	assert.Equal(t, final.Pods[0]+" preflight step 1/3", lines[0])
	assert.Equal(t, final.Pods[0]+" train step 3/3", lines[5])
	require.NoError(t, c.Delete(ctx, ns, "two-nodes"))
	e.NothingLeft(t, ns, "two-nodes")
}

func TestFailedPodFailsTheRunWithItsReason(t *testing.T) {
	e := env(t)
	ns := e.Namespace(t, "oom")
	r := testRun("oom", ns, 2, 8)
	r.PodAnnotations = map[string]string{kubetest.ExitCodeAnnotation: "137", kubetest.ReasonAnnotation: "OOMKilled"}
	svc, job, err := kube.Objects(r)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	final, err := cluster(t, e, time.Minute).Run(ctx, svc, job, 30*time.Second, func(string) {})
	var rerr *kube.RunError
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, "OOMKilled", final.Reason)
	assert.Equal(t, 137, final.ExitCode)
	assert.Contains(t, err.Error(), "exited with code 137 (OOMKilled)")
	e.NothingLeft(t, ns, "oom")
}

func TestImagePullErrorFailsTheRun(t *testing.T) {
	e := env(t)
	ns := e.Namespace(t, "pull")
	r := testRun("pull", ns, 2, 8)
	r.Preflight = nil
	r.PodAnnotations = map[string]string{kubetest.WaitingAnnotation: "ErrImagePull"}
	svc, job, err := kube.Objects(r)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	final, err := cluster(t, e, time.Minute).Run(ctx, svc, job, 30*time.Second, func(string) {})
	require.Error(t, err)
	assert.Equal(t, "ErrImagePull", final.Reason)
	assert.Contains(t, err.Error(), "cannot start: ErrImagePull: test: the image cannot be pulled")
	e.NothingLeft(t, ns, "pull")
}

func TestUnschedulableReportedBeforePendingTimeout(t *testing.T) {
	e := env(t)
	ns := e.Namespace(t, "toobig")
	svc, job, err := kube.Objects(testRun("toobig", ns, 2, 16))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var status []string
	c := cluster(t, e, 3*time.Second)
	c.Status = func(s string) { status = append(status, s) }
	final, err := c.Run(ctx, svc, job, 30*time.Second, func(string) {})
	require.Error(t, err)
	assert.Equal(t, "Unschedulable", final.Reason)
	assert.Contains(t, err.Error(), "Insufficient nvidia.com/gpu")
	assert.Contains(t, strings.Join(status, "\n"), "pending: Unschedulable", "the scheduler's reason is shown while pending")
	e.NothingLeft(t, ns, "toobig")
}

// Ctrl-C and the run's timeout both end the context: the Job, its pods and the Service go.
func TestCancelAndTimeoutDeleteEverything(t *testing.T) {
	e := env(t)
	ns := e.Namespace(t, "cancel")
	for _, tc := range []struct {
		name string
		want error
	}{{"ctrl-c", context.Canceled}, {"timeout", context.DeadlineExceeded}} {
		t.Run(tc.name, func(t *testing.T) {
			name := "held-" + tc.name
			r := testRun(name, ns, 2, 8)
			r.PodAnnotations = map[string]string{kubetest.HoldAnnotation: "1"}
			svc, job, err := kube.Objects(r)
			require.NoError(t, err)
			// The timeout: the held run is still running 2 s in. Ctrl-C: cancelled once it runs.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if tc.want == context.Canceled {
				ctx, cancel = context.WithCancel(context.Background())
			}
			defer cancel()
			c := cluster(t, e, time.Minute)
			c.Status = func(s string) {
				if strings.Contains(s, "running on") && tc.want == context.Canceled {
					cancel()
				}
			}
			_, err = c.Run(ctx, svc, job, 30*time.Second, func(string) {})
			assert.True(t, errors.Is(err, tc.want), "%v", err)
			e.NothingLeft(t, ns, name)
		})
	}
}

func TestTwoRunsSideBySide(t *testing.T) {
	e := env(t)
	ns := e.Namespace(t, "side")
	c := cluster(t, e, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	finals := make([]kube.Final, 2)
	errs := make([]error, 2)
	for i, name := range []string{"side-a", "side-b"} {
		svc, job, err := kube.Objects(testRun(name, ns, 2, 4))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			finals[i], errs[i] = c.Run(ctx, svc, job, 30*time.Second, func(string) {})
		}()
	}
	wg.Wait()
	for i, name := range []string{"side-a", "side-b"} {
		require.NoError(t, errs[i], name)
		assert.Len(t, finals[i].Nodes, 2, name)
		e.NothingLeft(t, ns, name)
	}
}
