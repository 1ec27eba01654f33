package tasks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errorThenTasks checks that a failed target's output tells the error
// before the closing tasks line.
func errorThenTasks(t *testing.T, out string) {
	t.Helper()
	e := strings.Index(out, "Error: ")
	l := strings.LastIndex(out, "tasks: ")
	require.GreaterOrEqual(t, e, 0, "the error is told:\n%s", out)
	require.GreaterOrEqual(t, l, 0, "the tasks line is printed:\n%s", out)
	assert.Less(t, e, l, "Error: comes before the tasks line:\n%s", out)
	assert.Equal(t, 1, strings.Count(out, "Error: "), "the error is told once:\n%s", out)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(out), "; failed"), "the tasks line ends the output:\n%s", out)
}

// A failed target, as the user runs it: the error first, then the tasks
// line, exit status 1.
func TestFailedTargetSaysErrorBeforeTheTasksLine(t *testing.T) {
	bin := rivalBinary(t)
	for _, args := range [][]string{
		{"compare:dir", "/nonexistent/rival-results"}, // a workspace target
		{"extract", "/nonexistent/train.log"},         // a bare target
	} {
		t.Run(args[0], func(t *testing.T) {
			ws := newSuiteWS(t, t.TempDir())
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd, out := ws.target(ctx, bin, args...)
			err := cmd.Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			assert.Equal(t, 1, ee.ExitCode(), "%s", out)
			errorThenTasks(t, out.String())
		})
	}
}

// Ctrl-C during a long target (a download from a hub that never answers)
// stops it and exits 130, the shell's status for SIGINT, with the error and
// the tasks line in that order.
func TestCtrlCExits130(t *testing.T) {
	bin := rivalBinary(t)
	asked := make(chan struct{}, 16)
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked <- struct{}{}
		<-r.Context().Done() // never answers
	}))
	defer hub.Close()
	ws := newSuiteWS(t, t.TempDir())
	ws.env = append(ws.env, "HF_ENDPOINT="+hub.URL, "HF_HUB_OFFLINE=")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, out := ws.target(ctx, bin, "fetch")
	require.NoError(t, cmd.Start())
	select {
	case <-asked:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("fetch never asked the hub:\n%s", out)
	}
	time.Sleep(1500 * time.Millisecond) // past the handler's first retakes of SIGINT
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.True(t, waitExit(cmd, time.Minute), "%s", out)
	assert.Equal(t, 130, cmd.ProcessState.ExitCode(), "%s", out)
	assert.Contains(t, out.String(), "Ctrl-C: stopping")
	assert.Contains(t, out.String(), "Error: stopped by Ctrl-C\n")
	errorThenTasks(t, out.String())
}
