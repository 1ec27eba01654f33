package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/executor"
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

// imageTask builds the platform image through the Engine API. Its key is
// the build context's digest plus the base image's digest, never a tag.
func (w *Workspace) imageTask(ctx context.Context, e *container.Engine, platform string) (*dag.Task, error) {
	dockerfile, ok := dockerfiles[platform]
	if !ok {
		return nil, fmt.Errorf("image: unknown platform %q (amd, nvd or cpu)", platform)
	}
	base := w.env.imageBase()
	if base == "" {
		base = defaultBases[platform]
	}
	if base == "" {
		return nil, fmt.Errorf("image %s: set IMAGE_BASE to an image with python3 and PyTorch (the cpu image has no default base)", platform)
	}
	opt := container.ContextOptions{Dockerfile: dockerfile, Exclude: w.contextExcludes()}
	ctxDigest, err := container.ContextDigest(w.root, opt)
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
		if w.env.imageBase() != "" || defaultBases[platform] == "" {
			args["IMAGE_BASE"] = base
		}
		id, err := e.Build(ctx, container.BuildSpec{
			ContextDir: w.root, Dockerfile: dockerfile, Tag: executor.ImageTag(platform), BuildArgs: args,
			Labels:  map[string]string{"rival.context": ctxDigest, "rival.base": baseDigest},
			Exclude: opt.Exclude, ContextDigest: ctxDigest, Progress: x.Log,
		})
		if err != nil {
			return err
		}
		rec := imageRecord{Platform: platform, Tag: executor.ImageTag(platform), ImageID: id, BaseRef: base, BaseDigest: baseDigest, ContextDigest: ctxDigest, Dockerfile: dockerfile}
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
	ex := []string{w.cache.Dir, w.path("OUTPUT_DIR"), w.path("DATA_DIR")}
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
	if err := w.runner.Run(ctx, t); err != nil {
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
	if err := w.runner.Run(ctx, again); err != nil {
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

// shellSpec is the container `shell` starts: the platform image with the
// devices, mounts and environment a training run gets.
func (w *Workspace) shellSpec(rec imageRecord, platform string) container.RunSpec {
	d := &executor.Docker{ImageID: rec.ImageID, Platform: platform}
	data, _ := filepath.Abs(w.path("DATA_DIR"))
	out, _ := filepath.Abs(w.path("OUTPUT_DIR"))
	rs, _ := d.Spec(core.Launch{Command: []string{"bash"}, WorkDir: "/rival", Env: map[string]string{"PYTHONUNBUFFERED": "1"}},
		[]executor.PathMap{{Host: data, Inside: "/rival/data", ReadOnly: true}, {Host: out, Inside: "/rival/output"}})
	rs.Interactive = true
	return rs
}
