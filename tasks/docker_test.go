package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/executor"
)

// torchBase is the local image with Debian's PyTorch that CI builds with
// container/testdata/make-torch-base.sh (no registry is reachable).
const torchBase = "rival-test/torch-base:bookworm"

// engineWithTorch connects to the daemon and checks the torch base exists,
// or skips saying what is missing.
func engineWithTorch(t *testing.T) *container.Engine {
	t.Helper()
	ctx := context.Background()
	e, err := container.Connect(ctx)
	if err != nil {
		t.Skipf("no Docker daemon, skipping containerized training: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.ImageID(ctx, torchBase); err != nil {
		t.Skipf("image %s is missing (build it with container/testdata/make-torch-base.sh): %v", torchBase, err)
	}
	return e
}

// ourContainers lists containers this test process started through Rival that still exist. Run
// IDs end in the starting process's PID; other packages' tests share the daemon and may have
// their own containers up meanwhile.
func ourContainers(t *testing.T) []string {
	out, err := exec.Command("docker", "ps", "-a", "--filter", "label="+container.LabelManaged+"=true",
		"--format", "{{.ID}} {{.Label \""+container.LabelRun+"\"}}").Output()
	if err != nil {
		return nil
	}
	var ours []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if id, run, ok := strings.Cut(line, " "); ok && strings.HasSuffix(run, fmt.Sprintf("-%d", os.Getpid())) {
			ours = append(ours, id)
		}
	}
	return ours
}

// useRepoDockerfiles copies the repository's Dockerfiles and
// .dockerignore into the test workspace, the build context.
func useRepoDockerfiles(t *testing.T, w *Workspace) {
	for _, f := range []string{"cpu.Dockerfile", "nvd.Dockerfile", "amd.Dockerfile", ".dockerignore"} {
		copyFile(t, "../"+f, w.root+"/"+f)
	}
}

func TestContainerizedTrainingEndToEnd(t *testing.T) {
	e := engineWithTorch(t)
	w, _ := newWorkspace(t, "")
	setting(w, "IMAGE_BASE", torchBase)
	useRepoDockerfiles(t, w)
	ctx := context.Background()
	rec, _, err := w.images().Ensure(ctx, e, hw.PlatformCPU)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(rec.ImageID, "sha256:"))
	assert.NotEmpty(t, rec.BaseDigest)

	ex := &executor.Docker{Engine: e, ImageID: rec.ImageID, Platform: hw.PlatformCPU}
	in := newTrainInputs(t, w, ex)
	in.Config, err = in.Config.with("test", map[string]string{"TRAIN_ITERS": "8", "WARMUP_STEPS": "1", "SL": "64", "MBS": "2"})
	require.NoError(t, err)
	task, err := w.trainTask(in)
	require.NoError(t, err)
	require.NoError(t, w.runner.Run(ctx, task))
	data, err := os.ReadFile(task.Outputs[0].Path)
	require.NoError(t, err)
	require.NoError(t, result.Validate(data))
	var r result.Result
	require.NoError(t, json.Unmarshal(data, &r))
	assert.Equal(t, rec.ImageID, *r.ImageDigest, "the result records the image it ran in")
	require.NotNil(t, r.Provenance.ContainerID)
	assert.Len(t, r.LossValues, 8)
	assert.Empty(t, ourContainers(t), "the container is removed after the run")

	// Unchanged inputs: the second train is a cache hit.
	r2 := &dag.Runner{Cache: w.cache, Root: w.root, Out: w.out}
	in2 := in
	in2.Encode, _, _ = demoDataset(t, w)
	task2, err := w.trainTask(in2)
	require.NoError(t, err)
	require.NoError(t, r2.Run(ctx, task2))
	ran, _ := r2.Counts()
	assert.Equal(t, 0, ran)
}

func TestContainerizedTrainingCancelledLeavesNothing(t *testing.T) {
	e := engineWithTorch(t)
	w, _ := newWorkspace(t, "")
	setting(w, "IMAGE_BASE", torchBase)
	useRepoDockerfiles(t, w)
	ctx := context.Background()
	rec, _, err := w.images().Ensure(ctx, e, hw.PlatformCPU)
	require.NoError(t, err)
	in := newTrainInputs(t, w, &executor.Docker{Engine: e, ImageID: rec.ImageID, Platform: hw.PlatformCPU})
	in.Config, err = in.Config.with("test", map[string]string{"TRAIN_ITERS": "100000", "SL": "64"})
	require.NoError(t, err)
	task, err := w.trainTask(in)
	require.NoError(t, err)
	// The encode dependency first, so the deadline only covers training.
	require.NoError(t, w.runner.Run(ctx, in.Encode))
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err = w.runner.Run(cctx, task)
	require.Error(t, err)
	assert.NoFileExists(t, task.Outputs[0].Path)
	assert.FileExists(t, failedLogOf(task.Outputs[1].Path))
	assert.Empty(t, ourContainers(t), "Ctrl-C must not leave a container running")
}

func TestDockerNotRunningSaysHowToStartIt(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	_, err := container.Connect(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/nonexistent/docker.sock")
	assert.Contains(t, err.Error(), "dockerd")
}

func TestGPUPlatformOnGPULessHostIsRefused(t *testing.T) {
	err := checkPlatform(hw.PlatformNVIDIA, hw.Host{Platform: hw.PlatformCPU})
	require.ErrorContains(t, err, "this host has no GPU")
	err = checkPlatform(hw.PlatformAMD, hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{Name: "NVIDIA H100 80GB HBM3"}}})
	require.ErrorContains(t, err, "run train:nvd here")
}
