package images

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
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

// defaultBase is the FROM image of a platform's stack (core.Pins; the Dockerfiles' ARG default is the
// current stack's, IMAGE_BASE overrides it); "" for the cpu image, which has none.
func defaultBase(platform, stack string) (pin core.Pin, pinned bool, err error) {
	if platform == hw.PlatformCPU {
		return core.Pin{}, false, nil
	}
	pin, err = core.PinFor(platform, stack)
	return pin, err == nil, err
}

// Builder builds, records and pushes a workspace's platform images.
type Builder struct {
	Root      string   // the build context: the workspace
	DataDir   string   // DATA_DIR: each image's record is DATA_DIR/images/<platform>.json
	OutputDir string   // OUTPUT_DIR: each push's record is OUTPUT_DIR/images/<platform>-pushed.json
	Exclude   []string // kept out of the build context: the cache, OUTPUT_DIR and DATA_DIR
	Base      string   // IMAGE_BASE: the FROM image instead of the stack's pinned one
	Stack     string   // STACK: the stack whose pinned image amd and nvd build FROM ("" is current)
	Runner    *dag.Runner
	Out       io.Writer // messages for the user
}

// Record is what the image task writes: enough to prove which image
// a run used.
type Record struct {
	Platform      string `json:"platform"`
	Stack         string `json:"stack,omitempty"` // the pinned image's name (core.Pin.Name) on amd and nvd
	Tag           string `json:"tag"`
	ImageID       string `json:"image_id"`
	BaseRef       string `json:"base_ref"`
	BaseDigest    string `json:"base_digest"`
	ContextDigest string `json:"context_digest"`
	Dockerfile    string `json:"dockerfile"`
}

// task builds the platform image through the Engine API. Its key is
// the build context's digest plus the base image's digest, never a tag.
func (b Builder) task(ctx context.Context, e *container.Engine, platform string) (*dag.Task, error) {
	dockerfile, ok := dockerfiles[platform]
	if !ok {
		return nil, fmt.Errorf("image: unknown platform %q (amd, nvd or cpu)", platform)
	}
	pin, pinned, err := defaultBase(platform, b.Stack)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", platform, err)
	}
	base := b.Base
	if base == "" {
		base = pin.Image
	}
	if base == "" {
		return nil, fmt.Errorf("image %s: set IMAGE_BASE to an image with python3 and PyTorch (the cpu image has no default base)", platform)
	}
	opt := container.ContextOptions{Dockerfile: dockerfile, Exclude: b.Exclude}
	ctxDigest, err := container.ContextDigest(b.Root, opt)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", platform, err)
	}
	baseDigest, err := e.BaseImageDigest(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", platform, err)
	}
	out := b.recordPath(platform)
	t := &dag.Task{
		ID:      "image " + b.Name(platform),
		Params:  map[string]string{"context": ctxDigest, "base": baseDigest, "dockerfile": dockerfile},
		Outputs: []dag.Output{{Path: out, Compress: true}},
	}
	args := map[string]string{"IMAGE_BASE": base}
	if pinned && platform == hw.PlatformNVIDIA {
		// The NeMo images ship no TorchTitan: nvd.Dockerfile installs the stack's release.
		args["TORCHTITAN_VERSION"] = strings.TrimPrefix(pin.TorchTitan, "v")
	}
	for k, v := range args {
		t.Params["arg."+k] = v // a build argument changes the image as the context does
	}
	stack := ""
	if pinned && b.Base == "" {
		stack = pin.Name() // an IMAGE_BASE image is not the stack's pinned one
	}
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		id, err := e.Build(ctx, container.BuildSpec{
			ContextDir: b.Root, Dockerfile: dockerfile, Tag: executor.ImageTag(b.Name(platform)), BuildArgs: args,
			Labels:  map[string]string{"rival.context": ctxDigest, "rival.base": baseDigest},
			Exclude: opt.Exclude, ContextDigest: ctxDigest, Progress: x.Log,
		})
		if err != nil {
			return err
		}
		rec := Record{Platform: platform, Stack: stack, Tag: executor.ImageTag(b.Name(platform)), ImageID: id, BaseRef: base, BaseDigest: baseDigest, ContextDigest: ctxDigest, Dockerfile: dockerfile}
		data, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return err
		}
		return cache.WriteFileAtomic(out, append(data, '\n'), 0o644)
	}
	return t, nil
}

// Ensure runs the image task and checks that the recorded image is
// still in the daemon's store (someone may have removed it), rebuilding if
// not.
func (b Builder) Ensure(ctx context.Context, e *container.Engine, platform string) (Record, *dag.Task, error) {
	var rec Record
	t, err := b.task(ctx, e, platform)
	if err != nil {
		return rec, nil, err
	}
	if err := b.Runner.Run(ctx, t); err != nil {
		return rec, t, err
	}
	if rec, err = readRecord(t.Outputs[0].Path); err != nil {
		return rec, t, err
	}
	if _, err := e.ImageID(ctx, rec.ImageID); err == nil {
		return rec, t, nil
	} else if !errors.Is(err, container.ErrImageNotFound) {
		return rec, t, err
	}
	fmt.Fprintf(b.Out, "image %s: %s is gone from the daemon; rebuilding\n", platform, ShortID(rec.ImageID))
	again, err := b.task(ctx, e, platform)
	if err != nil {
		return rec, t, err
	}
	again.Force = true
	if err := b.Runner.Run(ctx, again); err != nil {
		return rec, again, err
	}
	rec, err = readRecord(again.Outputs[0].Path)
	return rec, again, err
}

// Connect connects to the container engine and builds the image of platform
// unless an up-to-date one is there (Ensure). The caller closes the engine;
// on an error nothing is left open.
func (b Builder) Connect(ctx context.Context, platform string) (*container.Engine, Record, error) {
	e, err := container.Connect(ctx)
	if err != nil {
		return nil, Record{}, err
	}
	rec, _, err := b.Ensure(ctx, e, platform)
	if err != nil {
		e.Close()
		return nil, Record{}, err
	}
	return e, rec, nil
}

// Name is how records, tags and task ids name the image of platform: the platform on the current
// stack and on cpu ("nvd"), the platform and the stack on another ("nvd-previous"), so the images of
// two stacks live side by side.
func (b Builder) Name(platform string) string {
	if platform == hw.PlatformCPU || b.Stack == "" || b.Stack == core.StackCurrent {
		return platform
	}
	return platform + "-" + b.Stack
}

// recordPath is where the image task records the image of platform.
func (b Builder) recordPath(platform string) string {
	return filepath.Join(b.DataDir, "images", b.Name(platform)+".json")
}

// Recorded is the image of platform as the image task last recorded it; an error wrapping
// fs.ErrNotExist when it has not run.
func (b Builder) Recorded(platform string) (Record, error) { return readRecord(b.recordPath(platform)) }

func readRecord(path string) (Record, error) {
	var rec Record
	data, err := cache.ReadFileLimit(context.Background(), path, cache.LimitConfig)
	if err != nil {
		return rec, err
	}
	return rec, json.Unmarshal(data, &rec)
}

// ShortID is an image ID as docker prints it: 12 hex digits without the algorithm.
func ShortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
