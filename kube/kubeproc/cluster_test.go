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

	var lines []string
	c := &Cluster{Helper: testHelper(t), Context: "rival-test", PendingTimeout: time.Minute, Poll: 100 * time.Millisecond, LogsURL: logs.URL}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	final, err := c.Execute(ctx, run("through", nil), 30*time.Second, func(s string) { lines = append(lines, s) })
	require.NoError(t, err)
	require.Len(t, final.Nodes, 2)
	assert.NotEqual(t, final.Nodes[0], final.Nodes[1])
	assert.Equal(t, []string{"preflight step 1/2", "preflight step 2/2", "train step 1/2", "train step 2/2"}, lines)
	e.NothingLeft(t, ns, "through")

	held, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	c.Status = func(s string) {
		if strings.Contains(s, "running on") {
			stop()
		}
	}
	_, err = c.Execute(held, run("held", map[string]string{kubetest.HoldAnnotation: "1"}), 30*time.Second, func(string) {})
	assert.Equal(t, context.Canceled, err)
	e.NothingLeft(t, ns, "held")
}
