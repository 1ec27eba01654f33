package tasks

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

	"github.com/rivalbench/rival/frameworks/spec"
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
	info, err := HostExecutor{}.Run(ctx, spec.Launch{Command: []string{"/bin/sh", "-c", script}, WorkDir: dir}, nil, func(line string) {
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
	info, err := HostExecutor{}.Run(context.Background(), spec.Launch{Command: []string{"/bin/sh", "-c", "echo one; echo two >&2; exit 3"}}, nil,
		func(l string) { lines = append(lines, l) })
	require.NoError(t, err)
	assert.Equal(t, 3, info.ExitCode)
	assert.ElementsMatch(t, []string{"one", "two"}, lines)
}
