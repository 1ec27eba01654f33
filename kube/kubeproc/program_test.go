package kubeproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/internal/goprog"
	"github.com/rivalbench/rival/kube"
	"github.com/rivalbench/rival/kube/kubespec"
)

var (
	helperOnce sync.Once
	helperDir  string
	helperErr  error
)

// TestMain removes the program the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if helperDir != "" {
		os.RemoveAll(helperDir)
	}
	os.Exit(code)
}

// testHelper is the program, built once for the package's tests (with the build cache the kube
// package's tests fill, a link of a few seconds).
func testHelper(t *testing.T) *Helper {
	t.Helper()
	helperOnce.Do(func() {
		if helperDir, helperErr = os.MkdirTemp("", "rival-kube-test-"); helperErr != nil {
			return
		}
		_, helperErr = (&Helper{BinDir: helperDir, Notice: io.Discard}).Build(context.Background())
	})
	require.NoError(t, helperErr)
	return &Helper{BinDir: helperDir, Notice: io.Discard}
}

const testDigest = "registry.example/rival/nvd@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func testRuns() map[string]kubespec.Run {
	ttl, secs := int32(600), int64(30)
	return map[string]kubespec.Run{
		// As kube/testdata/golden/cpu-fsdp-1.yaml.
		"cpu-fsdp-1": {Name: "rival-cpu-fsdp", Namespace: "default", Platform: "cpu", NNodes: 1,
			Image: testDigest, Train: kubespec.Step{Command: []string{"python3", "/rival/run/train.py"}}},
		"everything": {
			Name: "rival-nvd-mega", Namespace: "bench", Platform: "nvd", NNodes: 2, GPUsPerNode: 8, Image: testDigest, Framework: "mega",
			Train: kubespec.Step{Command: []string{"torchrun", "--node_rank=0", "--master_addr", "localhost", "--master_port=29500", "keep $(HOME)"},
				Env: map[string]string{"NCCL_DEBUG": "WARN", "Z": "$(X)"}, WorkDir: "/workspace"},
			Preflight: &kubespec.Step{Command: []string{"python3", "/rival/run/preflight.py", "$(Y)"}, Env: map[string]string{"WORLD_SIZE": "16"}},
			Volumes: []kubespec.Volume{{Claim: "rival-data", SubPath: "encoded/llama", MountPath: "/rival/data", ReadOnly: true},
				{Claim: "rival-output", SubPath: "runs/x", MountPath: "/rival/run"}, {Claim: "rival-data", MountPath: "/rival/cache"}},
			MasterPort: 29700, ServiceAccount: "trainer", PriorityClass: "batch-high",
			NodeSelector: map[string]string{"gpu.example/model": "h100"},
			Tolerations: []kubespec.Toleration{{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"},
				{Key: "spot", Operator: "Equal", Value: "yes", Effect: "NoExecute", TolerationSeconds: &secs}},
			ActiveDeadline: 7200, ShmSize: "32Gi", TTLAfterFinishedS: &ttl, PodAnnotations: map[string]string{"example.com/a": "b"},
		},
	}
}

// A run crosses to the program and comes back as the in-process manifest, byte for byte.
func TestManifestThroughTheProgram(t *testing.T) {
	h := testHelper(t)
	for name, r := range testRuns() {
		t.Run(name, func(t *testing.T) {
			got, err := h.Manifest(context.Background(), r)
			require.NoError(t, err)
			want, err := kube.Manifest(r)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		})
	}
	golden, err := os.ReadFile(filepath.Join("..", "testdata", "golden", "cpu-fsdp-1.yaml"))
	require.NoError(t, err)
	got, err := h.Manifest(context.Background(), testRuns()["cpu-fsdp-1"])
	require.NoError(t, err)
	assert.Equal(t, string(golden), string(got))
}

// A refusal reads as the in-process one, including the check only the program can make.
func TestManifestRefusalsThroughTheProgram(t *testing.T) {
	h := testHelper(t)
	for _, edit := range []func(*kubespec.Run){
		func(r *kubespec.Run) { r.ShmSize = "lots" },
		func(r *kubespec.Run) { r.Image = "registry.example/rival/nvd:latest" },
		func(r *kubespec.Run) { r.Namespace = "a.b" },
	} {
		r := testRuns()["cpu-fsdp-1"]
		edit(&r)
		_, want := kube.Manifest(r)
		require.Error(t, want)
		_, err := h.Manifest(context.Background(), r)
		require.Error(t, err)
		assert.Equal(t, want.Error(), err.Error())
	}
}

func writeKubeconfig(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake-cluster, cluster: {server: %q}}, {name: other-cluster, cluster: {server: "https://127.0.0.1:2"}}]
contexts: [{name: fake, context: {cluster: fake-cluster, user: u, namespace: bench}}, {name: other, context: {cluster: other-cluster, user: u}}]
current-context: fake
users: [{name: u, user: {token: t}}]
`, server)), 0o600))
	return path
}

func TestConnectThroughTheProgram(t *testing.T) {
	h := testHelper(t)
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "https://127.0.0.1:1"))
	name, err := h.Connect(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, "fake-cluster", name)
	name, err = h.Connect(context.Background(), "other")
	require.NoError(t, err)
	assert.Equal(t, "other-cluster", name)
	_, _, want := kube.Connect("missing")
	require.Error(t, want)
	_, err = h.Connect(context.Background(), "missing")
	require.Error(t, err)
	assert.Equal(t, want.Error(), err.Error())
}

func TestBuildWithoutGo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	h := &Helper{BinDir: t.TempDir()}
	_, err := h.Build(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no `go` command on PATH")
	assert.Contains(t, err.Error(), "go build -o "+h.Path()+" "+Package)
}

func TestBuildSaysItOnceAndReusesTheProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("links the program")
	}
	var notice strings.Builder
	h := &Helper{BinDir: t.TempDir(), Notice: &notice}
	path, err := h.Build(context.Background())
	require.NoError(t, err)
	assert.Equal(t, h.Path(), path)
	assert.Contains(t, notice.String(), "kube: compiling the Kubernetes client ("+Package)
	assert.Equal(t, 1, strings.Count(notice.String(), "\n"), "one line")
	before, err := os.Stat(path)
	require.NoError(t, err)
	goprog.Forget(path) // as a later invocation would find it
	notice.Reset()
	_, err = h.Build(context.Background())
	require.NoError(t, err)
	assert.Empty(t, notice.String(), "the program is there: nothing to say")
	after, err := os.Stat(path)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "go build leaves an up-to-date program in place (it only touches it)")
}

// fakeAPI answers the requests kube.Cluster makes of an API server for one run: the Service and
// Job are created, the Job's two pods run (on node-0 and node-1), and then the run completes, or
// a pod ends OOMKilled, or the pods run until the Job is deleted.
type fakeAPI struct {
	t        *testing.T
	srv      *httptest.Server
	scenario string // "complete", "oom" or "hold"

	mu      sync.Mutex
	job     bool // the Job exists
	jobGets int
	deleted []string // what was deleted, in order: "job Foreground", "service"
}

func newFakeAPI(t *testing.T, scenario string) *fakeAPI {
	f := &fakeAPI{t: t, scenario: scenario}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Setenv("KUBECONFIG", writeKubeconfig(t, f.srv.URL))
	return f
}

func (f *fakeAPI) deletes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.deleted...)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, kind, name string) {
	writeJSON(w, http.StatusNotFound, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
		"message": kind + ` "` + name + `" not found`, "reason": "NotFound", "code": 404,
		"details": map[string]any{"name": name, "kind": kind}})
}

func (f *fakeAPI) pod(rank int) map[string]any {
	status := map[string]any{"phase": "Running"}
	if f.scenario == "oom" && rank == 1 {
		status = map[string]any{"phase": "Failed", "containerStatuses": []any{map[string]any{"name": "train",
			"state": map[string]any{"terminated": map[string]any{"exitCode": 137, "reason": "OOMKilled"}}}}}
	}
	return map[string]any{
		"metadata": map[string]any{"name": fmt.Sprintf("x-%d-abcde", rank), "namespace": "bench",
			"annotations": map[string]any{kubespec.IndexAnnotation: fmt.Sprint(rank)}, "creationTimestamp": "2025-01-01T00:00:00Z"},
		"spec":   map[string]any{"nodeName": fmt.Sprintf("node-%d", rank)},
		"status": status,
	}
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	body, _ := io.ReadAll(r.Body)
	switch {
	// The client may send protobuf; the answers are JSON, which it reads as well.
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/services"):
		writeJSON(w, http.StatusCreated, map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "x", "namespace": "bench"}})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/jobs"):
		f.job = true
		writeJSON(w, http.StatusCreated, map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "x", "namespace": "bench"}})
	case r.Method == http.MethodGet && len(p) == 7 && p[5] == "jobs":
		if !f.job {
			notFound(w, "jobs", p[6])
			return
		}
		f.jobGets++
		var conds []any
		if f.scenario == "complete" && f.jobGets > 3 {
			conds = append(conds, map[string]any{"type": "Complete", "status": "True"})
		}
		writeJSON(w, http.StatusOK, map[string]any{"apiVersion": "batch/v1", "kind": "Job",
			"metadata": map[string]any{"name": p[6], "namespace": "bench"}, "status": map[string]any{"conditions": conds}})
	case r.Method == http.MethodGet && len(p) == 5 && p[4] == "pods":
		items := []any{}
		if f.job {
			items = append(items, f.pod(0), f.pod(1))
		}
		writeJSON(w, http.StatusOK, map[string]any{"apiVersion": "v1", "kind": "PodList", "items": items})
	case r.Method == http.MethodGet && len(p) == 7 && p[6] == "log":
		fmt.Fprintf(w, "%s %s step 1\n%s %s step 2\n", p[5], r.URL.Query().Get("container"), p[5], r.URL.Query().Get("container"))
	case r.Method == http.MethodDelete && len(p) == 7 && p[5] == "jobs":
		policy := "" // the DeleteOptions' propagation policy, JSON or protobuf
		if bytes.Contains(body, []byte("Foreground")) {
			policy = "Foreground"
		}
		f.deleted = append(f.deleted, "job "+policy)
		f.job = false
		writeJSON(w, http.StatusOK, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
	case r.Method == http.MethodDelete && len(p) == 6 && p[4] == "services":
		f.deleted = append(f.deleted, "service")
		writeJSON(w, http.StatusOK, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Success"})
	default:
		f.t.Errorf("fake API server: unexpected %s %s", r.Method, r.URL)
		http.Error(w, "unexpected", http.StatusBadRequest)
	}
}

func fakeRun() kubespec.Run {
	return kubespec.Run{Name: "x", Namespace: "bench", Platform: "nvd", NNodes: 2, GPUsPerNode: 8, Image: testDigest,
		Train: kubespec.Step{Command: []string{"torchrun", "train.py"}}}
}

// A run through the program: created, followed with its status and rank 0's log, deleted.
func TestRunThroughTheProgram(t *testing.T) {
	f := newFakeAPI(t, "complete")
	var lines, status []string
	c := &Cluster{Helper: testHelper(t), Context: "fake", Poll: 100 * time.Millisecond, Status: func(s string) { status = append(status, s) }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	final, err := c.Execute(ctx, fakeRun(), 10*time.Second, func(s string) { lines = append(lines, s) })
	require.NoError(t, err)
	assert.Equal(t, []string{"node-0", "node-1"}, final.Nodes)
	assert.Equal(t, []string{"x-0-abcde", "x-1-abcde"}, final.Pods)
	assert.Equal(t, []string{"x-0-abcde train step 1", "x-0-abcde train step 2"}, lines)
	assert.Contains(t, status, "kube: job bench/x running on node-0,node-1")
	assert.Equal(t, []string{"job Foreground", "service"}, f.deletes())
}

// A failing pod fails the run with its reason: the caller gets the *RunError the program got.
func TestRunErrorThroughTheProgram(t *testing.T) {
	f := newFakeAPI(t, "oom")
	c := &Cluster{Helper: testHelper(t), Context: "fake", Poll: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	final, err := c.Execute(ctx, fakeRun(), 10*time.Second, func(string) {})
	var re *kubespec.RunError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, "kube: job bench/x: container train of pod x-1-abcde exited with code 137 (OOMKilled)", err.Error())
	assert.Equal(t, "OOMKilled", final.Reason)
	assert.Equal(t, 137, final.ExitCode)
	assert.Equal(t, final, re.Final)
	assert.Equal(t, []string{"job Foreground", "service"}, f.deletes())
}

// Ctrl-C (the caller's context cancelled) and the run's timeout (its deadline) reach the program,
// which deletes the Job and the Service before the caller returns, and the caller sees the same
// error it would in process.
func TestCancelAndTimeoutReachTheProgram(t *testing.T) {
	for _, tc := range []struct {
		name string
		want error
	}{{"ctrl-c", context.Canceled}, {"timeout", context.DeadlineExceeded}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t, "hold")
			limit := 3 * time.Second
			if tc.want == context.Canceled {
				limit = time.Minute
			}
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			c := &Cluster{Helper: testHelper(t), Context: "fake", Poll: 100 * time.Millisecond, Status: func(s string) {
				if strings.Contains(s, "running on") && tc.want == context.Canceled {
					cancel()
				}
			}}
			start := time.Now()
			_, err := c.Execute(ctx, fakeRun(), 10*time.Second, func(string) {})
			assert.Equal(t, tc.want, err)
			assert.Equal(t, []string{"job Foreground", "service"}, f.deletes(), "deleted before Execute returned")
			assert.Less(t, time.Since(start), 30*time.Second)
		})
	}
}

// The program started by hand stops on SIGTERM as on a closed standard input.
func TestProgramStopsOnSIGTERM(t *testing.T) {
	f := newFakeAPI(t, "hold")
	bin, err := testHelper(t).Build(context.Background())
	require.NoError(t, err)
	cmd := exec.Command(bin, "run", "-context", "fake", "-poll", "100ms", "-grace", "10s")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	require.NoError(t, json.NewEncoder(stdin).Encode(fakeRun()))
	out, err := ReadEvents(stdout, nil, func(s string) {
		if strings.Contains(s, "running on") {
			cmd.Process.Signal(syscall.SIGTERM)
		}
	})
	require.NoError(t, err)
	assert.True(t, errors.Is(out.Err, context.Canceled), "%v", out.Err)
	require.NoError(t, cmd.Wait())
	assert.Equal(t, []string{"job Foreground", "service"}, f.deletes())
}
