package kube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rivalbench/rival/safefile"
)

// LogSource streams one container's log. The API server's pod log endpoint is the product's
// (APILogs); a cluster whose pods print nothing (KWOK's fakes) is read through another.
type LogSource interface {
	// Logs follows the container's log until the container ends or ctx does.
	Logs(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error)
}

// APILogs reads logs through the API server (the kubelet behind it).
type APILogs struct{ Client kubernetes.Interface }

// Logs implements LogSource.
func (a APILogs) Logs(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error) {
	return a.Client.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
}

// Connect builds a client from the user's kubeconfig with client-go's loading rules (KUBECONFIG,
// else ~/.kube/config, else the in-cluster service account) and a context name ("" for the current
// one). It returns the cluster's name as the kubeconfig calls it, for the result; credentials stay
// inside the client and are never printed.
func Connect(kubeContext string) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if err := checkKubeconfigs(rules.GetLoadingPrecedence()); err != nil {
		return nil, "", err
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kube: reading the kubeconfig (KUBECONFIG or ~/.kube/config): %v; point KUBECONFIG at your cluster's file or set KUBE_CONTEXT", err)
	}
	name := cfg.Host
	if raw, err := cc.RawConfig(); err == nil {
		ctxName := kubeContext
		if ctxName == "" {
			ctxName = raw.CurrentContext
		}
		if c, ok := raw.Contexts[ctxName]; ok && c.Cluster != "" {
			name = c.Cluster
		}
	}
	cs, err := NewClient(cfg)
	return cs, name, err
}

// NewClient is a clientset for cfg with rates that suit one run's polling.
func NewClient(cfg *rest.Config) (kubernetes.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 20, 40
	c.UserAgent = "rival"
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("kube: %v", err)
	}
	return cs, nil
}

// Cluster submits runs to one cluster and follows them.
type Cluster struct {
	Client kubernetes.Interface
	Logs   LogSource // nil: APILogs through Client
	// PendingTimeout bounds how long a run may wait for its pods to be scheduled and started; 0
	// waits for as long as ctx allows.
	PendingTimeout time.Duration
	Poll           time.Duration // how often status is read; 0: one second
	// Status receives one line whenever the run's state changes (pending and why, running on which
	// nodes); nil drops them.
	Status func(string)
}

// Submit creates the Service and the Job; when the Job cannot be created the Service goes again.
func (c *Cluster) Submit(ctx context.Context, svc *corev1.Service, job *batchv1.Job) error {
	if _, err := c.Client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kube: creating Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if _, err := c.Client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		c.Client.CoreV1().Services(svc.Namespace).Delete(context.WithoutCancel(ctx), svc.Name, metav1.DeleteOptions{})
		return fmt.Errorf("kube: creating Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// DryRun has the API server validate and admit the objects without storing them
// (`kubectl apply --dry-run=server`).
func DryRun(ctx context.Context, client kubernetes.Interface, svc *corev1.Service, job *batchv1.Job) error {
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, opts); err != nil {
		return fmt.Errorf("kube: the API server refuses Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	if _, err := client.BatchV1().Jobs(job.Namespace).Create(ctx, job, opts); err != nil {
		return fmt.Errorf("kube: the API server refuses Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// Delete removes a run's Job with foreground propagation (its pods go first), its Service, and
// waits until no pod of the run is left.
func (c *Cluster) Delete(ctx context.Context, namespace, name string) error {
	fg := metav1.DeletePropagationForeground
	var errs []error
	if err := c.Client.BatchV1().Jobs(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("kube: deleting Job %s/%s: %w", namespace, name, err))
	}
	if err := c.Client.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("kube: deleting Service %s/%s: %w", namespace, name, err))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for {
		_, jerr := c.Client.BatchV1().Jobs(namespace).Get(ctx, name, metav1.GetOptions{})
		pods, perr := c.pods(ctx, namespace, name)
		if perr == nil && len(pods) > 0 {
			// Pods whose Job is gone may linger when their controller lost track: remove them too.
			for _, p := range pods {
				if p.DeletionTimestamp == nil {
					c.Client.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
				}
			}
		}
		if apierrors.IsNotFound(jerr) && perr == nil && len(pods) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube: Job %s/%s and its pods were not gone in time (%v): check `kubectl -n %s get job,pods -l %s=%s`",
				namespace, name, ctx.Err(), namespace, RunLabel, name)
		case <-time.After(c.poll() / 4):
		}
	}
}

func (c *Cluster) poll() time.Duration {
	if c.Poll > 0 {
		return c.Poll
	}
	return time.Second
}

func (c *Cluster) logs() LogSource {
	if c.Logs != nil {
		return c.Logs
	}
	return APILogs{Client: c.Client}
}

func (c *Cluster) status(format string, args ...any) {
	if c.Status != nil {
		c.Status(fmt.Sprintf(format, args...))
	}
}

func (c *Cluster) pods(ctx context.Context, namespace, name string) ([]corev1.Pod, error) {
	l, err := c.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: RunLabel + "=" + name})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// rank is a pod's completion index, -1 when it has none.
func rank(p corev1.Pod) int {
	r, err := strconv.Atoi(p.Annotations[IndexAnnotation])
	if err != nil {
		return -1
	}
	return r
}

// podFailure is why a pod cannot complete: a container that ended non-zero, an image that cannot be
// pulled, a container that cannot be created; ok false while nothing is wrong.
func podFailure(p corev1.Pod) (reason string, code int, msg string, ok bool) {
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			r := t.Reason
			if r == "" {
				r = "Error"
			}
			m := fmt.Sprintf("container %s of pod %s exited with code %d (%s)", s.Name, p.Name, t.ExitCode, r)
			if t.ExitCode == 137 && r != "OOMKilled" {
				m += ": killed (SIGKILL), often for memory"
			}
			if t.Message != "" {
				m += ": " + strings.TrimSpace(t.Message)
			}
			return r, int(t.ExitCode), m, true
		}
		if w := s.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff":
				m := fmt.Sprintf("container %s of pod %s cannot start: %s", s.Name, p.Name, w.Reason)
				if w.Message != "" {
					m += ": " + strings.TrimSpace(w.Message)
				}
				return w.Reason, 0, m, true
			}
		}
	}
	if p.Status.Phase == corev1.PodFailed {
		r := p.Status.Reason
		if r == "" {
			r = "Failed"
		}
		m := fmt.Sprintf("pod %s failed: %s", p.Name, r)
		if p.Status.Message != "" {
			m += ": " + p.Status.Message
		}
		return r, 0, m, true
	}
	return "", 0, "", false
}

// unschedulable is the scheduler's reason a pod waits, "" when it is scheduled or not yet looked at.
func unschedulable(p corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
			if c.Message != "" {
				return c.Reason + ": " + c.Message
			}
			return c.Reason
		}
	}
	return ""
}

func started(p corev1.Pod) bool {
	return p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Follow waits for a submitted run to end. It reports pending and running states through Status,
// streams rank 0's log (its preflight's, then its launch's) line by line to onLine, and fails on
// the first pod that fails, with that pod's own reason; a run that has not started within
// PendingTimeout fails with the scheduler's reason. It deletes nothing: Run does.
func (c *Cluster) Follow(ctx context.Context, job *batchv1.Job, onLine func(string)) (Final, error) {
	ns, name := job.Namespace, job.Name
	n := 1
	if job.Spec.Completions != nil {
		n = int(*job.Spec.Completions)
	}
	hasPreflight := len(job.Spec.Template.Spec.InitContainers) > 0
	start := time.Now()
	var (
		final     Final
		lastState string
		logWG     sync.WaitGroup
		streaming bool
	)
	logCtx, stopLogs := context.WithCancel(ctx)
	defer stopLogs()
	waitLogs := func() {
		done := make(chan struct{})
		go func() { logWG.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			stopLogs()
			<-done
		}
	}
	for {
		j, err := c.Client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if end := ended(ctx, err); end != nil {
				return final, end
			}
			return final, fmt.Errorf("kube: reading Job %s/%s: %w", ns, name, err)
		}
		pods, err := c.pods(ctx, ns, name)
		if err != nil {
			if end := ended(ctx, err); end != nil {
				return final, end
			}
			return final, fmt.Errorf("kube: listing the pods of Job %s/%s: %w", ns, name, err)
		}
		byRank := map[int]corev1.Pod{}
		for _, p := range pods {
			if r := rank(p); r >= 0 {
				if old, dup := byRank[r]; !dup || old.CreationTimestamp.Before(&p.CreationTimestamp) {
					byRank[r] = p
				}
			}
		}
		final.Nodes, final.Pods = final.Nodes[:0], final.Pods[:0]
		ranks := make([]int, 0, len(byRank))
		for r := range byRank {
			ranks = append(ranks, r)
		}
		sort.Ints(ranks)
		for _, r := range ranks {
			final.Pods = append(final.Pods, byRank[r].Name)
			if byRank[r].Spec.NodeName != "" {
				final.Nodes = append(final.Nodes, byRank[r].Spec.NodeName)
			}
		}
		// Rank 0's log, once its first container runs (before a failure or the end is reported, so a
		// run that ends between two looks still has its log read).
		if p, ok := byRank[0]; ok && !streaming && (started(p) || (hasPreflight && initRunning(p))) {
			streaming = true
			containers := []string{TrainContainer}
			if hasPreflight {
				containers = []string{PreflightContainer, TrainContainer}
			}
			logWG.Add(1)
			go func(pod string) {
				defer logWG.Done()
				c.stream(logCtx, ns, pod, containers, onLine)
			}(p.Name)
		}
		// A failing pod ends the run with its own reason, before the Job controller says so.
		for _, r := range ranks {
			if reason, code, msg, bad := podFailure(byRank[r]); bad {
				final.Reason, final.ExitCode = reason, code
				waitLogs()
				return final, &RunError{Job: ns + "/" + name, Final: final, Msg: msg}
			}
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				continue
			}
			switch cond.Type {
			case batchv1.JobComplete:
				waitLogs()
				return final, nil
			case batchv1.JobFailed:
				final.Reason = cond.Reason
				waitLogs()
				return final, &RunError{Job: ns + "/" + name, Final: final, Msg: fmt.Sprintf("failed: %s: %s", cond.Reason, cond.Message)}
			}
		}
		running := 0
		reason := ""
		for _, r := range ranks {
			if started(byRank[r]) {
				running++
			} else if u := unschedulable(byRank[r]); u != "" && reason == "" {
				reason = u
			}
		}
		state := fmt.Sprintf("pending: %d of %d pods started", running, n)
		if reason != "" {
			state = "pending: " + reason
		}
		if running == n && len(ranks) == n {
			state = "running on " + strings.Join(final.Nodes, ",")
		}
		if state != lastState {
			c.status("kube: job %s/%s %s", ns, name, state)
			lastState = state
		}
		if running < n && c.PendingTimeout > 0 && time.Since(start) > c.PendingTimeout {
			final.Reason = "PendingTimeout"
			why := "its pods did not start"
			if reason != "" {
				final.Reason = "Unschedulable"
				why = "the scheduler says " + reason
			}
			waitLogs()
			return final, &RunError{Job: ns + "/" + name, Final: final,
				Msg: fmt.Sprintf("still pending after %v (%s): free the resources, change NNODES or GPUS, or raise KUBE_PENDING_TIMEOUT", c.PendingTimeout, why)}
		}
		select {
		case <-ctx.Done():
			waitLogs()
			return final, ctx.Err()
		case <-time.After(c.poll()):
		}
	}
}

func initRunning(p corev1.Pod) bool {
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Running != nil || s.State.Terminated != nil {
			return true
		}
	}
	return false
}

// stream copies the containers' logs in turn, line by line. A container whose log cannot be opened
// yet (still starting) is retried until ctx ends.
func (c *Cluster) stream(ctx context.Context, ns, pod string, containers []string, onLine func(string)) {
	for _, name := range containers {
		var rc io.ReadCloser
		for {
			var err error
			if rc, err = c.logs().Logs(ctx, ns, pod, name); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(c.poll() / 2):
			}
		}
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			onLine(sc.Text())
		}
		rc.Close()
	}
}

// Run submits a run, follows it to its end and deletes its objects however it ends: on success,
// failure, pending timeout, and when ctx ends (Ctrl-C, the run's timeout), with grace to delete in.
func (c *Cluster) Run(ctx context.Context, svc *corev1.Service, job *batchv1.Job, grace time.Duration, onLine func(string)) (Final, error) {
	if err := c.Submit(ctx, svc, job); err != nil {
		return Final{}, err
	}
	final, err := c.Follow(ctx, job, onLine)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if derr := c.Delete(dctx, job.Namespace, job.Name); derr != nil {
		return final, errors.Join(err, derr)
	}
	return final, err
}

// Execute builds a run's objects and runs them (Run): what the rival-kube program does for the
// targets, and what tests run in process.
func (c *Cluster) Execute(ctx context.Context, r Run, grace time.Duration, onLine func(string)) (Final, error) {
	svc, job, err := Objects(r)
	if err != nil {
		return Final{}, err
	}
	return c.Run(ctx, svc, job, grace, onLine)
}

// ended is the context's end when err is how a request met it: the context is done, or client-go's
// rate limiter refused to wait past the deadline, just before it (golang.org/x/time/rate says so
// only in words, "would exceed context deadline"). nil when err is the cluster's own.
func ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if _, ok := ctx.Deadline(); ok && strings.Contains(err.Error(), "would exceed context deadline") {
		return context.DeadlineExceeded
	}
	return nil
}

// kubeconfigLimit bounds a kubeconfig file: a few clusters' embedded certificates take tens of KiB.
const kubeconfigLimit = 16 << 20

// checkKubeconfigs refuses, before client-go reads them, the kubeconfig files (KUBECONFIG's list,
// else ~/.kube/config) that are not regular files of a kubeconfig's size: client-go would wait on
// a FIFO for ever and read a link to /dev/zero until memory ran out. A file that does not exist is
// client-go's to skip, as it does.
func checkKubeconfigs(paths []string) error {
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, fi, err := safefile.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("kube: kubeconfig: %w; point KUBECONFIG at your cluster's file", err)
		}
		f.Close()
		if fi.Size() > kubeconfigLimit {
			return fmt.Errorf("kube: kubeconfig %s: %w (%d bytes; a kubeconfig is at most %d); point KUBECONFIG at your cluster's file", p, safefile.ErrTooLarge, fi.Size(), int64(kubeconfigLimit))
		}
	}
	return nil
}
