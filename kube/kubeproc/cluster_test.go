package kubeproc

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rivalbench/rival/kube/kubespec"
	"github.com/rivalbench/rival/kube/kubetest"
)

// The program against a real API server (kube/kubetest): a two-node run completes with rank 0's
// log, and a held run that the caller cancels leaves neither its Job, its pods nor its Service.
func TestProgramOnARealAPIServer(t *testing.T) {
	e := kubetest.Start(t)
	defer kubetest.Stop()
	e.AddGPUNodes(t, "gpu", 2, "nvidia.com/gpu", 8, nil)
	ns := e.Namespace(t, "program")
	t.Setenv("KUBECONFIG", e.Kubeconfig)
	// KWOK's pods print nothing: rank 0's lines come from here.
	logs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
		fmt.Fprintf(w, "%s step 1/2\n%s step 2/2\n", parts[len(parts)-1], parts[len(parts)-1])
	}))
	defer logs.Close()
	run := func(name string, annotations map[string]string) kubespec.Run {
		return kubespec.Run{Name: name, Namespace: ns, Platform: "nvd", NNodes: 2, GPUsPerNode: 8, Image: testDigest,
			Train:     kubespec.Step{Command: []string{"torchrun", "--node_rank=0", "train.py"}},
			Preflight: &kubespec.Step{Command: []string{"python3", "preflight.py"}}, PodAnnotations: annotations}
	}
	gone := func(name string) {
		t.Helper()
		ctx := context.Background()
		_, err := e.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "Job %s left behind (%v)", name, err)
		_, err = e.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "Service %s left behind (%v)", name, err)
		pods, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubespec.RunLabel + "=" + name})
		require.NoError(t, err)
		assert.Empty(t, pods.Items, "pods left behind")
	}

	var lines []string
	c := &Cluster{Helper: testHelper(t), Context: "rival-test", PendingTimeout: time.Minute, Poll: 100 * time.Millisecond, LogsURL: logs.URL}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	final, err := c.Execute(ctx, run("through", nil), 30*time.Second, func(s string) { lines = append(lines, s) })
	require.NoError(t, err)
	require.Len(t, final.Nodes, 2)
	assert.NotEqual(t, final.Nodes[0], final.Nodes[1])
	assert.Equal(t, []string{"preflight step 1/2", "preflight step 2/2", "train step 1/2", "train step 2/2"}, lines)
	gone("through")

	held, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	c.Status = func(s string) {
		if strings.Contains(s, "running on") {
			stop()
		}
	}
	_, err = c.Execute(held, run("held", map[string]string{kubetest.HoldAnnotation: "1"}), 30*time.Second, func(string) {})
	assert.Equal(t, context.Canceled, err)
	gone("held")
}
