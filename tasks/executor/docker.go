package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
)

// Docker runs launches in containers of one image through the
// Engine API, with the platform's devices.
type Docker struct {
	Engine *container.Engine
	// ImageID is the built image's ID (a content digest) that containers run.
	ImageID  string
	Platform string
}

// ImageTag is the tag Rival gives the image of a platform; containers carry it as a label.
func ImageTag(platform string) string { return "rival/" + platform + ":latest" }

// Kind implements Executor.
func (d *Docker) Kind() Kind { return kindDocker }

// ImageDigest implements Executor: the built image's ID, a content digest.
func (d *Docker) ImageDigest() string { return d.ImageID }

// Place implements Executor: directories are mounted at fixed paths under
// /rival, so launches (and their cache keys) do not depend on where the
// workspace lives on the host.
func (d *Docker) Place(dirs []PathMap) []PathMap { return dirs }

// Run implements Executor.
func (d *Docker) Run(ctx context.Context, launch core.Launch, maps []PathMap, onLine func(string)) (Info, error) {
	rs, err := d.Spec(launch, maps)
	if err != nil {
		return Info{}, err
	}
	rs.RunID = fmt.Sprintf("%d-%d", time.Now().UnixNano(), os.Getpid())
	rs.Name = "rival-" + rs.RunID
	code, err := d.Engine.Run(ctx, rs, onLine)
	info := Info{ExitCode: code, ImageID: d.ImageID, ContainerID: rs.Name}
	var exit *container.ExitError
	if errors.As(err, &exit) {
		info.ExitCode = exit.Code
		return info, nil
	}
	return info, err
}

// Spec is the container a launch runs in (shell starts one for a bash launch).
func (d *Docker) Spec(launch core.Launch, maps []PathMap) (container.RunSpec, error) {
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
		Image: d.ImageID, Cmd: launch.Command, Env: env, WorkDir: launch.WorkDir, Mounts: mounts,
		Platform: container.Platform(d.Platform), Network: network,
		Labels: map[string]string{"rival.image": ImageTag(d.Platform)},
	}, nil
}
