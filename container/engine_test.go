package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/rivalbench/rival/container/dockertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests talk to a real Docker daemon (Debian's docker.io in CI, started
// with `dockerd --iptables=false --bridge=none`). No registry is reachable,
// so every image is built here: FROM scratch with the static probe binary
// from testdata/probe. Without a daemon they skip, saying why.

var (
	engineOnce sync.Once
	engine     *Engine
	engineErr  error

	probeOnce sync.Once
	probeErr  error
)

const probeImage = "rival-test/probe:latest"

func needEngine(t *testing.T) *Engine {
	t.Helper()
	engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		engine, engineErr = Connect(ctx)
	})
	if engineErr != nil {
		t.Skipf("no Docker daemon answers, skipping the engine tests: %v", engineErr)
	}
	return engine
}

// needProbe builds probeImage: FROM scratch plus /probe, a static Go binary.
func needProbe(t *testing.T) *Engine {
	t.Helper()
	e := needEngine(t)
	probeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rival-probe-")
		if err != nil {
			probeErr = err
			return
		}
		defer os.RemoveAll(dir)
		cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "probe"), "./testdata/probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			probeErr = fmt.Errorf("go build probe: %v\n%s", err, out)
			return
		}
		df := "FROM scratch\nCOPY probe /probe\nENTRYPOINT [\"/probe\"]\n"
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
			probeErr = err
			return
		}
		_, probeErr = e.Build(context.Background(), BuildSpec{ContextDir: dir, Tag: probeImage})
	})
	require.NoError(t, probeErr)
	return e
}

// assertGone checks that no container of the run is left, running or not.
func assertGone(t *testing.T, e *Engine, runID string) {
	t.Helper()
	ids, err := e.Containers(context.Background(), runID)
	require.NoError(t, err)
	assert.Empty(t, ids, "container of run %s left behind", runID)
}

func removeImage(t *testing.T, e *Engine, ref string) {
	t.Cleanup(func() {
		dockertest.Daemon(t).ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	})
}

func TestConnectNamesTheSocketWhenNoDaemon(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	_, err := Connect(context.Background())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrDaemonUnreachable)
	assert.ErrorContains(t, err, sock)
	assert.ErrorContains(t, err, "sudo systemctl start docker")
	assert.ErrorContains(t, err, "dockerd")
}

func TestConnectNegotiatesVersion(t *testing.T) {
	e := needEngine(t)
	assert.NotEmpty(t, e.Host)
	assert.Regexp(t, `^1\.\d+$`, e.APIVersion)
}

// probeShellImage is the probe image with the probe also installed as /bin/sh, which records each
// RUN step's command in /probe-sh.log: a base for Dockerfiles that run commands at build time.
const probeShellImage = "rival-test/probe-sh:latest"

func needProbeShell(t *testing.T) *Engine {
	t.Helper()
	e := needProbe(t)
	dir := t.TempDir()
	df := "FROM " + probeImage + "\nCOPY --from=" + probeImage + " /probe /bin/sh\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644))
	_, err := e.Build(context.Background(), BuildSpec{ContextDir: dir, Tag: probeShellImage})
	require.NoError(t, err)
	return e
}

// The repository's Dockerfiles build on any base given as IMAGE_BASE; here
// the FROM-scratch probe image with the probe as its /bin/sh, which records
// the build's RUN steps (nvd installs TorchTitan, amd what Primus runs would
// otherwise pip-install).
func TestBuildRepositoryDockerfilesWithImageBase(t *testing.T) {
	e := needProbeShell(t)
	ctx := context.Background()
	for _, platform := range []string{"amd", "nvd"} {
		t.Run(platform, func(t *testing.T) {
			base := probeShellImage
			tag := "rival-test/" + platform + ":test"
			removeImage(t, e, tag)
			digest, err := ContextDigest("..", ContextOptions{Dockerfile: platform + ".Dockerfile"})
			require.NoError(t, err)
			var progress bytes.Buffer
			id, err := e.Build(ctx, BuildSpec{
				ContextDir:    "..",
				Dockerfile:    platform + ".Dockerfile",
				Tag:           tag,
				BuildArgs:     map[string]string{"IMAGE_BASE": base},
				Labels:        map[string]string{"rival.context": digest},
				ContextDigest: digest,
				Progress:      &progress,
			})
			require.NoError(t, err, progress.String())
			assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, id)
			probeID, err := e.ImageID(ctx, base)
			require.NoError(t, err)
			assert.Contains(t, progress.String(), "FROM ${IMAGE_BASE}\n ---> "+strings.TrimPrefix(probeID, "sha256:")[:12],
				"IMAGE_BASE replaced the pinned base")

			got, err := e.ImageID(ctx, tag)
			require.NoError(t, err)
			assert.Equal(t, id, got)
			img, err := dockertest.Daemon(t).ImageInspect(ctx, tag)
			require.NoError(t, err)
			assert.Equal(t, digest, img.Config.Labels["rival.context"])
			assert.Equal(t, platform, img.Config.Labels["rival.platform"])
			assert.Equal(t, base, img.Config.Labels["rival.image-base"])

			var lines []string
			code, err := e.Run(ctx, RunSpec{Image: tag, Network: "none", Cmd: []string{"env", "RIVAL_PLATFORM"}},
				func(l string) { lines = append(lines, l) })
			require.NoError(t, err)
			assert.Zero(t, code)
			assert.Equal(t, []string{"RIVAL_PLATFORM=" + platform}, lines)

			lines = nil
			_, err = e.Run(ctx, RunSpec{Image: tag, Network: "none", Cmd: []string{"pwd"}}, func(l string) { lines = append(lines, l) })
			require.NoError(t, err)
			assert.Equal(t, []string{"/rival"}, lines)

			// The build ran its install step, with its checks, as one RUN step.
			lines = nil
			_, err = e.Run(ctx, RunSpec{Image: tag, Network: "none", Cmd: []string{"cat", "/probe-sh.log"}}, func(l string) { lines = append(lines, l) })
			require.NoError(t, err)
			require.Len(t, lines, 1)
			switch platform {
			case "nvd":
				// The release is the stack's TORCHTITAN_VERSION, a build argument the image task passes.
				assert.Contains(t, lines[0], `python -m pip install --no-cache-dir -c /tmp/rival-constraints.txt "torchtitan==${TORCHTITAN_VERSION}"`)
				assert.Contains(t, lines[0], `python -c "import torchtitan.train"`)
			case "amd":
				assert.Contains(t, lines[0], "pip install --no-cache-dir -r requirements.txt")
				assert.Contains(t, lines[0], "make -C third_party/Megatron-LM/megatron/core/datasets")
			}
		})
	}
}

func TestBuildFailures(t *testing.T) {
	e := needProbe(t)
	cases := map[string]struct {
		dockerfile string
		want       string
	}{
		"RUN on a scratch image": {"FROM " + probeImage + "\nRUN echo hi\n", `exec: "/bin/sh": stat /bin/sh: no such file or directory`},
		"unknown instruction":    {"FROM " + probeImage + "\nFROBNICATE now\n", "unknown instruction: FROBNICATE"},
		"COPY of a missing file": {"FROM " + probeImage + "\nCOPY absent.txt /\n", "absent.txt"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, map[string]string{"Dockerfile": tc.dockerfile})
			var progress bytes.Buffer
			id, err := e.Build(context.Background(), BuildSpec{ContextDir: dir, Progress: &progress})
			assert.Empty(t, id)
			var be *BuildError
			require.ErrorAs(t, err, &be, "got %v", err)
			assert.Equal(t, "Dockerfile", be.Dockerfile)
			assert.Contains(t, be.Message, tc.want)
		})
	}
}

func TestBuildRejectsABadContextBeforeSending(t *testing.T) {
	e := needEngine(t)
	_, err := e.Build(context.Background(), BuildSpec{ContextDir: t.TempDir()})
	assert.ErrorContains(t, err, "Dockerfile")
}

func TestBaseImageDigest(t *testing.T) {
	e := needProbe(t)
	ctx := context.Background()
	d, err := e.BaseImageDigest(ctx, probeImage)
	require.NoError(t, err)
	id, err := e.ImageID(ctx, probeImage)
	require.NoError(t, err)
	// A locally built image has no repository digest: its ID is the content key.
	assert.Equal(t, id, d)
	assert.True(t, strings.HasPrefix(d, "sha256:"))
	assert.NotContains(t, d, "latest", "never the tag")

	_, err = e.BaseImageDigest(ctx, "rival-test/absent:none")
	assert.ErrorIs(t, err, ErrImageNotFound)
	assert.ErrorContains(t, err, "image rival-test/absent:none not found locally; pull it")
	assert.ErrorContains(t, err, "set IMAGE_BASE")
}

func TestRunStreamsLinesInOrder(t *testing.T) {
	e := needProbe(t)
	spec := RunSpec{Image: probeImage, Network: "none", Cmd: []string{"lines", "2000"}, RunID: "lines-" + randomSuffix(t)}
	var out, errs []string
	code, err := e.Run(context.Background(), spec, func(l string) {
		if strings.HasPrefix(l, "err ") {
			errs = append(errs, l)
		} else {
			out = append(out, l)
		}
	})
	require.NoError(t, err)
	assert.Zero(t, code)
	require.Len(t, out, 2001)
	for i := 0; i < 2000; i++ {
		require.Equal(t, fmt.Sprintf("line %d", i+1), out[i])
	}
	assert.Equal(t, "no newline at the end", out[2000])
	require.Len(t, errs, 200, "stderr lines arrive too")
	for i := range errs {
		require.Equal(t, fmt.Sprintf("err %d", (i+1)*10), errs[i])
	}
	assertGone(t, e, spec.RunID)
}

func TestRunNonZeroExit(t *testing.T) {
	e := needProbe(t)
	spec := RunSpec{Image: probeImage, Network: "none", Cmd: []string{"exit", "3"}, RunID: "exit-" + randomSuffix(t)}
	var lines []string
	code, err := e.Run(context.Background(), spec, func(l string) { lines = append(lines, l) })
	assert.Equal(t, 3, code)
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.Code)
	assert.ErrorContains(t, err, "exited with code 3")
	assert.Equal(t, []string{"exiting with 3"}, lines, "the log before the failure is kept")
	assertGone(t, e, spec.RunID)
}

func TestRunTimeoutStopsAndRemoves(t *testing.T) {
	e := needProbe(t)
	spec := RunSpec{Image: probeImage, Network: "none", Cmd: []string{"sleep", "600"},
		Timeout: 2 * time.Second, StopGrace: time.Second, RunID: "timeout-" + randomSuffix(t)}
	var lines []string
	code, err := e.Run(context.Background(), spec, func(l string) { lines = append(lines, l) })
	assert.Equal(t, -1, code)
	assert.ErrorIs(t, err, ErrTimeout)
	assert.Equal(t, []string{"sleeping"}, lines)
	assertGone(t, e, spec.RunID)
}

// Ctrl-C: the context ends mid-run; the container is stopped and removed.
func TestRunCancelLeavesNoContainer(t *testing.T) {
	e := needProbe(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := RunSpec{Image: probeImage, Network: "none", Cmd: []string{"sleep", "600"},
		StopGrace: time.Second, RunID: "cancel-" + randomSuffix(t)}
	code, err := e.Run(ctx, spec, func(l string) {
		if l == "sleeping" {
			// Running for sure: the container printed. Check, then cancel.
			ids, err := e.Containers(context.Background(), spec.RunID)
			assert.NoError(t, err)
			assert.Len(t, ids, 1)
			cancel()
		}
	})
	assert.Equal(t, -1, code)
	assert.ErrorIs(t, err, context.Canceled)
	assertGone(t, e, spec.RunID)
}

// A context already cancelled before the container exists.
func TestRunCancelledBeforeCreate(t *testing.T) {
	e := needProbe(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spec := RunSpec{Image: probeImage, Network: "none", Cmd: []string{"sleep", "600"}, RunID: "precancel-" + randomSuffix(t)}
	_, err := e.Run(ctx, spec, nil)
	assert.ErrorIs(t, err, context.Canceled)
	assertGone(t, e, spec.RunID)
}

func TestRunMountsEnvAndWorkDir(t *testing.T) {
	e := needProbe(t)
	data, out := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(data, "in.txt"), []byte("dataset bytes\n"), 0o644))
	mounts := []Mount{{Source: data, Target: "/rival/data", ReadOnly: true}, {Source: out, Target: "/rival/out"}}
	run := func(cmd ...string) (int, []string, error) {
		var lines []string
		spec := RunSpec{Image: probeImage, Network: "none", Mounts: mounts, Cmd: cmd, RunID: "mounts-" + randomSuffix(t),
			Env: []string{"RIVAL_TEST=yes"}, WorkDir: "/rival/out"}
		code, err := e.Run(context.Background(), spec, func(l string) { lines = append(lines, l) })
		assertGone(t, e, spec.RunID)
		return code, lines, err
	}

	code, lines, err := run("cat", "/rival/data/in.txt")
	require.NoError(t, err)
	assert.Zero(t, code)
	assert.Equal(t, []string{"dataset bytes"}, lines)

	code, lines, err = run("write", "/rival/data/new.txt")
	assert.Equal(t, 1, code)
	assert.Error(t, err)
	require.Len(t, lines, 1)
	assert.Contains(t, lines[0], "read-only file system", "the dataset mount must be read-only")
	assert.NoFileExists(t, filepath.Join(data, "new.txt"))

	code, lines, err = run("write", "/rival/out/result.txt")
	require.NoError(t, err)
	assert.Zero(t, code)
	assert.Equal(t, []string{"write ok"}, lines)
	b, err := os.ReadFile(filepath.Join(out, "result.txt"))
	require.NoError(t, err)
	assert.Equal(t, "written\n", string(b))

	_, lines, err = run("env", "RIVAL_TEST")
	require.NoError(t, err)
	assert.Equal(t, []string{"RIVAL_TEST=yes"}, lines)

	_, lines, err = run("pwd")
	require.NoError(t, err)
	assert.Equal(t, []string{"/rival/out"}, lines)
}

// On a host without GPUs, GPU platforms fail with the daemon's reason and
// a hint, and leave nothing behind.
func TestRunGPUPlatformWithoutGPU(t *testing.T) {
	e := needProbe(t)
	cases := map[Platform]struct {
		device string
		hint   string
	}{
		PlatformAMD: {"/dev/kfd", "amdgpu kernel driver"},
		PlatformNVD: {"/dev/nvidiactl", "NVIDIA Container Toolkit"},
	}
	for p, tc := range cases {
		t.Run(string(p), func(t *testing.T) {
			if _, err := os.Stat(tc.device); err == nil {
				t.Skipf("%s exists: this host has the GPU this test expects to be missing", tc.device)
			}
			spec := RunSpec{Image: probeImage, Network: "none", Platform: p, Cmd: []string{"pwd"}, RunID: "gpu-" + randomSuffix(t)}
			code, err := e.Run(context.Background(), spec, nil)
			assert.Equal(t, -1, code)
			require.Error(t, err)
			t.Logf("%s without a GPU: %v", p, err)
			assert.ErrorContains(t, err, tc.hint)
			assertGone(t, e, spec.RunID)
		})
	}
}

func TestShellWithoutTerminal(t *testing.T) {
	e := needProbe(t)
	var out, errOut bytes.Buffer
	spec := RunSpec{Image: probeImage, Network: "none", Cmd: []string{"repl"}, RunID: "shell-" + randomSuffix(t)}
	code, err := e.shell(context.Background(), spec, shellIO{in: strings.NewReader("hello\nworld\nexit 4\n"), out: &out, errOut: &errOut})
	assert.Equal(t, 4, code)
	var ee *ExitError
	assert.ErrorAs(t, err, &ee)
	assert.Equal(t, "got: hello\ngot: world\n", out.String())
	assertGone(t, e, spec.RunID)

	// EOF on stdin ends the shell cleanly.
	out.Reset()
	spec.RunID = "shell-" + randomSuffix(t)
	code, err = e.shell(context.Background(), spec, shellIO{in: strings.NewReader("once\n"), out: &out, errOut: &errOut})
	require.NoError(t, err)
	assert.Zero(t, code)
	assert.Equal(t, "got: once\n", out.String())
	assertGone(t, e, spec.RunID)
}

func TestRemoveStrays(t *testing.T) {
	e := needProbe(t)
	ctx := context.Background()
	spec := RunSpec{Image: probeImage, Network: "none", Cmd: []string{"sleep", "600"}, RunID: "stray-" + randomSuffix(t)}
	require.NoError(t, spec.normalize())
	cfg, hc := spec.configs()
	// A container left by a process that died before cleaning up.
	_, err := e.create(ctx, &spec, cfg, hc)
	require.NoError(t, err)
	ids, err := e.Containers(ctx, spec.RunID)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	n, err := e.RemoveStrays(ctx, spec.RunID)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assertGone(t, e, spec.RunID)
}

func randomSuffix(t *testing.T) string {
	s := RunSpec{Image: "x"}
	require.NoError(t, s.normalize())
	return s.RunID
}

// Opt-in (RIVAL_TEST_TORCH_IMAGE=1): the Debian+torch base image from
// testdata/make-torch-base.sh (built when missing; needs root and
// debootstrap), Rival's amd.Dockerfile on top of it via IMAGE_BASE, and
// torch imported inside a container with no network.
func TestTorchImage(t *testing.T) {
	if os.Getenv("RIVAL_TEST_TORCH_IMAGE") != "1" {
		t.Skip("set RIVAL_TEST_TORCH_IMAGE=1 to build rival-test/torch-base:bookworm (debootstrap, ~2 min) and run torch in it")
	}
	e := needEngine(t)
	ctx := context.Background()
	const base = "rival-test/torch-base:bookworm"
	if _, err := e.ImageID(ctx, base); errors.Is(err, ErrImageNotFound) {
		cmd := exec.Command("bash", "testdata/make-torch-base.sh")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		require.NoError(t, cmd.Run(), "make-torch-base.sh")
	}
	tag := "rival-test/amd-torch:test"
	removeImage(t, e, tag)
	_, err := e.Build(ctx, BuildSpec{ContextDir: "..", Dockerfile: "amd.Dockerfile", Tag: tag, BuildArgs: map[string]string{"IMAGE_BASE": base}})
	require.NoError(t, err)

	var lines []string
	spec := RunSpec{Image: tag, Network: "none", Platform: PlatformCPU, RunID: "torch-" + randomSuffix(t),
		Cmd: []string{"python3", "-c", "import torch, numpy; print(torch.__version__); print(torch.ones(2, 2).sum().item())"}}
	code, err := e.Run(ctx, spec, func(l string) { lines = append(lines, l) })
	require.NoError(t, err, strings.Join(lines, "\n"))
	assert.Zero(t, code)
	require.Len(t, lines, 2, strings.Join(lines, "\n"))
	assert.Regexp(t, `^\d+\.\d+`, lines[0])
	assert.Equal(t, "4.0", lines[1])
	assertGone(t, e, spec.RunID)
}

// A crash can leave "rival-<run>" behind; the re-run of that run replaces
// it, but a container Rival did not make is never touched.
func TestRunReplacesItsOwnStrayOnly(t *testing.T) {
	e := needProbe(t)
	ctx := context.Background()
	stray := RunSpec{Image: probeImage, Network: "none", Cmd: []string{"sleep", "600"}, RunID: "rerun-" + randomSuffix(t)}
	require.NoError(t, stray.normalize())
	cfg, hc := stray.configs()
	_, err := e.create(ctx, &stray, cfg, hc)
	require.NoError(t, err)

	var lines []string
	code, err := e.Run(ctx, RunSpec{Image: probeImage, Network: "none", Cmd: []string{"pwd"}, RunID: stray.RunID},
		func(l string) { lines = append(lines, l) })
	require.NoError(t, err)
	assert.Zero(t, code)
	assert.Equal(t, []string{"/"}, lines)
	assertGone(t, e, stray.RunID)

	foreign := "not-rival-" + randomSuffix(t)
	res, err := dockertest.Daemon(t).ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: probeImage, Cmd: []string{"pwd"}}, Name: foreign})
	require.NoError(t, err)
	t.Cleanup(func() { dockertest.Daemon(t).ContainerRemove(ctx, res.ID, client.ContainerRemoveOptions{Force: true}) })
	_, err = e.Run(ctx, RunSpec{Image: probeImage, Network: "none", Name: foreign, Cmd: []string{"pwd"}}, nil)
	assert.ErrorContains(t, err, "already in use")
	_, err = dockertest.Daemon(t).ContainerInspect(ctx, res.ID, client.ContainerInspectOptions{})
	assert.NoError(t, err, "the foreign container is still there")
}
