package kubeproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/rivalbench/rival/kube/kubespec"
)

// Manifest is a run's Service and Job as YAML documents (kube.Manifest in the program).
func (h *Helper) Manifest(ctx context.Context, r kubespec.Run) ([]byte, error) {
	in, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("kube: encoding the run: %v", err)
	}
	return h.call(ctx, in, "manifest")
}

// Connect reads the kubeconfig's context kubeContext ("" for the current one) and returns the
// cluster's name as the kubeconfig calls it (kube.Connect in the program).
func (h *Helper) Connect(ctx context.Context, kubeContext string) (string, error) {
	out, err := h.call(ctx, nil, "connect", "-context="+kubeContext)
	if err != nil {
		return "", err
	}
	var c struct {
		Cluster string `json:"cluster"`
	}
	if err := json.Unmarshal(out, &c); err != nil {
		return "", fmt.Errorf("kube: %s connect printed %q: %v", Name, out, err)
	}
	return c.Cluster, nil
}

// call runs one of the program's short commands with stdin and returns what it printed. The
// program says why it failed on standard error, in the words the in-process code used: that text
// is the error.
func (h *Helper) call(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	bin, err := h.Build(ctx)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 1 && msg != "" && ctx.Err() == nil {
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("kube: %s %s: %v%s", bin, args[0], err, suffix(msg))
	}
	return out.Bytes(), nil
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// Cluster runs runs on one cluster through the program: it is kube.Cluster's Execute in another
// process.
type Cluster struct {
	Helper *Helper
	// Context is the kubeconfig context; "" for the current one.
	Context string
	// PendingTimeout bounds how long a run may wait for its pods to start; 0 waits as long as the
	// context allows.
	PendingTimeout time.Duration
	Poll           time.Duration // how often status is read; 0: one second
	// Status receives one line whenever the run's state changes; nil drops them.
	Status func(string)
	// LogsURL, when set, is where container logs are read instead of the API server
	// (LogsURL/NAMESPACE/POD/CONTAINER): a cluster whose pods print nothing, like KWOK's.
	LogsURL string
}

// afterGrace is how long past the grace a cancelled program may still take (its log readers
// stop within 10 s, then a poll) before it is killed.
const afterGrace = 30 * time.Second

// Execute submits the run, streams rank 0's log to onLine, and returns when the program has
// deleted the run's objects, however the run ended. Cancelling ctx ends the run as Ctrl-C does in
// process: the program deletes the Job, its pods and the Service within grace; a ctx deadline is
// the program's own, so a timeout ends the run as a timeout there.
func (c *Cluster) Execute(ctx context.Context, r kubespec.Run, grace time.Duration, onLine func(string)) (kubespec.Final, error) {
	in, err := json.Marshal(r)
	if err != nil {
		return kubespec.Final{}, fmt.Errorf("kube: encoding the run: %v", err)
	}
	bin, err := c.Helper.Build(ctx)
	if err != nil {
		return kubespec.Final{}, err
	}
	args := []string{"run", "-context=" + c.Context, "-pending=" + c.PendingTimeout.String(), "-grace=" + grace.String(), "-poll=" + c.Poll.String()}
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		args = append(args, "-deadline="+deadline.Format(time.RFC3339Nano))
	}
	if c.LogsURL != "" {
		args = append(args, "-logs-url="+c.LogsURL)
	}
	cmd := exec.Command(bin, args...)
	// Its own process group: a terminal's Ctrl-C reaches Rival, which tells the program; a second
	// Ctrl-C that stops Rival at once leaves the program to finish deleting the run.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return kubespec.Final{}, fmt.Errorf("kube: %s run: %v", bin, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return kubespec.Final{}, fmt.Errorf("kube: %s run: %v", bin, err)
	}
	var stderr tail
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return kubespec.Final{}, fmt.Errorf("kube: starting %s run: %v", bin, err)
	}
	// The run, then stdin stays open: closing it is how the program learns the caller has
	// stopped (or died).
	if _, err := stdin.Write(append(in, '\n')); err != nil {
		stdin.Close()
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && hasDeadline {
			// The program has the same deadline and ends the run as a timeout itself; closing
			// stdin a moment later only backs that up.
			select {
			case <-done:
				return
			case <-time.After(time.Until(deadline) + time.Second):
			}
		}
		stdin.Close()
		select {
		case <-done:
		case <-time.After(grace + afterGrace):
			cmd.Process.Kill()
		}
	}()
	out, rerr := ReadEvents(stdout, onLine, c.Status)
	if rerr != nil {
		// A stream that cannot be read stops the run: the program deletes it once stdin closes,
		// and what it still writes is drained so it never blocks on a full pipe.
		stdin.Close()
		io.Copy(io.Discard, stdout)
	}
	werr := cmd.Wait()
	close(done)
	if rerr != nil {
		err := fmt.Errorf("kube: %s run: %v (%v)%s", bin, rerr, werr, suffix(stderr.String()))
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return kubespec.Final{}, err
	}
	return out.Final, out.Err
}

// tail keeps the last few KiB written to it: the program's own complaint, if it has one.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	const keep = 8 << 10
	t.b = append(t.b, p...)
	if len(t.b) > keep {
		t.b = t.b[len(t.b)-keep:]
	}
	return len(p), nil
}

func (t *tail) String() string { return strings.TrimSpace(string(t.b)) }
