package executor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/rivalbench/rival/frameworks/core"
)

// hostStopGrace is how long a stopped run's processes get between SIGTERM
// and SIGKILL: time for a trainer that traps SIGTERM to checkpoint.
var hostStopGrace = 10 * time.Second

// stopGroup stops the process group pgid: SIGTERM to every member, then,
// once grace has passed with any member still there, SIGKILL to all of
// them. It waits on the group, not on its leader: a member that ignores
// SIGTERM is killed even when the leader has already exited.
func stopGroup(pgid int, grace time.Duration) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !groupHasMembers(pgid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
}

// groupHasMembers reports whether any process is still in the group pgid.
func groupHasMembers(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// HostTorchVersion asks the launch's interpreter for its torch version
// without importing torch (importlib.metadata reads the installed files).
func HostTorchVersion(launch core.Launch) string {
	if len(launch.Command) == 0 {
		return ""
	}
	out, err := exec.Command(launch.Command[0], "-c", "import importlib.metadata as m; print(m.version('torch'))").Output()
	if err != nil {
		return "absent"
	}
	return strings.TrimSpace(string(out))
}

// Host runs launches as local processes (the cpu platform, and the
// fsdp framework on hosts without Docker).
type Host struct{}

// Kind implements Executor.
func (Host) Kind() Kind { return KindHost }

// Place implements Executor: on the host every path is itself.
func (Host) Place(dirs []PathMap) []PathMap {
	out := make([]PathMap, len(dirs))
	for i, d := range dirs {
		out[i] = PathMap{Host: d.Host, Inside: d.Host, ReadOnly: d.ReadOnly, Role: d.Role}
	}
	return out
}

// ImageDigest implements Executor.
func (Host) ImageDigest() string { return "" }

// Run implements Executor: the process gets its own process group, which
// is killed as a whole when ctx ends, so no trainer outlives Rival.
func (Host) Run(ctx context.Context, launch core.Launch, maps []PathMap, onLine func(string)) (Info, error) {
	if len(launch.Command) == 0 {
		return Info{}, errors.New("empty launch command")
	}
	cmd := exec.Command(launch.Command[0], launch.Command[1:]...)
	cmd.Dir = launch.WorkDir
	local, envErr := localEnv(launch)
	if envErr != nil {
		return Info{}, envErr
	}
	cmd.Env = append(hostEnv(os.Environ()), local...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return Info{}, fmt.Errorf("start %s: %w", launch.Command[0], err)
	}
	defer trackGroup(cmd.Process.Pid)()
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			onLine(sc.Text())
		}
		io.Copy(io.Discard, pr)
		close(done)
	}()
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait(); pw.Close() }()
	var err error
	select {
	case err = <-waitErr:
	case <-ctx.Done():
		stopGroup(cmd.Process.Pid, hostStopGrace)
		<-waitErr // the stop's own exit status says nothing more than ctx does
		<-done
		return Info{ExitCode: -1}, fmt.Errorf("stopped: %w", ctx.Err())
	}
	<-done
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return Info{ExitCode: exit.ExitCode()}, nil
	}
	if err != nil {
		return Info{}, err
	}
	return Info{}, nil
}
