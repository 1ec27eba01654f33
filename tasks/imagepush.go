package tasks

import (
	"context"
	"fmt"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/images"
)

// ImagePushTarget builds the platform image if needed and pushes it to repository (image:push).
func (w *Workspace) ImagePushTarget(ctx context.Context, platform, repository string) error {
	if platform != hw.PlatformAMD && platform != hw.PlatformNVIDIA && platform != hw.PlatformCPU {
		return fmt.Errorf("image:push: unknown platform %q (amd, nvd or cpu)", platform)
	}
	e, rec, err := w.images().Connect(ctx, platform)
	if err != nil {
		return err
	}
	defer e.Close()
	_, err = w.images().Push(ctx, e, rec, repository)
	return err
}

// slurmImage is the image a Slurm run of platform names (images.Builder.SlurmImage, with SLURM_IMAGE).
func (w *Workspace) slurmImage(platform string, built *images.Record) (image, ran string, err error) {
	return w.images().SlurmImage(platform, w.env.slurmImage(), built)
}
