package hub_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hub"
	"github.com/rivalbench/rival/hub/hubtest"
)

// TestConcurrentProcesses runs two processes (this test binary re-executed) that download the same
// destination at once: the flock makes one fetch and the other reuse.
func TestConcurrentProcesses(t *testing.T) {
	data := content(300 << 10)
	srv := hubtest.New()
	defer srv.Close()
	srv.Add(hubtest.File{Dataset: true, Repo: "allenai/c4", Revision: commitA, Path: "en/x.json.gz", Content: data, LFS: true,
		Faults: hubtest.Faults{Delay: 300 * time.Millisecond}})
	dest := filepath.Join(t.TempDir(), "x.json.gz")

	var cmds []*exec.Cmd
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessDownload$")
		cmd.Env = append(os.Environ(), "HUB_HELPER_ENDPOINT="+srv.URL(), "HUB_HELPER_DEST="+dest)
		cmd.Stderr = os.Stderr
		cmds = append(cmds, cmd)
	}
	outs := make([][]byte, len(cmds))
	errs := make(chan error, len(cmds))
	for i, cmd := range cmds {
		go func() {
			var err error
			outs[i], err = cmd.Output()
			errs <- err
		}()
	}
	for range cmds {
		require.NoError(t, <-errs)
	}
	reused := 0
	for _, out := range outs {
		var d hub.Download
		require.NoError(t, json.Unmarshal(jsonLine(out), &d), "%s", out)
		assert.Equal(t, sha(data), d.SHA256)
		if d.Reused {
			reused++
		}
	}
	assert.Equal(t, 1, reused)
	assert.Len(t, bytesHits(srv), 1, "the bytes were fetched once")
	assert.NoFileExists(t, dest+".lock")
	assert.NoFileExists(t, dest+".part")
}

// jsonLine picks the child's result out of its stdout (the test framework prints PASS after it).
func jsonLine(b []byte) []byte {
	for _, line := range splitLines(b) {
		if len(line) > 0 && line[0] == '{' {
			return line
		}
	}
	return nil
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, b[start:i])
			start = i + 1
		}
	}
	return append(out, b[start:])
}

// TestHelperProcessDownload is the child of TestConcurrentProcesses; alone it does nothing.
func TestHelperProcessDownload(t *testing.T) {
	endpoint, dest := os.Getenv("HUB_HELPER_ENDPOINT"), os.Getenv("HUB_HELPER_DEST")
	if endpoint == "" {
		t.Skip("child process of TestConcurrentProcesses")
	}
	cl, err := hub.New(hub.Options{Endpoint: endpoint, Backoff: time.Millisecond})
	require.NoError(t, err)
	d, err := cl.Download(context.Background(), hub.Request{Type: hub.Dataset, Repo: "allenai/c4", Revision: commitA, File: "en/x.json.gz"}, dest)
	require.NoError(t, err)
	out, err := json.Marshal(d)
	require.NoError(t, err)
	os.Stdout.Write(append(out, '\n'))
}
