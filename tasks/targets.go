package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/images"
)

// platformFor is the platform a target means: the one asked, or the
// detected one when asked is empty.
func (w *Workspace) platformFor(ctx context.Context, asked string) (string, hw.Host, error) {
	host, err := w.detectHost(ctx)
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
	e, rec, err := w.images().Connect(ctx, platform)
	if err != nil {
		return err
	}
	defer e.Close()
	w.printf("image %s: %s (%s) from %s\n", platform, rec.Tag, images.ShortID(rec.ImageID), rec.BaseRef)
	return nil
}

// TrainTarget trains frameworks × models on platform ("" detects it; nil
// lists mean every framework that runs there and every model of MODELS).
// GPU platforms run in containers of the platform image; cpu runs on the
// host unless CONTAINER=1 asks for the cpu image.
func (w *Workspace) TrainTarget(ctx context.Context, platform string, fws, mdls []string) error {
	detect := platform == ""
	platform, host, err := w.platformFor(ctx, platform)
	if err != nil {
		return err
	}
	if detect && platform == hw.PlatformCPU {
		return w.noGPUForTrainAll(host)
	}
	if err := checkPlatform(platform, host); err != nil {
		return err
	}
	every := fws == nil
	if fws == nil {
		for _, f := range frameworks.Names() {
			for _, p := range platformsOf(f) {
				if p == platform {
					fws = append(fws, f)
				}
			}
		}
	}
	if mdls == nil {
		mdls = w.config.list("MODELS")
	}
	if w.useKube() {
		// Before executorFor, which builds the image first and then stops at the first missing setting.
		if err := w.checkKubeSettings("train", platform); err != nil {
			return err
		}
	}
	exec, closeExec, err := w.executorFor(ctx, platform, host)
	if err != nil {
		return err
	}
	defer closeExec()
	plan, err := w.planTraining(platform, fws, mdls, host, exec, every)
	if err != nil {
		return err
	}
	err = w.runner.Run(ctx, plan.Runs...)
	w.reportRuns(doneRuns(plan.Runs))
	return err
}

// noGPUForTrainAll is train:all's answer on a host without a GPU: it names
// what was looked for and the two CPU targets with what each would do,
// rather than train CPU proxies on a dataset it would first download.
func (w *Workspace) noGPUForTrainAll(host hw.Host) error {
	found := host.Source
	if !strings.HasPrefix(found, "no GPU found") {
		found = "no GPU found (" + orNone(found) + ")"
	}
	return fmt.Errorf("train:all: %s on this host; train:all trains the detected GPU platform, so nothing was trained. On the CPU instead:\n"+
		"  go run mage.go train:cpu   trains the fsdp proxies of MODELS (%s) on DATASET=%s, downloading its %s documents (DATA_SAMPLES) from the Hugging Face Hub first\n"+
		"  go run mage.go demo        runs the whole pipeline offline on the shipped sample corpus (filter, encode, CPU training, compare)",
		found, strings.Join(w.config.list("MODELS"), ", "), w.config.get("DATASET"), w.config.get("DATA_SAMPLES"))
}

func doneRuns(ts []*dag.Task) []*dag.Task {
	var out []*dag.Task
	for _, t := range ts {
		if t.Succeeded() {
			out = append(out, t)
		}
	}
	return out
}

// ShellTarget starts an interactive container of the detected platform's
// image; without a terminal it prints the equivalent docker run command.
func (w *Workspace) ShellTarget(ctx context.Context) error {
	asked := w.env.platform()
	platform, host, err := w.platformFor(ctx, asked)
	if err != nil {
		return err
	}
	if platform == hw.PlatformCPU && w.env.imageBase() == "" {
		return noCPUImageBase(asked, host)
	}
	e, rec, err := w.images().Connect(ctx, platform)
	if err != nil {
		return err
	}
	defer e.Close()
	rs := w.shellSpec(rec, platform)
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		w.printf("shell: no terminal; run this where there is one:\n")
		fmt.Println(container.QuoteCommand(container.DockerRunCommand(rs)))
		return nil
	}
	code, err := e.Shell(ctx, rs)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("shell exited with status %d", code)
	}
	return nil
}

// noCPUImageBase is shell's answer when it would open the cpu image but
// IMAGE_BASE is not set: cpu.Dockerfile has no FROM of its own (no public
// image is pinned for it), so there is nothing to build the image on.
func noCPUImageBase(asked string, host hw.Host) error {
	why := "the cpu image"
	if asked == "" {
		why = fmt.Sprintf("this host has no GPU (%s), so the shell opens the cpu image, which", orNone(host.Source))
	}
	msg := fmt.Sprintf("shell: %s is built FROM the image IMAGE_BASE names, and cpu.Dockerfile has no default one: "+
		"set IMAGE_BASE to an image with python3, PyTorch and numpy, for example one container/testdata/make-torch-base.sh builds from Debian "+
		"(`sudo bash container/testdata/make-torch-base.sh`, then `PLATFORM=cpu IMAGE_BASE=rival-test/torch-base:bookworm go run mage.go shell`)", why)
	if asked == "" {
		msg += "; or PLATFORM=amd or nvd for a GPU platform's image"
	}
	return errors.New(msg + ". CPU training needs no container: `go run mage.go train:cpu` and `go run mage.go demo` train with the host's PyTorch")
}

// SlurmScriptTarget prints the batch script of one run without submitting.
func (w *Workspace) SlurmScriptTarget(ctx context.Context, platform, framework, model string) error {
	host := hw.Host{Platform: platform}
	if platform != hw.PlatformCPU {
		var err error
		if host, err = w.detectHost(ctx); err != nil {
			return err
		}
		if len(host.GPUs) == 0 {
			// Writing a script for a cluster from a login node without GPUs:
			// GPUS_PER_NODE says how many each node has.
			n := w.env.gpUsPerNode()
			host = hw.Host{Platform: platform}
			for i := 0; i < n; i++ {
				host.GPUs = append(host.GPUs, hw.GPU{Index: i})
			}
		}
	}
	image, ran, err := w.slurmImage(platform, nil)
	if err != nil {
		return err
	}
	cfg, err := w.platformConfig(platform)
	if err != nil {
		return err
	}
	ex, err := w.newSlurmExecutor(cfg, platform, host, image, ran)
	if err != nil {
		return err
	}
	return w.printLaunchFile(cfg, platform, framework, model, host, ex, func(in trainInputs) ([]byte, error) {
		script, err := w.slurmScript(in)
		return []byte(script), err
	})
}
