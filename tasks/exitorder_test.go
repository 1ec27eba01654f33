package tasks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rivalbench/rival/hw"
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

// train:all on a host without a GPU says so and names what train:cpu and
// demo would do, in the README's spelling, without downloading anything
// and without leaving a partial download behind.
func TestTrainAllWithoutAGPUSaysWhatToRunInstead(t *testing.T) {
	host, err := hw.Detect(context.Background())
	require.NoError(t, err)
	if host.Platform != hw.PlatformCPU {
		t.Skipf("this test needs a host without a GPU (found %d × %s); it runs on any CPU-only host", len(host.GPUs), host.GPUs[0].Name)
	}
	bin := rivalBinary(t)
	var asked atomic.Int32
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Error(w, "offline", http.StatusBadGateway)
	}))
	defer hub.Close()
	ws := newSuiteWS(t, t.TempDir())
	ws.env = append(ws.env, "HF_ENDPOINT="+hub.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, out := ws.target(ctx, bin, "train:all")
	err = cmd.Run()
	require.Error(t, err, "%s", out)
	assert.Equal(t, 1, cmd.ProcessState.ExitCode(), "%s", out)
	got := out.String()
	for _, want := range []string{
		"train:all: no GPU found",
		"go run mage.go train:cpu",
		"DATASET=bc", "from the Hugging Face Hub",
		"go run mage.go demo", "offline on the shipped sample corpus",
	} {
		assert.Contains(t, got, want)
	}
	errorThenTasks(t, got)
	assert.Zero(t, asked.Load(), "nothing is downloaded:\n%s", got)
	var parts []string
	filepath.WalkDir(ws.root, func(p string, de os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(de.Name(), ".part") {
			parts = append(parts, p)
		}
		return nil
	})
	assert.Empty(t, parts, "no partial download is left")
}
