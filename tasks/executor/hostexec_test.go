package executor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks/core"
)

func TestHostExecutorKillsTheProcessGroupOnCancel(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// A parent shell that starts a long-running child: both must die.
	script := fmt.Sprintf("sleep 60 & echo $! > %s; echo started; wait", pidFile)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 1)
	go func() {
		<-started
		cancel()
	}()
	info, err := Host{}.Run(ctx, core.Launch{Command: []string{"/bin/sh", "-c", script}, WorkDir: dir}, nil, func(line string) {
		if line == "started" {
			started <- struct{}{}
		}
	})
	require.Error(t, err)
	assert.Equal(t, -1, info.ExitCode)
	pid, _ := os.ReadFile(pidFile)
	require.NotEmpty(t, pid)
	assert.Eventually(t, func() bool {
		return exec.Command("kill", "-0", strings.TrimSpace(string(pid))).Run() != nil
	}, 5*time.Second, 50*time.Millisecond, "the child process must not outlive the run")
}

func TestHostExecutorExitCodeAndLines(t *testing.T) {
	var lines []string
	info, err := Host{}.Run(context.Background(), core.Launch{Command: []string{"/bin/sh", "-c", "echo one; echo two >&2; exit 3"}}, nil,
		func(l string) { lines = append(lines, l) })
	require.NoError(t, err)
	assert.Equal(t, 3, info.ExitCode)
	assert.ElementsMatch(t, []string{"one", "two"}, lines)
}

// Ctrl-C when the trainer exits at once on SIGTERM but a process it
// started ignores SIGTERM (and does not hold the output pipe): after the
// grace period every member of the run's process group is killed, whoever
// led it, and the run returns.
func TestHostExecutorKillsSIGTERMIgnorersAfterTheLeaderExits(t *testing.T) {
	old := hostStopGrace
	hostStopGrace = 500 * time.Millisecond
	t.Cleanup(func() { hostStopGrace = old })
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The child writes its pid once it ignores SIGTERM; the leader says
	// "started" only then.
	script := fmt.Sprintf(`sh -c 'trap "" TERM; echo $$ > %[1]s.tmp; mv %[1]s.tmp %[1]s; exec sleep 300' >/dev/null 2>&1 </dev/null &
while [ ! -s %[1]s ]; do sleep 0.01; done
trap 'exit 0' TERM
echo started
while :; do sleep 0.05; done`, pidFile)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	_, err := Host{}.Run(ctx, core.Launch{Command: []string{"/bin/sh", "-c", script}, WorkDir: dir}, nil, func(line string) {
		if line == "started" {
			cancel()
		}
	})
	require.Error(t, err)
	pid, _ := os.ReadFile(pidFile)
	require.NotEmpty(t, pid)
	t.Cleanup(func() { exec.Command("kill", "-9", strings.TrimSpace(string(pid))).Run() })
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Eventually(t, func() bool {
		return exec.Command("kill", "-0", strings.TrimSpace(string(pid))).Run() != nil
	}, 5*time.Second, 50*time.Millisecond, "the process that ignored SIGTERM must not outlive the run")
}
