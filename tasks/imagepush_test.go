package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/rivalbench/rival/container/dockertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/container/registrytest"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/images"
)

func slurmScriptOf(t *testing.T, w *Workspace, platform, fw, model string) (string, error) {
	t.Helper()
	setting(w, "GPUS_PER_NODE", "8")
	return captureStdout(t, func() error { return w.SlurmScriptTarget(context.Background(), platform, fw, model) })
}

// TestSlurmScriptPyxisImage: a pyxis script names an image every node can pull, by digest, or the
// target refuses and says how to deliver one.
func TestSlurmScriptPyxisImage(t *testing.T) {
	w, _ := newWorkspace(t, "")
	setting(w, "SLURM_IMAGE", "")
	_, err := slurmScriptOf(t, w, hw.PlatformNVIDIA, "mega", "llama")
	require.Error(t, err, "rival/nvd:latest exists only in the local daemon")
	assert.Contains(t, err.Error(), "go run mage.go image:push nvd REGISTRY/REPOSITORY")
	assert.Contains(t, err.Error(), "SLURM_IMAGE")

	setting(w, "SLURM_IMAGE", "registry.example.com/team/rival-nvd:latest")
	_, err = slurmScriptOf(t, w, hw.PlatformNVIDIA, "mega", "llama")
	require.ErrorContains(t, err, "is a tag")

	setting(w, "SLURM_IMAGE", pinnedRef)
	out, err := slurmScriptOf(t, w, hw.PlatformNVIDIA, "mega", "llama")
	require.NoError(t, err)
	enrootForm := "--container-image='registry.example.com:5000#team/rival-nvd:sha256:" + strings.Repeat("ab", 32) + "'"
	assert.Contains(t, out, enrootForm, "the digest as enroot's tag, which enroot 3 and 4 both parse")

	// enroot's own syntax in SLURM_IMAGE, either digest form, becomes the form every enroot parses.
	for _, v := range []string{
		"registry.example.com:5000#team/rival-nvd@sha256:" + strings.Repeat("ab", 32),
		"registry.example.com:5000#team/rival-nvd:sha256:" + strings.Repeat("ab", 32),
	} {
		setting(w, "SLURM_IMAGE", v)
		out, err = slurmScriptOf(t, w, hw.PlatformNVIDIA, "mega", "llama")
		require.NoError(t, err, v)
		assert.Contains(t, out, enrootForm, v)
	}
	setting(w, "SLURM_IMAGE", "registry.example.com:5000#team/rival-nvd:latest")
	_, err = slurmScriptOf(t, w, hw.PlatformNVIDIA, "mega", "llama")
	require.ErrorContains(t, err, "must name a digest")

	setting(w, "SLURM_IMAGE", "/shared/images/rival-nvd.sqsh")
	out, err = slurmScriptOf(t, w, hw.PlatformNVIDIA, "mega", "llama")
	require.NoError(t, err)
	assert.Contains(t, out, "--container-image=/shared/images/rival-nvd.sqsh")

	// AMD's docker mode keeps the local tag when nothing was pushed.
	setting(w, "SLURM_IMAGE", "")
	out, err = slurmScriptOf(t, w, hw.PlatformAMD, "mega", "llama")
	require.NoError(t, err)
	assert.Contains(t, out, "rival/amd:latest")
}

// TestImagePushThenSlurmScript pushes a platform image to a real registry started here, then checks
// that train:slurm-script names the pushed digest, that the executor records that digest as the image
// the nodes ran, and that a daemon without the image pulls it by that reference.
func TestImagePushThenSlurmScript(t *testing.T) {
	addr := registrytest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := container.Connect(ctx)
	if err != nil {
		t.Skipf("no Docker daemon: %v", err)
	}
	defer e.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())

	// A stand-in for the nvd image: FROM scratch with one file (the real one needs NVIDIA's base).
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello"), []byte(fmt.Sprintf("rival %d\n", time.Now().UnixNano())), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY hello /hello\n"), 0o644))
	tag := fmt.Sprintf("rival-test/nvd-push:%d", os.Getpid())
	id, err := e.Build(ctx, container.BuildSpec{ContextDir: dir, Tag: tag})
	require.NoError(t, err)
	t.Cleanup(func() {
		dockertest.Daemon(t).ImageRemove(context.Background(), id, client.ImageRemoveOptions{Force: true})
	})

	w, _ := newWorkspace(t, "")
	setting(w, "SLURM_IMAGE", "")
	rec := images.Record{Platform: hw.PlatformNVIDIA, Tag: tag, ImageID: id}
	pushed, err := w.images().Push(ctx, e, rec, addr+"/team/rival-nvd:bench")
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(w.path("OUTPUT_DIR"), "images", "nvd-pushed.json"))

	out, err := slurmScriptOf(t, w, hw.PlatformNVIDIA, "mega", "llama")
	require.NoError(t, err)
	assert.Contains(t, out, "--container-image='"+addr+"#team/rival-nvd:"+pushed.Digest+"'")

	// What the result records as the image the nodes ran.
	image, ran, err := w.slurmImage(hw.PlatformNVIDIA, &rec)
	require.NoError(t, err)
	assert.Equal(t, addr+"#team/rival-nvd:"+pushed.Digest, image)
	assert.Equal(t, addr+"/team/rival-nvd@"+pushed.Digest, ran)
	ex, err := w.newSlurmExecutor(w.config, hw.PlatformNVIDIA, hw.Host{Platform: hw.PlatformNVIDIA, GPUs: []hw.GPU{{}, {}, {}, {}, {}, {}, {}, {}}}, image, ran)
	require.NoError(t, err)
	assert.Equal(t, ran, ex.ImageDigest())

	// The pushed reference pulls into a daemon that has lost the image's names.
	_, err = dockertest.Daemon(t).ImageRemove(ctx, addr+"/team/rival-nvd:bench", client.ImageRemoveOptions{})
	require.NoError(t, err)
	pull := exec.CommandContext(ctx, "docker", "pull", ran)
	outPull, err := pull.CombinedOutput()
	require.NoError(t, err, string(outPull))
	got, err := e.ImageID(ctx, ran)
	require.NoError(t, err)
	assert.Equal(t, id, got)
	t.Cleanup(func() {
		dockertest.Daemon(t).ImageRemove(context.Background(), ran, client.ImageRemoveOptions{Force: true})
	})

	// A rebuilt image is not the pushed one: Slurm runs refuse until it is pushed again.
	_, _, err = w.slurmImage(hw.PlatformNVIDIA, &images.Record{Platform: hw.PlatformNVIDIA, ImageID: "sha256:" + strings.Repeat("1", 64)})
	require.ErrorContains(t, err, "push it again with `go run mage.go image:push nvd "+addr+"/team/rival-nvd`")
}

// TestImagePushTargetCPU goes through image:push's entry point for the cpu platform: it builds the
// cpu image from the repository's cpu.Dockerfile (on a small local base) and pushes it to a registry
// started here; the record names the built image and a digest that a daemon without the image's
// names pulls it by.
func TestImagePushTargetCPU(t *testing.T) {
	addr := registrytest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := container.Connect(ctx)
	if err != nil {
		t.Skipf("no Docker daemon: %v", err)
	}
	defer e.Close()
	t.Setenv("DOCKER_CONFIG", t.TempDir())

	// The base: FROM scratch with one file, unique per run, so that nothing cached stands in.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "hello"), []byte(fmt.Sprintf("rival %d\n", time.Now().UnixNano())), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY hello /hello\n"), 0o644))
	base := fmt.Sprintf("rival-test/cpu-push-base:%d", os.Getpid())
	baseID, err := e.Build(ctx, container.BuildSpec{ContextDir: dir, Tag: base})
	require.NoError(t, err)
	t.Cleanup(func() {
		dockertest.Daemon(t).ImageRemove(context.Background(), baseID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
	t.Setenv("IMAGE_BASE", base)

	w, log := newWorkspace(t, "")
	useRepoDockerfiles(t, w)
	repo := addr + "/team/rival-cpu"
	require.NoError(t, w.ImagePushTarget(ctx, hw.PlatformCPU, repo+":bench"))
	data, err := os.ReadFile(filepath.Join(w.path("OUTPUT_DIR"), "images", "cpu-pushed.json"))
	require.NoError(t, err)
	var rec struct { // the fields of the push record
		Platform   string `json:"platform"`
		Repository string `json:"repository"`
		Digest     string `json:"digest"`
		LocalID    string `json:"local_id"`
	}
	require.NoError(t, json.Unmarshal(data, &rec))
	assert.Equal(t, hw.PlatformCPU, rec.Platform)
	assert.Equal(t, repo, rec.Repository)
	require.True(t, strings.HasPrefix(rec.Digest, "sha256:"), rec.Digest)
	built, err := e.ImageID(ctx, executor.ImageTag(hw.PlatformCPU))
	require.NoError(t, err)
	assert.Equal(t, built, rec.LocalID, "the record names the cpu image image:push built")
	assert.Contains(t, log.String(), "image cpu: pushed "+repo+"@"+rec.Digest)
	t.Cleanup(func() {
		dockertest.Daemon(t).ImageRemove(context.Background(), repo+":bench", client.ImageRemoveOptions{Force: true})
	})

	// The registry serves the manifest under that digest: a daemon without the image's names pulls it.
	_, err = dockertest.Daemon(t).ImageRemove(ctx, repo+":bench", client.ImageRemoveOptions{})
	require.NoError(t, err)
	out, err := exec.CommandContext(ctx, "docker", "pull", repo+"@"+rec.Digest).CombinedOutput()
	require.NoError(t, err, string(out))
	got, err := e.ImageID(ctx, repo+"@"+rec.Digest)
	require.NoError(t, err)
	assert.Equal(t, built, got)

	// Unknown platforms are refused by name.
	require.ErrorContains(t, w.ImagePushTarget(ctx, "tpu", repo), `unknown platform "tpu"`)
}
