package container

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/rivalbench/rival/container/dockerapi"
)

// Platform selects the devices and limits a container gets.
type Platform string

const (
	// PlatformAMD maps /dev/kfd and /dev/dri (ROCm).
	PlatformAMD Platform = "amd"
	// PlatformNVD requests every NVIDIA GPU through the NVIDIA runtime.
	PlatformNVD Platform = "nvd"
	// PlatformCPU adds no device.
	PlatformCPU Platform = "cpu"
)

// Labels every Rival container carries, so strays can be found and removed.
const (
	LabelManaged  = "rival.managed" // "true" on every container Rival starts
	LabelRun      = "rival.run"     // the run ID
	LabelPlatform = "rival.platform"
)

// Defaults for RunSpec fields left zero.
const (
	DefaultGPUShmSize = 16 << 30 // AMD and NVIDIA (ROCm/NGC docs use 16 GiB and up)
	DefaultStopGrace  = 10 * time.Second
	// nvidiaStack is the stack ulimit NVIDIA's NGC containers ask for.
	nvidiaStack = 67108864
)

// Mount binds a host path into the container.
type Mount struct {
	Source   string // host path (made absolute)
	Target   string // absolute path in the container
	ReadOnly bool
}

// RunSpec describes one container run.
type RunSpec struct {
	Image    string
	Name     string   // container name (default "rival-<RunID>")
	RunID    string   // value of the rival.run label (default: random)
	Cmd      []string // nil: the image's CMD
	Env      []string // KEY=VALUE
	WorkDir  string
	Mounts   []Mount // dataset read-only, output read-write, entry scripts
	Platform Platform
	// ShmSize is /dev/shm in bytes (0: DefaultGPUShmSize for amd/nvd, the
	// daemon's 64 MiB for cpu). With IPC host the host's /dev/shm is used.
	ShmSize int64
	Network string // "" (daemon default), "none", "host", or a network name
	Labels  map[string]string
	// Timeout stops the container after this long (0: no limit).
	Timeout time.Duration
	// StopGrace is how long a stopped container gets between SIGTERM and
	// SIGKILL (0: DefaultStopGrace).
	StopGrace time.Duration
	// Interactive asks for a TTY and stdin (Shell sets it; DockerRunCommand
	// prints -it).
	Interactive bool
}

// ErrTimeout marks a run stopped because it exceeded RunSpec.Timeout.
var ErrTimeout = errors.New("container run timed out")

// ExitError is a container that ran to completion with a non-zero code.
type ExitError struct {
	Name  string
	Image string
	Code  int
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("container %s (%s) exited with code %d", e.Name, e.Image, e.Code)
}

func (s *RunSpec) normalize() error {
	if s.Image == "" {
		return errors.New("run: no image given")
	}
	switch s.Platform {
	case "":
		s.Platform = PlatformCPU
	case PlatformAMD, PlatformNVD, PlatformCPU:
	default:
		return fmt.Errorf("run: unknown platform %q (want amd, nvd or cpu)", s.Platform)
	}
	if s.RunID == "" {
		b := make([]byte, 6)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("run: make an ID: %w", err)
		}
		s.RunID = hex.EncodeToString(b)
	}
	if s.Name == "" {
		s.Name = "rival-" + s.RunID
	}
	if s.StopGrace <= 0 {
		s.StopGrace = DefaultStopGrace
	}
	if s.ShmSize == 0 && s.Platform != PlatformCPU {
		s.ShmSize = DefaultGPUShmSize
	}
	mounts := make([]Mount, len(s.Mounts))
	for i, m := range s.Mounts {
		if m.Source == "" || m.Target == "" {
			return fmt.Errorf("run: mount %d needs both a source and a target (got %q -> %q)", i, m.Source, m.Target)
		}
		if !path.IsAbs(m.Target) {
			return fmt.Errorf("run: mount target %q must be an absolute container path", m.Target)
		}
		src, err := filepath.Abs(m.Source)
		if err != nil {
			return fmt.Errorf("run: mount source %s: %w", m.Source, err)
		}
		mounts[i] = Mount{Source: src, Target: m.Target, ReadOnly: m.ReadOnly}
	}
	s.Mounts = mounts
	return nil
}

func (s *RunSpec) labels() map[string]string {
	l := make(map[string]string, len(s.Labels)+3)
	for k, v := range s.Labels {
		l[k] = v
	}
	l[LabelManaged] = "true"
	l[LabelRun] = s.RunID
	l[LabelPlatform] = string(s.Platform)
	return l
}

// configs turns a normalized spec into the Engine API's create request.
func (s *RunSpec) configs() (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image:        s.Image,
		Cmd:          s.Cmd,
		Env:          s.Env,
		WorkingDir:   s.WorkDir,
		Labels:       s.labels(),
		AttachStdout: true,
		AttachStderr: true,
	}
	if s.Interactive {
		cfg.AttachStdin = true
		cfg.OpenStdin = true
		cfg.StdinOnce = true
	}
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(s.Network),
		ShmSize:     s.ShmSize,
	}
	for _, m := range s.Mounts {
		hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly})
	}
	switch s.Platform {
	case PlatformAMD:
		hc.Devices = []container.DeviceMapping{
			{PathOnHost: "/dev/kfd", PathInContainer: "/dev/kfd", CgroupPermissions: "rwm"},
			{PathOnHost: "/dev/dri", PathInContainer: "/dev/dri", CgroupPermissions: "rwm"},
		}
		hc.GroupAdd = []string{"video"}
		hc.CapAdd = []string{"SYS_PTRACE"}
		hc.SecurityOpt = []string{"seccomp=unconfined"}
		hc.IpcMode = container.IPCModeHost
	case PlatformNVD:
		hc.DeviceRequests = []container.DeviceRequest{{Driver: "nvidia", Count: -1, Capabilities: [][]string{{"gpu"}}}}
		hc.Ulimits = []*container.Ulimit{
			{Name: "memlock", Soft: -1, Hard: -1},
			{Name: "stack", Soft: nvidiaStack, Hard: nvidiaStack},
		}
		hc.IpcMode = container.IPCModeHost
	}
	return cfg, hc
}

// cleanupTimeout bounds stop+remove after the caller's context is gone.
const cleanupTimeout = 60 * time.Second

// Run creates and starts a container for spec, streams its stdout and
// stderr line by line to onLine (from one goroutine, in arrival order per
// stream; nil discards) and returns its exit code. The container is removed
// on every path. A non-zero exit returns the code and an *ExitError; a
// Timeout returns -1 and an error wrapping ErrTimeout; cancelling ctx
// (Ctrl-C) stops the container and returns -1 and ctx's error.
func (e *Engine) Run(ctx context.Context, spec RunSpec, onLine func(line string)) (int, error) {
	if err := spec.normalize(); err != nil {
		return -1, err
	}
	spec.Interactive = false
	if onLine == nil {
		onLine = func(string) {}
	}
	cfg, hc := spec.configs()
	id, err := e.create(ctx, &spec, cfg, hc)
	if err != nil {
		return -1, err
	}
	defer e.remove(id, spec.Name)

	// Streams and waits live until the container is gone, not until ctx is:
	// after a cancel we still collect the exit and the last lines.
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()

	att, err := e.api.ContainerAttach(runCtx, id, false)
	if err != nil {
		return -1, fmt.Errorf("run %s: attach: %w", spec.Name, err)
	}
	out := newLineSplitter(onLine)
	errOut := newLineSplitter(onLine)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		stdcopy.StdCopy(out, errOut, att.Reader)
		out.flush()
		errOut.flush()
	}()
	// onLine is never called once Run has returned.
	defer func() {
		att.Close()
		<-copied
	}()

	return e.startAndWait(ctx, &spec, id, runCtx, copied, func() { att.Close() })
}

// create makes the container with a context that survives the caller's, so
// a Ctrl-C during the request cannot leave an unseen container behind.
func (e *Engine) create(ctx context.Context, spec *RunSpec, cfg *container.Config, hc *container.HostConfig) (string, error) {
	cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	id, err := e.api.ContainerCreate(cctx, spec.Name, cfg, hc)
	if dockerapi.IsConflict(err) && e.removeStrayNamed(cctx, spec.Name) {
		id, err = e.api.ContainerCreate(cctx, spec.Name, cfg, hc)
	}
	if err != nil {
		return "", fmt.Errorf("run %s: create container from %s: %w%s", spec.Name, spec.Image, err, platformHint(spec.Platform, err))
	}
	if err := ctx.Err(); err != nil {
		e.remove(id, spec.Name)
		return "", fmt.Errorf("run %s: %w", spec.Name, err)
	}
	return id, nil
}

// removeStrayNamed removes a container of that name left by an earlier
// Rival process (it carries rival.managed=true), so a re-run of the same
// run ID can take the name; another program's container is left alone.
func (e *Engine) removeStrayNamed(ctx context.Context, name string) bool {
	res, err := e.api.ContainerInspect(ctx, name)
	if err != nil || res.Config == nil || res.Config.Labels[LabelManaged] != "true" {
		return false
	}
	return e.remove(res.ID, name) == nil
}

// startAndWait starts container id and waits for it to exit, to time out or
// for ctx to end; drained is closed once its output has been read and
// closeStream cuts the output stream if it does not end by itself.
func (e *Engine) startAndWait(ctx context.Context, spec *RunSpec, id string, runCtx context.Context, drained <-chan struct{}, closeStream func()) (int, error) {
	waitResult, waitErr := e.api.ContainerWait(runCtx, id)

	sctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	err := e.api.ContainerStart(sctx, id)
	cancel()
	if err != nil {
		return -1, fmt.Errorf("run %s: start: %w%s", spec.Name, err, platformHint(spec.Platform, err))
	}

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var stopCause error
	select {
	case res := <-waitResult:
		e.drain(drained, closeStream)
		return exitResult(spec, res)
	case err := <-waitErr:
		return -1, fmt.Errorf("run %s: wait: %w", spec.Name, err)
	case <-ctx.Done():
		stopCause = fmt.Errorf("run %s: stopped: %w", spec.Name, ctx.Err())
	case <-timeout:
		stopCause = fmt.Errorf("run %s: %w after %s", spec.Name, ErrTimeout, spec.Timeout)
	}
	e.stop(id, spec.StopGrace)
	select {
	case <-waitResult:
	case <-waitErr:
	case <-time.After(spec.StopGrace + cleanupTimeout):
	}
	e.drain(drained, closeStream)
	return -1, stopCause
}

func exitResult(spec *RunSpec, res container.WaitResponse) (int, error) {
	if res.Error != nil && res.Error.Message != "" {
		return int(res.StatusCode), fmt.Errorf("run %s: %s", spec.Name, res.Error.Message)
	}
	code := int(res.StatusCode)
	if code != 0 {
		return code, &ExitError{Name: spec.Name, Image: spec.Image, Code: code}
	}
	return 0, nil
}

// drainTimeout is how long output may trail the exit before it is cut.
const drainTimeout = 10 * time.Second

func (e *Engine) drain(drained <-chan struct{}, closeStream func()) {
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		closeStream()
		<-drained
	}
}

// stop sends SIGTERM, then SIGKILL after grace, with a fresh context: the
// caller's may be the very thing that was cancelled.
func (e *Engine) stop(id string, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace+cleanupTimeout)
	defer cancel()
	secs := int((grace + time.Second - 1) / time.Second)
	e.api.ContainerStop(ctx, id, secs)
}

// remove force-removes the container (killing it if it still runs).
func (e *Engine) remove(id, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	err := e.api.ContainerRemove(ctx, id)
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("remove container %s: %w (remove it with `docker rm -f %s`)", name, err, name)
	}
	return nil
}

// Containers lists the IDs of Rival's containers, running or not, with the
// given run ID ("" for all of them).
func (e *Engine) Containers(ctx context.Context, runID string) ([]string, error) {
	label := LabelManaged + "=true"
	if runID != "" {
		label = LabelRun + "=" + runID
	}
	res, err := e.api.ContainerList(ctx, label)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	ids := make([]string, 0, len(res))
	for _, c := range res {
		ids = append(ids, c.ID)
	}
	sort.Strings(ids)
	return ids, nil
}

// RemoveStrays force-removes Rival's containers with the given run ID (""
// for all), e.g. after a crash of the process that ran them, and returns
// how many it removed.
func (e *Engine) RemoveStrays(ctx context.Context, runID string) (int, error) {
	ids, err := e.Containers(ctx, runID)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, id := range ids {
		if err := e.remove(id, id); err != nil {
			errs = append(errs, err)
		}
	}
	return len(ids) - len(errs), errors.Join(errs...)
}

// isNotFound: the container is already gone, or being removed already.
func isNotFound(err error) bool {
	return dockerapi.IsNotFound(err) || dockerapi.IsConflict(err) && strings.Contains(err.Error(), "in progress")
}

// platformHint explains the usual reason a GPU container fails to start.
func platformHint(p Platform, err error) string {
	msg := err.Error()
	switch {
	case p == PlatformNVD && (strings.Contains(msg, "could not select device driver") || strings.Contains(msg, "nvidia")):
		return " (NVIDIA GPUs need the NVIDIA Container Toolkit: install nvidia-container-toolkit, run `nvidia-ctk runtime configure --runtime=docker`, restart dockerd, and check `nvidia-smi` works on the host)"
	case p == PlatformAMD && (strings.Contains(msg, "/dev/kfd") || strings.Contains(msg, "/dev/dri")):
		return " (AMD GPUs need the amdgpu kernel driver: /dev/kfd and /dev/dri must exist on the host; check `amd-smi` or `rocm-smi` there)"
	}
	return ""
}

// lineSplitter turns a byte stream into lines for onLine. A line longer
// than maxLine is passed on in pieces rather than held without bound.
type lineSplitter struct {
	buf  []byte
	emit func(string)
}

const maxLine = 1 << 20

func newLineSplitter(emit func(string)) *lineSplitter { return &lineSplitter{emit: emit} }

func (l *lineSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			l.cut()
			break
		}
		l.buf = append(l.buf, p[:i]...)
		l.cut()
		l.emit(strings.TrimSuffix(string(l.buf), "\r"))
		l.buf = l.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// cut passes on maxLine-byte pieces of a line that grew past maxLine; the
// pieces do not depend on how the bytes were chunked.
func (l *lineSplitter) cut() {
	for len(l.buf) > maxLine {
		l.emit(string(l.buf[:maxLine]))
		l.buf = append(l.buf[:0], l.buf[maxLine:]...)
	}
}

func (l *lineSplitter) flush() {
	if len(l.buf) > 0 {
		l.emit(strings.TrimSuffix(string(l.buf), "\r"))
		l.buf = l.buf[:0]
	}
}

// DockerRunCommand is the `docker run` command line equivalent to spec (as
// argv), for users who want to run or debug by hand. Environment variables
// whose names look secret (TOKEN, SECRET, PASSWORD, KEY) are printed as
// `-e NAME` without a value, so docker takes them from the caller's
// environment and the value never lands in a terminal or log.
func DockerRunCommand(spec RunSpec) []string {
	s := spec
	_ = s.normalize() // best effort: a bad spec still prints what it has
	args := []string{"docker", "run", "--rm"}
	if s.Interactive {
		args = append(args, "-it")
	}
	if spec.Name != "" {
		args = append(args, "--name", s.Name)
	}
	labels := s.labels()
	delete(labels, LabelRun) // a hand-run container is not this run
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--label", k+"="+labels[k])
	}
	if s.Network != "" {
		args = append(args, "--network", s.Network)
	}
	cfg, hc := s.configs()
	for _, d := range hc.Devices {
		args = append(args, "--device", d.PathOnHost)
	}
	for _, g := range hc.GroupAdd {
		args = append(args, "--group-add", g)
	}
	for _, c := range hc.CapAdd {
		args = append(args, "--cap-add", c)
	}
	for _, o := range hc.SecurityOpt {
		args = append(args, "--security-opt", o)
	}
	if len(hc.DeviceRequests) > 0 {
		args = append(args, "--gpus", "all")
	}
	for _, u := range hc.Ulimits {
		args = append(args, "--ulimit", fmt.Sprintf("%s=%d:%d", u.Name, u.Soft, u.Hard))
	}
	if hc.IpcMode != "" {
		args = append(args, "--ipc", string(hc.IpcMode))
	}
	if hc.ShmSize > 0 {
		args = append(args, "--shm-size", shmFlag(hc.ShmSize))
	}
	for _, m := range s.Mounts {
		opt := "type=bind,source=" + m.Source + ",target=" + m.Target
		if m.ReadOnly {
			opt += ",readonly"
		}
		args = append(args, "--mount", opt)
	}
	for _, kv := range cfg.Env {
		name, _, _ := strings.Cut(kv, "=")
		if looksSecret(name) {
			args = append(args, "-e", name)
		} else {
			args = append(args, "-e", kv)
		}
	}
	if cfg.WorkingDir != "" {
		args = append(args, "-w", cfg.WorkingDir)
	}
	args = append(args, s.Image)
	return append(args, s.Cmd...)
}

// shmFlag writes n bytes the way --shm-size reads it (binary units).
func shmFlag(n int64) string {
	switch {
	case n%(1<<30) == 0:
		return fmt.Sprintf("%dg", n>>30)
	case n%(1<<20) == 0:
		return fmt.Sprintf("%dm", n>>20)
	}
	return fmt.Sprint(n)
}

func looksSecret(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return false
}

// QuoteCommand joins argv into one line a POSIX shell reads back as argv.
func QuoteCommand(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./,:=@%+", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var _ io.Writer = (*lineSplitter)(nil)
