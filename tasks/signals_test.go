package tasks

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets a test start this binary again as a Rival process: with
// RIVAL_TEST_CHILD=trainer it runs a target whose host trainer traps
// SIGTERM to write a checkpoint, as Megatron's --exit-signal-handler does,
// behind the same SIGINT handler mage's generated main installs (cancel,
// then exit 5 s later; 1 s here).
func TestMain(m *testing.M) {
	switch os.Getenv("RIVAL_TEST_CHILD") {
	case "trainer":
		os.Exit(trainerChild())
	case "blocked":
		os.Exit(blockedChild())
	}
	code := m.Run()
	if rivalBin.path != "" && os.Getenv("RIVAL_TEST_BIN") == "" {
		os.RemoveAll(filepath.Dir(rivalBin.path)) // the compiled targets
	}
	os.Exit(code)
}

func mageLikeHandler(cancel func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT)
	go func() {
		<-ch
		cancel()
		time.Sleep(time.Second)
		fmt.Fprintln(os.Stderr, "cleanup timeout exceeded")
		os.Exit(1)
	}()
}

func trainerChild() int {
	dir := os.Getenv("RIVAL_TEST_DIR")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, func(ctx context.Context, w *Workspace) error {
			script := fmt.Sprintf(`trap 'sleep 3; echo saved > %s/checkpoint; exit 0' TERM; echo $$ > %s/pgid; echo started; sleep 100 & wait`, dir, dir)
			_, err := executor.Host{}.Run(ctx, core.Launch{Command: []string{"/bin/sh", "-c", script}, WorkDir: dir}, nil, func(line string) {
				if line == "started" {
					os.WriteFile(filepath.Join(dir, "ready"), nil, 0o644)
				}
			})
			return err
		})
	}()
	if d, err := time.ParseDuration(os.Getenv("RIVAL_TEST_HANDLER_DELAY")); err == nil {
		time.Sleep(d) // a loaded machine: the handler registers late
	}
	mageLikeHandler(cancel)
	if err := <-done; err != nil {
		return 1
	}
	return 0
}

// blockedChild runs a target that ignores its context (a read that never
// ends), as a target stuck outside its context does.
func blockedChild() int {
	ctx := context.Background()
	return exitOf(Main(ctx, func(ctx context.Context, w *Workspace) error {
		os.WriteFile(filepath.Join(os.Getenv("RIVAL_TEST_DIR"), "ready"), nil, 0o644)
		select {}
	}))
}

func exitOf(err error) int {
	if err != nil {
		return 1
	}
	return 0
}

func startChild(t *testing.T, kind string, env ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.env"), nil, 0o644))
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"RIVAL_TEST_CHILD=" + kind, "RIVAL_TEST_DIR=" + dir, "RIVAL_CACHE=" + filepath.Join(dir, "cache"), "RIVAL_CONFIG="}, env...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "ready"))
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the child started its work")
	time.Sleep(150 * time.Millisecond) // past the handler's retake
	return cmd, dir, &out
}

// waitExit waits for cmd, killing it after limit; it reports whether the
// process ended by itself.
func waitExit(cmd *exec.Cmd, limit time.Duration) bool {
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return false
	}
}

func groupAlive(t *testing.T, dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "pgid"))
	require.NoError(t, err)
	pgid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	// A killed process whose parent is gone stays a zombie until init reaps it; where the test
	// process is PID 1 (a container without an init) nobody does. Zombies run nothing.
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its closing paren.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) >= 3 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			return true
		}
	}
	return false
}

// Ctrl-C: Rival stays up until the trainer has checkpointed and exited;
// the shell's prompt never comes back with a trainer still running.
func TestCtrlCWaitsForTheTrainer(t *testing.T) {
	cmd, dir, out := startChild(t, "trainer")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.True(t, waitExit(cmd, 30*time.Second))
	assert.False(t, groupAlive(t, dir), "no trainer outlives Rival; output:\n%s", out)
	assert.FileExists(t, filepath.Join(dir, "checkpoint"), "the trainer had the time to checkpoint")
	assert.Contains(t, out.String(), "Ctrl-C: stopping")
}

// mage's handler can register long after the target started (a loaded
// machine): Rival still owns Ctrl-C, waits for the trainer, and a second
// Ctrl-C still stops at once.
func TestCtrlCWaitsForTheTrainerWhenMageRegistersLate(t *testing.T) {
	cmd, dir, out := startChild(t, "trainer", "RIVAL_TEST_HANDLER_DELAY=1500ms")
	time.Sleep(2 * time.Second) // past the late registration
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.True(t, waitExit(cmd, 30*time.Second))
	assert.False(t, groupAlive(t, dir), "no trainer outlives Rival; output:\n%s", out)
	assert.FileExists(t, filepath.Join(dir, "checkpoint"), "the trainer had the time to checkpoint; output:\n%s", out)
	assert.NotContains(t, out.String(), "cleanup timeout exceeded")

	cmd, dir, out = startChild(t, "trainer", "RIVAL_TEST_HANDLER_DELAY=1500ms")
	time.Sleep(2 * time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.True(t, waitExit(cmd, 10*time.Second))
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, 130, cmd.ProcessState.ExitCode(), "output:\n%s", out)
}

// A second Ctrl-C stops at once and takes the trainer with it.
func TestSecondCtrlCKillsAtOnce(t *testing.T) {
	cmd, dir, out := startChild(t, "trainer")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.True(t, waitExit(cmd, 10*time.Second))
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Eventually(t, func() bool { return !groupAlive(t, dir) }, 2*time.Second, 20*time.Millisecond, "output:\n%s", out)
	assert.NoFileExists(t, filepath.Join(dir, "checkpoint"))
	assert.Equal(t, 130, cmd.ProcessState.ExitCode())
}

// SIGTERM (timeout, systemd, Slurm) is never swallowed: a target stuck
// outside its context is stopped after the grace period.
func TestSIGTERMStopsAStuckTarget(t *testing.T) {
	cmd, _, out := startChild(t, "blocked", "RIVAL_STOP_GRACE=1s")
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.True(t, waitExit(cmd, 10*time.Second), "the stuck target outlived SIGTERM; output:\n%s", out)
	assert.Less(t, time.Since(start), 5*time.Second, "output:\n%s", out)
	assert.Equal(t, 143, cmd.ProcessState.ExitCode())
	assert.Contains(t, out.String(), "SIGTERM: stopping")
}

// The host trainer gets an allow-listed environment: no credentials.
func TestHostTrainerEnvironmentIsAllowListed(t *testing.T) {
	t.Setenv("HF_TOKEN", "hf_secretvalue")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	t.Setenv("MY_UNRELATED_VAR", "x")
	t.Setenv("NCCL_DEBUG", "INFO")
	var lines []string
	_, err := executor.Host{}.Run(context.Background(), core.Launch{Command: []string{"/usr/bin/env"}, Env: map[string]string{"RIVAL_RUN": "1"}}, nil,
		func(l string) { lines = append(lines, l) })
	require.NoError(t, err)
	all := strings.Join(lines, "\n")
	assert.NotContains(t, all, "hf_secretvalue")
	assert.NotContains(t, all, "aws-secret")
	assert.NotContains(t, all, "MY_UNRELATED_VAR")
	assert.Contains(t, all, "NCCL_DEBUG=INFO")
	assert.Contains(t, all, "PATH=")
	assert.Contains(t, all, "RIVAL_RUN=1", "the launch's own variables are passed")
}
