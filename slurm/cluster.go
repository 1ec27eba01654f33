package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ErrNotInstalled is wrapped by the error of any call that needs a Slurm client tool it cannot find.
var ErrNotInstalled = errors.New("Slurm's client tools are not installed or not on PATH")

// Defaults for a zero Cluster.
const (
	DefaultPoll       = 5 * time.Second  // between squeue queries
	DefaultCancelWait = 60 * time.Second // how long a cancelled job may take to reach CANCELLED
	logPoll           = 250 * time.Millisecond
	toolTimeout       = 60 * time.Second // one Slurm client call; slurmctld answers in well under this
	maxQueryErrors    = 5                // consecutive failed squeue calls before Follow gives up
)

// Cluster runs Slurm's client tools. The zero value finds them on PATH and uses the process's
// environment.
type Cluster struct {
	// Paths of the tools; empty: found by name on the PATH of Env (or of the process).
	Sbatch, Squeue, Sacct, Scancel, Scontrol, Sinfo string
	// Env is the tools' environment (SLURM_CONF and the like); nil: the process's. Jobs inherit it
	// from sbatch, so it is also where Job.PassEnv values come from.
	Env []string
	// Poll is the interval between squeue queries; 0: DefaultPoll. The log is read more often.
	Poll time.Duration
	// PendingTimeout cancels a job that stays PENDING longer than this; 0: wait for as long as it takes.
	PendingTimeout time.Duration
	// CancelWait is how long Follow waits, after scancel, for the job to end; 0: DefaultCancelWait.
	CancelWait time.Duration
}

// JobError is the error of a job that did not end COMPLETED. Err, when set, is what made Rival
// cancel it (the context's error on an interrupt).
type JobError struct {
	Final   Final
	LogPath string
	Err     error
}

func (e *JobError) Error() string {
	f := e.Final
	var b strings.Builder
	fmt.Fprintf(&b, "slurm: job %s ", f.JobID)
	switch f.State {
	case StateNodeFail:
		if len(f.FailedNodes) > 0 {
			fmt.Fprintf(&b, "ended in NODE_FAIL: node failure on %s", strings.Join(f.FailedNodes, ","))
		} else {
			b.WriteString("ended in NODE_FAIL: a node of its allocation failed")
		}
	case StateTimeout:
		b.WriteString("reached its time limit (TIMEOUT)")
	case StateOutOfMemory:
		b.WriteString("ran out of memory (OUT_OF_MEMORY)")
	case StateCancelled:
		if f.Note != "" {
			b.WriteString("was CANCELLED: " + f.Note)
		} else {
			b.WriteString("was CANCELLED outside Rival (scancel or an administrator)")
		}
	case StateFailed:
		b.WriteString("FAILED")
		if f.Signal != 0 {
			fmt.Fprintf(&b, ", killed by signal %d", f.Signal)
		} else {
			fmt.Fprintf(&b, " with exit code %d", f.ExitCode)
		}
	default:
		fmt.Fprintf(&b, "ended in state %s", f.State)
		if f.Note != "" {
			b.WriteString(": " + f.Note)
		}
	}
	if f.Reason != "" {
		fmt.Fprintf(&b, " (Slurm's reason: %s)", f.Reason)
	}
	if f.NodeList != "" {
		fmt.Fprintf(&b, " on nodes %s", f.NodeList)
	}
	if f.Elapsed > 0 {
		fmt.Fprintf(&b, " after %s", f.Elapsed)
	}
	if e.LogPath != "" {
		fmt.Fprintf(&b, "; its log: %s", e.LogPath)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, " [%v]", e.Err)
	}
	return b.String()
}

func (e *JobError) Unwrap() error { return e.Err }

func orUnknown(s string) string {
	if s == "" {
		return "unknown nodes"
	}
	return s
}

var jobIDRE = regexp.MustCompile(`^[0-9]+$`)

func (c Cluster) env() []string {
	if c.Env == nil {
		return os.Environ()
	}
	return c.Env
}

// tool resolves a client tool: the configured path, or the name looked up on Env's PATH.
func (c Cluster) tool(name, configured string) (string, error) {
	if configured != "" && strings.ContainsRune(configured, '/') {
		if isExecutable(configured) {
			return configured, nil
		}
		return "", fmt.Errorf("slurm: %s at %s is missing or not executable: %w; fix the path, or install them (Debian: apt-get install slurm-client) and run on a cluster login node",
			name, configured, ErrNotInstalled)
	}
	if configured != "" {
		name = configured
	}
	path := ""
	for _, kv := range c.env() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("slurm: %s not found on PATH %q: %w; run Rival on a cluster login node, or install them (Debian: apt-get install slurm-client)",
		name, path, ErrNotInstalled)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}

// run calls one client tool and returns its stdout; a failure carries the tool's stderr.
func (c Cluster) run(ctx context.Context, name, configured string, args ...string) (string, string, error) {
	path, err := c.tool(name, configured)
	if err != nil {
		return "", "", err
	}
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = c.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return stdout.String(), stderr.String(), fmt.Errorf("slurm: %s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return stdout.String(), stderr.String(), nil
}

// Submit queues the script with `sbatch --parsable` and returns the job id.
func (c Cluster) Submit(ctx context.Context, scriptPath string) (string, error) {
	if _, err := os.Stat(scriptPath); err != nil {
		return "", fmt.Errorf("slurm: submit: %w", err)
	}
	out, _, err := c.run(ctx, "sbatch", c.Sbatch, "--parsable", scriptPath)
	if err != nil {
		return "", err
	}
	return parseSubmit(out)
}

// parseSubmit reads sbatch --parsable's "id" or "id;cluster".
func parseSubmit(out string) (string, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	id, _, _ := strings.Cut(last, ";")
	if !jobIDRE.MatchString(id) {
		return "", fmt.Errorf("slurm: sbatch --parsable printed %q, not a job id", strings.TrimSpace(out))
	}
	return id, nil
}

// Cancel asks Slurm to cancel the job (scancel).
func (c Cluster) Cancel(ctx context.Context, jobID string) error {
	if !jobIDRE.MatchString(jobID) {
		return fmt.Errorf("slurm: cancel: %q is not a job id", jobID)
	}
	_, _, err := c.run(ctx, "scancel", c.Scancel, jobID)
	return err
}

// Hostnames expands a node list such as "gpu[01-03]" (scontrol show hostnames).
func (c Cluster) Hostnames(ctx context.Context, nodeList string) ([]string, error) {
	if nodeList == "" {
		return nil, nil
	}
	out, _, err := c.run(ctx, "scontrol", c.Scontrol, "show", "hostnames", nodeList)
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}

// queue asks squeue for the job; found is false when slurmctld no longer knows it.
func (c Cluster) queue(ctx context.Context, id string) (queued, bool, error) {
	out, stderr, err := c.run(ctx, "squeue", c.Squeue, "-h", "--states=all", "-j", id, "-o", squeueFormat)
	if err != nil {
		if strings.Contains(stderr, "Invalid job id") {
			return queued{}, false, nil
		}
		return queued{}, false, err
	}
	return parseSqueue(out)
}

// final asks slurmctld how the job ended, then accounting when slurmctld has forgotten it.
func (c Cluster) final(ctx context.Context, id string) (Final, error) {
	out, _, err := c.run(ctx, "scontrol", c.Scontrol, "show", "job", "-o", id)
	if err == nil {
		f, ok, perr := finalFromScontrol(id, parseScontrol(out))
		if perr != nil {
			return f, perr
		}
		if ok {
			return f, nil
		}
	}
	sout, _, serr := c.run(ctx, "sacct", c.Sacct, "-n", "-P", "-X", "-j", id, "-o", sacctFields)
	if serr != nil {
		return Final{JobID: id}, fmt.Errorf("slurm: job %s: slurmctld no longer knows it (%v) and accounting cannot say how it ended (%v)", id, err, serr)
	}
	f, ok, perr := finalFromSacct(id, sout)
	if perr != nil {
		return f, perr
	}
	if !ok {
		return Final{JobID: id}, fmt.Errorf("slurm: job %s: neither slurmctld nor accounting knows it", id)
	}
	return f, nil
}

// Follow streams the job's log to onLine, line by line as the job writes it, and returns how the job
// ended. A job that does not end COMPLETED gives a *JobError. When ctx is cancelled (Ctrl-C), Follow
// cancels the job with scancel, waits up to CancelWait for it to end, and returns a *JobError
// wrapping ctx's error. A job PENDING longer than PendingTimeout is cancelled the same way.
func (c Cluster) Follow(ctx context.Context, jobID, logPath string, onLine func(string)) (Final, error) {
	if !jobIDRE.MatchString(jobID) {
		return Final{}, fmt.Errorf("slurm: follow: %q is not a job id", jobID)
	}
	poll := c.Poll
	if poll <= 0 {
		poll = DefaultPoll
	}
	tail := newTailer(logPath, onLine)
	ticker := time.NewTicker(min(poll, logPoll))
	defer ticker.Stop()
	var next, pendingSince time.Time
	var queryErrs int
	for {
		if err := tail.poll(false); err != nil {
			return Final{JobID: jobID}, err
		}
		if now := time.Now(); !now.Before(next) {
			next = now.Add(poll)
			q, found, err := c.queue(ctx, jobID)
			switch {
			case ctx.Err() != nil:
				return c.abort(jobID, tail, logPath, "cancelled by Rival on interrupt", ctx.Err())
			case errors.Is(err, ErrNotInstalled):
				return Final{JobID: jobID}, err
			case err != nil:
				// slurmctld may be briefly unreachable (failover, load); give up only when it stays so.
				if queryErrs++; queryErrs >= maxQueryErrors {
					return Final{JobID: jobID}, fmt.Errorf("slurm: following job %s (it may still be running): %w", jobID, err)
				}
			case !found || IsTerminal(q.State):
				return c.finish(ctx, jobID, tail, logPath, "", nil)
			default:
				queryErrs = 0
				if q.State != StatePending {
					pendingSince = time.Time{}
					break
				}
				if pendingSince.IsZero() {
					pendingSince = now
				}
				if waited := now.Sub(pendingSince); c.PendingTimeout > 0 && waited >= c.PendingTimeout {
					note := fmt.Sprintf("cancelled by Rival after it stayed PENDING for %s; raise the pending timeout, or ask Slurm when it would have started (squeue --start)",
						waited.Round(time.Second))
					return c.abort(jobID, tail, logPath, note, nil)
				}
			}
		}
		select {
		case <-ctx.Done():
			return c.abort(jobID, tail, logPath, "cancelled by Rival on interrupt", ctx.Err())
		case <-ticker.C:
		}
	}
}

// abort cancels the job, waits for it to end, and reports it.
func (c Cluster) abort(id string, tail *tailer, logPath, note string, cause error) (Final, error) {
	wait := c.CancelWait
	if wait <= 0 {
		wait = DefaultCancelWait
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+toolTimeout)
	defer cancel()
	if err := c.Cancel(ctx, id); err != nil {
		return Final{JobID: id, Note: note}, fmt.Errorf("slurm: job %s: %s, but scancel failed, so it may still be queued or running: %w", id, note, err)
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		_ = tail.poll(false)
		q, found, err := c.queue(ctx, id)
		if err == nil && (!found || IsTerminal(q.State)) {
			return c.finish(ctx, id, tail, logPath, note, cause)
		}
		time.Sleep(logPoll)
	}
	f, _ := c.final(ctx, id)
	f.JobID, f.Note = id, note
	_ = tail.poll(true)
	return f, &JobError{Final: f, LogPath: logPath,
		Err: errors.Join(cause, fmt.Errorf("scancel sent but the job was still %s after %s", orUnknown(f.State), wait))}
}

// finish reads how the job ended, passes on the rest of its log, and turns a failed end into a *JobError.
func (c Cluster) finish(ctx context.Context, id string, tail *tailer, logPath, note string, cause error) (Final, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*toolTimeout)
	defer cancel()
	f, err := c.final(ctx, id)
	f.Note = note
	if terr := tail.poll(true); terr != nil && err == nil {
		err = terr
	}
	if err != nil {
		return f, errors.Join(err, cause)
	}
	if nodes, herr := c.Hostnames(ctx, f.NodeList); herr == nil {
		f.Nodes = nodes
	}
	if f.State == StateNodeFail {
		f.FailedNodes = c.downNodes(ctx, f.NodeList)
	}
	if f.State != StateCompleted || cause != nil {
		return f, &JobError{Final: f, LogPath: logPath, Err: cause}
	}
	return f, nil
}

// downNodes returns the nodes of nodeList that sinfo reports down, failed or drained (best effort:
// nil when sinfo cannot say).
func (c Cluster) downNodes(ctx context.Context, nodeList string) []string {
	if nodeList == "" {
		return nil
	}
	out, _, err := c.run(ctx, "sinfo", c.Sinfo, "-h", "-N", "-n", nodeList, "-o", "%N|%t")
	if err != nil {
		return nil
	}
	return parseDownNodes(out)
}

// parseDownNodes reads sinfo -N -o "%N|%t": nodes whose compact state is down, failing, failed or
// drained, or marked "*" (not responding).
func parseDownNodes(out string) []string {
	var down []string
	for line := range strings.SplitSeq(out, "\n") {
		node, state, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok || node == "" || slices.Contains(down, node) {
			continue
		}
		if strings.HasSuffix(state, "*") || strings.HasPrefix(state, "down") || strings.HasPrefix(state, "fail") ||
			strings.HasPrefix(state, "drain") {
			down = append(down, node)
		}
	}
	return down
}
