package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/hw"
)

// platformFor is the platform a target means: the one asked, or the
// detected one when asked is empty.
func (w *Workspace) platformFor(ctx context.Context, asked string) (string, hw.Host, error) {
	host, err := w.DetectHost(ctx)
	if err != nil {
		return "", host, err
	}
	if asked == "" {
		asked = host.Platform
	}
	return asked, host, nil
}

// ImageTarget builds the image of platform ("" for the detected one).
func (w *Workspace) ImageTarget(ctx context.Context, platform string) error {
	if platform == "" {
		p, _, err := w.platformFor(ctx, "")
		if err != nil {
			return err
		}
		if p == hw.PlatformCPU {
			return errors.New("image: this host has no GPU; build image:amd or image:nvd explicitly, or image:cpu with IMAGE_BASE for containerized CPU runs")
		}
		platform = p
	}
	e, err := container.Connect(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	rec, _, err := w.EnsureImage(ctx, e, platform)
	if err != nil {
		return err
	}
	w.Printf("image %s: %s (%s) from %s\n", platform, rec.Tag, shortID(rec.ImageID), rec.BaseRef)
	return nil
}

// TrainTarget trains frameworks × models on platform ("" detects it; nil
// lists mean every framework that runs there and every model of MODELS).
// GPU platforms run in containers of the platform image; cpu runs on the
// host unless CONTAINER=1 asks for the cpu image.
func (w *Workspace) TrainTarget(ctx context.Context, platform string, fws, mdls []string) error {
	platform, host, err := w.platformFor(ctx, platform)
	if err != nil {
		return err
	}
	if err := CheckPlatform(platform, host); err != nil {
		return err
	}
	if fws == nil {
		for _, f := range Frameworks() {
			for _, p := range platformsOf(f) {
				if p == platform {
					fws = append(fws, f)
				}
			}
		}
	}
	if mdls == nil {
		mdls = w.Config.List("MODELS")
	}
	var exec Executor = HostExecutor{}
	if platform != hw.PlatformCPU || os.Getenv("CONTAINER") == "1" {
		e, err := container.Connect(ctx)
		if err != nil {
			return err
		}
		defer e.Close()
		rec, _, err := w.EnsureImage(ctx, e, platform)
		if err != nil {
			return err
		}
		exec = &DockerExecutor{Engine: e, Image: rec, Platform: platform}
	} else if err := checkTorch(ctx, "/usr/bin/python3"); err != nil {
		return err
	}
	plan, err := w.PlanTraining(platform, fws, mdls, host, exec)
	if err != nil {
		return err
	}
	err = w.Runner.Run(ctx, plan.Runs...)
	w.ReportRuns(doneRuns(plan.Runs))
	return err
}

func doneRuns(ts []*Task) []*Task {
	var out []*Task
	for _, t := range ts {
		if t.state != nil && t.state.err == nil && isDone(t) {
			out = append(out, t)
		}
	}
	return out
}

func isDone(t *Task) bool {
	select {
	case <-t.state.done:
		return true
	default:
		return false
	}
}

func platformsOf(framework string) []string { return frameworks.Platforms(framework) }

// ShellTarget starts an interactive container of the detected platform's
// image; without a terminal it prints the equivalent docker run command.
func (w *Workspace) ShellTarget(ctx context.Context) error {
	platform, host, err := w.platformFor(ctx, os.Getenv("PLATFORM"))
	if err != nil {
		return err
	}
	if platform == hw.PlatformCPU && os.Getenv("IMAGE_BASE") == "" {
		return fmt.Errorf("shell: this host has no GPU (%s); set PLATFORM=amd or nvd, or IMAGE_BASE for a CPU image", orNone(host.Source))
	}
	e, err := container.Connect(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	rec, _, err := w.EnsureImage(ctx, e, platform)
	if err != nil {
		return err
	}
	spec := w.ShellSpec(rec, platform)
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		w.Printf("shell: no terminal; run this where there is one:\n")
		fmt.Println(container.QuoteCommand(container.DockerRunCommand(spec)))
		return nil
	}
	code, err := e.Shell(ctx, spec)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("shell exited with status %d", code)
	}
	return nil
}

// CompareTarget runs compare over OUTPUT_DIR, the cache and dirs.
func (w *Workspace) CompareTarget(ctx context.Context, dirs []string) error {
	t, err := w.CompareTask(dirs)
	if err != nil {
		return err
	}
	if err := w.Runner.Run(ctx, t); err != nil {
		return err
	}
	var sb strings.Builder
	w.ReportCompare(t, &sb)
	fmt.Fprint(os.Stdout, sb.String())
	return nil
}
