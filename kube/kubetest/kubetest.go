// Package kubetest starts a real Kubernetes control plane on loopback for tests: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and KWOK, which fakes the nodes and the
// pods' lifecycles (no kubelet, no containers). The binaries come from .ci/k8s-binaries.sh.
package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rivalbench/rival/kube/kubespec"
)

// Version is the Kubernetes release the binaries are built from.
const Version = "v1.37.2"

// Annotations the test stages read on a pod: HoldAnnotation keeps it running until deleted;
// ExitCodeAnnotation (with ReasonAnnotation) has it fail with that exit code once running.
const (
	HoldAnnotation     = "rival.test/hold"
	ExitCodeAnnotation = "rival.test/exit-code"
	ReasonAnnotation   = "rival.test/reason"
	// WaitingAnnotation leaves a scheduled pod's containers waiting with that reason (ErrImagePull).
	WaitingAnnotation = "rival.test/waiting"
)

// BinDir is where .ci/k8s-binaries.sh leaves the binaries: RIVAL_K8S_BIN, else the versioned cache.
func BinDir() string {
	if d := os.Getenv("RIVAL_K8S_BIN"); d != "" {
		return d
	}
	return filepath.Join("/var/cache/rival-k8s", Version)
}

var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// Env is a running control plane.
type Env struct {
	Config *rest.Config
	Client kubernetes.Interface
	// Kubeconfig is a kubeconfig file for the cluster, named "rival-test".
	Kubeconfig string
}

var (
	mu     sync.Mutex
	shared *Env
	procs  []*exec.Cmd
	tmp    string // the control plane's files (etcd's data, certificates, logs)
)

// Start returns the control plane shared by a test binary's tests, starting it on first use. It
// skips the test, naming the command that builds the binaries, when they are absent, and fails it
// instead when RIVAL_REQUIRE_K8S=1 (CI). Stop ends it (from TestMain, or a test's defer: the
// next Start begins a fresh one).
func Start(t testing.TB) *Env {
	t.Helper()
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
			msg := fmt.Sprintf("no %s in %s: build the control plane with `bash .ci/k8s-binaries.sh` (about 900 CPU seconds once: 11 to 20 minutes on 2 cores)", b, BinDir())
			if os.Getenv("RIVAL_REQUIRE_K8S") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if shared == nil {
		env, err := start()
		if err != nil {
			t.Fatalf("kubetest: %v", err)
		}
		shared = env
	}
	return shared
}

// Stop ends the processes Start began.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	shared = nil
	stopProcs()
}

func stopProcs() {
	for i := len(procs) - 1; i >= 0; i-- {
		p := procs[i]
		if p.Process != nil {
			p.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				p.Process.Kill()
				<-done
			}
		}
	}
	procs = nil
	if tmp != "" {
		os.RemoveAll(tmp)
		tmp = ""
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func run(dir, name string, args ...string) error {
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return err
	}
	c := exec.Command(filepath.Join(BinDir(), name), args...)
	c.Stdout, c.Stderr = logf, logf
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.Start(); err != nil {
		return fmt.Errorf("starting %s: %v", name, err)
	}
	procs = append(procs, c)
	return nil
}

func logTail(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name+".log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}

func start() (*Env, error) {
	dir, err := os.MkdirTemp("", "rival-kube-")
	if err != nil {
		return nil, err
	}
	tmp = dir
	ports := make([]int, 4)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	etcdClient, etcdPeer, apiPort, kwokPort := ports[0], ports[1], ports[2], ports[3]
	token := "rival-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv": []byte(token + ",rival-admin,1,\"system:masters\"\n"),
		"kubeconfig": []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: rival-test
  cluster:
    server: https://127.0.0.1:%d
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: rival-test
  context: {cluster: rival-test, user: admin}
current-context: rival-test
`, apiPort, token)),
		"kwok.yaml": []byte(stages),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	if err := run(dir, "etcd", "--name=rival", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=rival="+peerURL, "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := run(dir, "kube-apiserver", "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", apiPort),
		"--cert-dir="+filepath.Join(dir, "certs"), "--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=AlwaysAllow", "--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=none",
		"--disable-admission-plugins=ServiceAccount"); err != nil {
		return nil, err
	}
	cfg := &rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", apiPort), BearerToken: token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 50, Burst: 100}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && string(body) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			stopProcs()
			return nil, fmt.Errorf("kube-apiserver not ready after 90 s (%v):\n%s\netcd:\n%s", err, logTail(dir, "kube-apiserver"), logTail(dir, "etcd"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := run(dir, "kube-controller-manager", "--kubeconfig="+kc, "--leader-elect=false",
		"--secure-port=0", "--use-service-account-credentials=false", "--node-monitor-grace-period=1h",
	); err != nil {
		return nil, err
	}
	if err := run(dir, "kube-scheduler", "--kubeconfig="+kc, "--leader-elect=false", "--secure-port=0"); err != nil {
		return nil, err
	}
	if err := run(dir, "kwok", "--kubeconfig="+kc, "--config="+filepath.Join(dir, "kwok.yaml"),
		"--manage-all-nodes=true", fmt.Sprintf("--server-address=127.0.0.1:%d", kwokPort),
		"--node-ip=10.1.0.1", "--cidr=10.2.0.1/16"); err != nil {
		return nil, err
	}
	env := &Env{Config: cfg, Client: client, Kubeconfig: kc}
	ctx := context.Background()
	// The default namespace and service account the pods run as.
	for {
		_, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			stopProcs()
			return nil, fmt.Errorf("no default namespace: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return env, nil
}

// settle bounds how long the control plane may take to make a node ready or bind a claim.
const settle = 3 * time.Minute

// AddGPUNodes adds n fake nodes named prefix-0... with gpus GPUs of resource (nvidia.com/gpu or
// amd.com/gpu) each, and waits until KWOK reports them ready and no taint is left on them.
func (e *Env) AddGPUNodes(t testing.TB, prefix string, n int, resourceName corev1.ResourceName, gpus int, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i++ {
		l := map[string]string{"type": "kwok"}
		for k, v := range labels {
			l[k] = v
		}
		capacity := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
			corev1.ResourcePods: resource.MustParse("110"), resourceName: *resource.NewQuantity(int64(gpus), resource.DecimalSI),
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Labels: l,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := e.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating node %s: %v", node.Name, err)
		}
	}
	// Generous: two test binaries may each run a control plane on 2 busy cores (go test -p 2 under
	// -race), and the node lifecycle controller lifts its taint late then. A bound, not a wait.
	deadline := time.Now().Add(settle)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		for {
			node, err := e.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && ready(node) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s not ready after %v", name, settle)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			// The node lifecycle controller lifts its not-ready taint a moment after.
			return len(n.Status.Allocatable) > 0 && len(n.Spec.Taints) == 0
		}
	}
	return false
}

// Namespace creates a fresh namespace for one test.
func (e *Env) Namespace(t testing.TB, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	return name
}

// stages are the lifecycles KWOK plays: a new node becomes ready; a scheduled pod runs; a
// Job's running pod completes with exit code 0, or fails with the exit code and reason its
// annotations give, or, held, runs until deleted; a deleted pod goes at once.
const stages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: rival-node-ready
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - {key: '.status.conditions', operator: DoesNotExist}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: Ready, status: "True", reason: KubeletReady, message: "fake node", lastHeartbeatTime: {{ $now | Quote }}, lastTransitionTime: {{ $now | Quote }}}
      nodeInfo: {kubeletVersion: fake, architecture: amd64, operatingSystem: linux}
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: rival-pod-run
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.podIP', operator: DoesNotExist}
    - {key: '.spec.nodeName', operator: Exists}
    - {key: '.metadata.annotations["rival.test/waiting"]', operator: DoesNotExist}
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
      - {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
      {{ if .spec.initContainers }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0,
         state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}}
      {{ end }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, started: true,
         state: {running: {startedAt: {{ $now | Quote }}}}}
      {{ end }}
      hostIP: "10.1.0.1"
      podIP: {{ PodIPWith .spec.nodeName false ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: rival-pod-waiting
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.hostIP', operator: DoesNotExist}
    - {key: '.spec.nodeName', operator: Exists}
    - {key: '.metadata.annotations["rival.test/waiting"]', operator: Exists}
  next:
    statusTemplate: |
      {{ $a := .metadata.annotations }}
      containerStatuses:
      {{ range .spec.containers }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, restartCount: 0, started: false,
         state: {waiting: {reason: {{ index $a "rival.test/waiting" | Quote }}, message: "test: the image cannot be pulled"}}}
      {{ end }}
      hostIP: "10.1.0.1"
      phase: Pending
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: rival-pod-complete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Running]}
    - {key: '.metadata.ownerReferences.[].kind', operator: In, values: [Job]}
    - {key: '.metadata.annotations["rival.test/hold"]', operator: DoesNotExist}
    - {key: '.metadata.annotations["rival.test/exit-code"]', operator: DoesNotExist}
  delay: {durationMilliseconds: 300}
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, restartCount: 0, started: false,
         state: {terminated: {exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}}
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: rival-pod-fail
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: DoesNotExist}
    - {key: '.status.phase', operator: In, values: [Running]}
    - {key: '.metadata.annotations["rival.test/exit-code"]', operator: Exists}
  delay: {durationMilliseconds: 300}
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $a := .metadata.annotations }}
      containerStatuses:
      {{ range .spec.containers }}
      - {image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, restartCount: 0, started: false,
         state: {terminated: {exitCode: {{ index $a "rival.test/exit-code" }}, reason: {{ or (index $a "rival.test/reason") "Error" | Quote }}, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }}}}}
      {{ end }}
      phase: Failed
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: rival-pod-delete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: Exists}
  next:
    finalizers: {empty: true}
    delete: true
`

// Claim creates a PersistentVolumeClaim name in ns bound to a volume of its own (a host path no pod
// ever mounts: KWOK runs no containers), and waits until it is bound.
func (e *Env) Claim(t testing.TB, ns, name string) {
	t.Helper()
	ctx := context.Background()
	size := resource.MustParse("1Gi")
	pvName := ns + "-" + name
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "rival-test",
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/rival-test/" + pvName}},
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: name},
		},
	}
	if _, err := e.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating volume %s: %v", pvName, err)
	}
	class := "rival-test"
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, StorageClassName: &class, VolumeName: pvName,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if _, err := e.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating claim %s/%s: %v", ns, name, err)
	}
	deadline := time.Now().Add(settle)
	for {
		c, err := e.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && c.Status.Phase == corev1.ClaimBound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim %s/%s not bound after %v", ns, name, settle)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// NothingLeft checks that a run's Job, its pods (by the run label) and its Service are gone.
func (e *Env) NothingLeft(t testing.TB, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Job %s left behind (%v)", name, err)
	}
	if _, err := e.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Service %s left behind (%v)", name, err)
	}
	pods, err := e.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: kubespec.RunLabel + "=" + name})
	if err != nil {
		t.Fatalf("listing the pods of %s: %v", name, err)
	}
	if len(pods.Items) > 0 {
		t.Errorf("%d pods of %s left behind", len(pods.Items), name)
	}
}
