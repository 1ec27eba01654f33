package tasks

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/hw"
)

// PLATFORM=cpu opens the cpu image. Without IMAGE_BASE there is no image to
// build it on: shell says so and what to run, not to pick a GPU platform.
func TestShellOnTheCPUSaysWhatTheImageNeeds(t *testing.T) {
	t.Setenv("PLATFORM", "cpu")
	t.Setenv("IMAGE_BASE", "")
	w, _ := newWorkspace(t, "")
	err := w.ShellTarget(context.Background())
	require.Error(t, err)
	msg := err.Error()
	assert.NotContains(t, msg, "set PLATFORM=amd or nvd")
	assert.NotContains(t, msg, "no GPU", "PLATFORM=cpu asked for the cpu image")
	for _, want := range []string{"IMAGE_BASE", "cpu.Dockerfile has no default", "container/testdata/make-torch-base.sh",
		"PLATFORM=cpu IMAGE_BASE=rival-test/torch-base:bookworm go run mage.go shell", "go run mage.go train:cpu"} {
		assert.Contains(t, msg, want)
	}

	// With IMAGE_BASE the shell goes on to the engine, as for amd and nvd
	// (here one that is not there).
	t.Setenv("IMAGE_BASE", "rival-test/torch-base:bookworm")
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-daemon.sock"))
	w, _ = newWorkspace(t, "")
	err = w.ShellTarget(context.Background())
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "IMAGE_BASE to an image")
	assert.Contains(t, err.Error(), "no-daemon.sock")
}

// Without PLATFORM on a host without a GPU the shell would open the cpu
// image: the answer says why, and offers the GPU platforms' images too.
func TestShellWithoutAGPUExplainsTheCPUImage(t *testing.T) {
	t.Setenv("PLATFORM", "")
	t.Setenv("IMAGE_BASE", "")
	w, _ := newWorkspace(t, "")
	if h, err := w.detectHost(context.Background()); err != nil || h.Platform != hw.PlatformCPU {
		t.Skip("this host has a GPU: shell opens its platform's image")
	}
	err := w.ShellTarget(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this host has no GPU")
	assert.Contains(t, err.Error(), "so the shell opens the cpu image")
	assert.Contains(t, err.Error(), "IMAGE_BASE")
	assert.Contains(t, err.Error(), "PLATFORM=amd or nvd for a GPU platform's image")
}
