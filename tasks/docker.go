package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
)

// Dockerfiles per platform. The cpu image is for containerized CPU runs
// (tests, and hosts that keep PyTorch only in images); it needs IMAGE_BASE.
var dockerfiles = map[string]string{
	hw.PlatformAMD:    "amd.Dockerfile",
	hw.PlatformNVIDIA: "nvd.Dockerfile",
	hw.PlatformCPU:    "cpu.Dockerfile",
}

// defaultBases are the FROM images the Dockerfiles pin (IMAGE_BASE
// overrides them); the cpu image has none.
var defaultBases = map[string]string{
	hw.PlatformAMD:    "rocm/primus:v26.2",
	hw.PlatformNVIDIA: "nvcr.io/nvidia/nemo:26.02",
}

// imageRecord is what the image task writes: enough to prove which image
// a run used.
type imageRecord struct {
	Platform      string `json:"platform"`
	Tag           string `json:"tag"`
	ImageID       string `json:"image_id"`
	BaseRef       string `json:"base_ref"`
	BaseDigest    string `json:"base_digest"`
	ContextDigest string `json:"context_digest"`
	Dockerfile    string `json:"dockerfile"`
}

// imageTag is the tag Rival gives the image of a platform.
func imageTag(platform string) string { return "rival/" + platform + ":latest" }

// imageTask builds the platform image through the Engine API. Its key is
// the build context's digest plus the base image's digest, never a tag.
func (w *Workspace) imageTask(ctx context.Context, e *container.Engine, platform string) (*dag.Task, error) {
	dockerfile, ok := dockerfiles[platform]
	if !ok {
		return nil, fmt.Errorf("image: unknown platform %q (amd, nvd or cpu)", platform)
	}
	base := w.Env.imageBase()
	if base == "" {
		base = defaultBases[platform]
	}
	if base == "" {
		return nil, fmt.Errorf("image %s: set IMAGE_BASE to an image with python3 and PyTorch (the cpu image has no default base)", platform)
	}
	opt := container.ContextOptions{Dockerfile: dockerfile, Exclude: w.contextExcludes()}
	ctxDigest, err := container.ContextDigest(w.Root, opt)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", platform, err)
	}
	baseDigest, err := e.BaseImageDigest(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", platform, err)
	}
	out := w.path("DATA_DIR", "images", platform+".json")
	t := &dag.Task{
		ID:      "image " + platform,
		Params:  map[string]string{"context": ctxDigest, "base": baseDigest, "dockerfile": dockerfile},
		Outputs: []dag.Output{{Path: out, Compress: true}},
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		args := map[string]string{}
		if w.Env.imageBase() != "" || defaultBases[platform] == "" {
			args["IMAGE_BASE"] = base
		}
		id, err := e.Build(ctx, container.BuildSpec{
			ContextDir: w.Root, Dockerfile: dockerfile, Tag: imageTag(platform), BuildArgs: args,
			Labels:  map[string]string{"rival.context": ctxDigest, "rival.base": baseDigest},
			Exclude: opt.Exclude, ContextDigest: ctxDigest, Progress: x.Log,
		})
		if err != nil {
			return err
		}
		rec := imageRecord{Platform: platform, Tag: imageTag(platform), ImageID: id, BaseRef: base, BaseDigest: baseDigest, ContextDigest: ctxDigest, Dockerfile: dockerfile}
		data, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return err
		}
		return cache.WriteFileAtomic(out, append(data, '\n'), 0o644)
	}
	return t, nil
}

// contextExcludes keeps the cache and the run outputs out of build contexts.
func (w *Workspace) contextExcludes() []string {
	ex := []string{w.Cache.Dir, w.path("OUTPUT_DIR"), w.path("DATA_DIR")}
	sort.Strings(ex)
	return ex
}

// ensureImage runs the image task and checks that the recorded image is
// still in the daemon's store (someone may have removed it), rebuilding if
// not.
func (w *Workspace) ensureImage(ctx context.Context, e *container.Engine, platform string) (imageRecord, *dag.Task, error) {
	var rec imageRecord
	t, err := w.imageTask(ctx, e, platform)
	if err != nil {
		return rec, nil, err
	}
	if err := w.Runner.Run(ctx, t); err != nil {
		return rec, t, err
	}
	if rec, err = readImageRecord(t.Outputs[0].Path); err != nil {
		return rec, t, err
	}
	if _, err := e.ImageID(ctx, rec.ImageID); err == nil {
		return rec, t, nil
	} else if !errors.Is(err, container.ErrImageNotFound) {
		return rec, t, err
	}
	w.printf("image %s: %s is gone from the daemon; rebuilding\n", platform, shortID(rec.ImageID))
	again, err := w.imageTask(ctx, e, platform)
	if err != nil {
		return rec, t, err
	}
	again.Force = true
	if err := w.Runner.Run(ctx, again); err != nil {
		return rec, again, err
	}
	rec, err = readImageRecord(again.Outputs[0].Path)
	return rec, again, err
}

// ensurePlatformImage connects to the container engine and builds the image
// of platform unless an up-to-date one is there (EnsureImage). The caller
// closes the engine; on an error nothing is left open.
func (w *Workspace) ensurePlatformImage(ctx context.Context, platform string) (*container.Engine, imageRecord, error) {
	e, err := container.Connect(ctx)
	if err != nil {
		return nil, imageRecord{}, err
	}
	rec, _, err := w.ensureImage(ctx, e, platform)
	if err != nil {
		e.Close()
		return nil, imageRecord{}, err
	}
	return e, rec, nil
}

func readImageRecord(path string) (imageRecord, error) {
	var rec imageRecord
	data, err := cache.ReadFileLimit(context.Background(), path, cache.LimitConfig)
	if err != nil {
		return rec, err
	}
	return rec, json.Unmarshal(data, &rec)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// dockerExecutor runs launches in containers of one image through the
// Engine API, with the platform's devices.
type dockerExecutor struct {
	Engine   *container.Engine
	Image    imageRecord
	Platform string
}

// Kind implements Executor.
func (d *dockerExecutor) Kind() executorKind { return executorDocker }

// ImageDigest implements Executor: the built image's ID, a content digest.
func (d *dockerExecutor) ImageDigest() string { return d.Image.ImageID }

// Place implements Executor: directories are mounted at fixed paths under
// /rival, so launches (and their cache keys) do not depend on where the
// workspace lives on the host.
func (d *dockerExecutor) Place(dirs []PathMap) []PathMap { return dirs }

// Run implements Executor.
func (d *dockerExecutor) Run(ctx context.Context, launch core.Launch, maps []PathMap, onLine func(string)) (execInfo, error) {
	rs, err := d.spec(launch, maps)
	if err != nil {
		return execInfo{}, err
	}
	rs.RunID = fmt.Sprintf("%d-%d", time.Now().UnixNano(), os.Getpid())
	rs.Name = "rival-" + rs.RunID
	code, err := d.Engine.Run(ctx, rs, onLine)
	info := execInfo{ExitCode: code, ImageID: d.Image.ImageID, ContainerID: rs.Name}
	var exit *container.ExitError
	if errors.As(err, &exit) {
		info.ExitCode = exit.Code
		return info, nil
	}
	return info, err
}

// spec is the container a launch runs in.
func (d *dockerExecutor) spec(launch core.Launch, maps []PathMap) (container.RunSpec, error) {
	env, err := localEnv(launch)
	if err != nil {
		return container.RunSpec{}, err
	}
	var mounts []container.Mount
	for _, m := range maps {
		mounts = append(mounts, container.Mount{Source: m.Host, Target: m.Inside, ReadOnly: m.ReadOnly})
	}
	network := "host" // NCCL/RCCL and torchrun rendezvous on the host's interfaces
	if d.Platform == hw.PlatformCPU {
		network = "none"
	}
	return container.RunSpec{
		Image: d.Image.ImageID, Cmd: launch.Command, Env: env, WorkDir: launch.WorkDir, Mounts: mounts,
		Platform: container.Platform(d.Platform), Network: network,
		Labels: map[string]string{"rival.image": imageTag(d.Platform)},
	}, nil
}

// shellSpec is the container `shell` starts: the platform image with the
// devices, mounts and environment a training run gets.
func (w *Workspace) shellSpec(rec imageRecord, platform string) container.RunSpec {
	d := &dockerExecutor{Image: rec, Platform: platform}
	data, _ := filepath.Abs(w.path("DATA_DIR"))
	out, _ := filepath.Abs(w.path("OUTPUT_DIR"))
	rs, _ := d.spec(core.Launch{Command: []string{"bash"}, WorkDir: "/rival", Env: map[string]string{"PYTHONUNBUFFERED": "1"}},
		[]PathMap{{Host: data, Inside: "/rival/data", ReadOnly: true}, {Host: out, Inside: "/rival/output"}})
	rs.Interactive = true
	return rs
}
