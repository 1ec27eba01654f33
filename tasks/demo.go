package tasks

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/internal/lines"
	"github.com/rivalbench/rival/internal/live"
	"github.com/rivalbench/rival/tasks/executor"
	"github.com/rivalbench/rival/tasks/images"
	"github.com/rivalbench/rival/tasks/training"
)

// demoPackages are the Debian packages CPU training needs: PyTorch, numpy,
// and OpenBLAS (without it Debian's torch uses the reference BLAS).
var demoPackages = []string{"python3-torch", "python3-numpy", "libopenblas0-pthread"}

// hostPython is the interpreter CPU runs on the host use.
var hostPython = "/usr/bin/python3"

// demoTrainer gives the demo the executor its runs train with; a variable so that a test can run
// the whole target with a scripted trainer where PyTorch is not installed.
var demoTrainer = (*Workspace).provisionTorch

// installPlan says how the host can get PyTorch for CPU training:
// Install is the command Rival may run itself (root with apt-get, and
// RIVAL_NO_INSTALL unset); Manual is the one command to give a user.
type installPlan struct {
	Install []string
	Manual  string
	Why     string // why Rival does not install, when Install is nil
}

func planInstall(root bool, aptGet string, noInstall bool) installPlan {
	pkgs := strings.Join(demoPackages, " ")
	switch {
	case aptGet == "":
		return installPlan{Manual: "pip install torch numpy", Why: "apt-get is not on PATH"}
	case noInstall:
		return installPlan{Manual: "apt-get install -y " + pkgs, Why: "RIVAL_NO_INSTALL=1 forbids installing"}
	case !root:
		return installPlan{Manual: "sudo apt-get install -y " + pkgs, Why: "installing Debian packages needs root"}
	}
	return installPlan{Install: append([]string{aptGet, "install", "-y", "-q", "--no-install-recommends"}, demoPackages...)}
}

// provisionTorch makes sure CPU training can run: PyTorch on the host,
// installed with apt-get when Rival runs as root on Debian or Ubuntu, or
// the cpu image through a Docker engine (CONTAINER=1, or IMAGE_BASE set
// and an engine answering). It returns the executor the runs use.
func (w *Workspace) provisionTorch(ctx context.Context) (executor.Executor, func(), error) {
	nothing := func() {}
	if w.env.container() {
		return w.demoImageExecutor(ctx)
	}
	probe, err := probeTorch(ctx, hostPython)
	if err == nil {
		w.printf("demo: training on the CPU with %s, PyTorch %s\n", hostPython, probe.Version)
		w.printf("%s", blasAdvice(probe))
		return executor.Host{}, nothing, nil
	}
	aptGet, _ := exec.LookPath("apt-get")
	plan := planInstall(os.Geteuid() == 0, aptGet, w.env.noInstall())
	if plan.Install == nil {
		if w.env.imageBase() != "" {
			if ex, done, derr := w.demoImageExecutor(ctx); derr == nil {
				return ex, done, nil
			} else {
				w.printf("demo: the cpu image is not usable either: %v\n", derr)
			}
		}
		return nil, nothing, fmt.Errorf("demo: training on the CPU needs python3 with PyTorch, which %s cannot import, and Rival does not install it because %s: run\n\n    %s\n\nthen `go run mage.go demo` again (or set IMAGE_BASE to an image with PyTorch to train in Docker)",
			hostPython, plan.Why, plan.Manual)
	}
	if err := w.aptInstall(ctx, plan.Install); err != nil {
		return nil, nothing, err
	}
	probe, err = probeTorch(ctx, hostPython)
	if err != nil {
		return nil, nothing, fmt.Errorf("demo: apt-get installed %s but %s still cannot import torch: %w", strings.Join(demoPackages, " "), hostPython, err)
	}
	w.printf("demo: training on the CPU with %s, PyTorch %s\n", hostPython, probe.Version)
	w.printf("%s", blasAdvice(probe))
	return executor.Host{}, nothing, nil
}

// aptInstall runs apt-get install (after apt-get update when the package
// lists are empty, as on a fresh container), saying what and where.
func (w *Workspace) aptInstall(ctx context.Context, install []string) error {
	w.printf("demo: %s cannot import PyTorch; installing the Debian packages %s system-wide with apt-get "+
		"(into /usr/lib/python3/dist-packages; RIVAL_NO_INSTALL=1 stops Rival from installing)\n", hostPython, strings.Join(demoPackages, " "))
	run := func(args []string) error {
		start := time.Now()
		w.printf("demo: running %s\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("demo: %s: %w", args[0], err)
		}
		// On a terminal, apt-get's latest line and the time so far.
		line := live.New(w.out)
		var out []string
		done := make(chan struct{})
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				out = append(out, sc.Text())
				line.Update(fmt.Sprintf("apt-get %s, %s: %s", args[1], time.Since(start).Round(time.Second), lines.Truncate(sc.Text(), 90)))
			}
			io.Copy(io.Discard, pr)
			close(done)
		}()
		err := cmd.Wait()
		pw.Close()
		<-done
		line.Clear()
		if err != nil {
			return fmt.Errorf("demo: %s failed (%w):\n%s", strings.Join(args, " "), err, lines.Tail(strings.Join(out, "\n"), 20))
		}
		w.printf("demo: apt-get %s done in %s\n", args[1], time.Since(start).Round(time.Second))
		return nil
	}
	if lists, _ := filepath.Glob("/var/lib/apt/lists/*Packages*"); len(lists) == 0 {
		if err := run([]string{install[0], "update", "-q"}); err != nil {
			return err
		}
	}
	return run(install)
}

// demoImageExecutor trains in the cpu image (cpu.Dockerfile FROM IMAGE_BASE).
func (w *Workspace) demoImageExecutor(ctx context.Context) (executor.Executor, func(), error) {
	e, err := container.Connect(ctx)
	if err != nil {
		return nil, func() {}, err
	}
	rec, _, err := w.images().Ensure(ctx, e, hw.PlatformCPU)
	if err != nil {
		e.Close()
		return nil, func() {}, err
	}
	w.printf("demo: training in the cpu image %s (%s) through the Docker engine\n", rec.Tag, images.ShortID(rec.ImageID))
	return &executor.Docker{Engine: e, ImageID: rec.ImageID, Platform: hw.PlatformCPU}, func() { e.Close() }, nil
}

// Demo runs the whole pipeline on the sample corpus in testdata/sample:
// filter, encode with the bundled Mistral 7B tokenizer, verify the
// datasets, train the Mistral proxy on the CPU in two configurations (one
// process, two data-parallel processes) DemoRuns times each, and compare.
func (w *Workspace) Demo(ctx context.Context) error {
	in := filepath.Join(w.root, "testdata", "sample", "corpus.jsonl")
	filtered := w.path("DATA_DIR", "demo", "sample-filtered.jsonl")
	ft := w.data().FilterTask(in, filtered, nil)
	tok, err := w.data().ResolveTokenizer("mistral")
	if err != nil {
		return err
	}
	prefix := w.demoPrefix()
	et := w.data().EncodeTask(filtered, tok, prefix, w.config.float("TRAIN_SPLIT"), ft)
	if err := w.runner.Run(ctx, et); err != nil {
		return err
	}
	w.data().ReportFilter(ft)
	w.data().ReportEncode(et)
	if err := w.VerifyData([]string{prefix + "-train", prefix + "-test"}); err != nil {
		return err
	}

	planned, err := w.demoRuns()
	if err != nil {
		return err
	}
	build := func(ex executor.Executor) ([]*dag.Task, error) {
		var runs []*dag.Task
		for _, r := range planned {
			for i := 0; i < demoRepeats; i++ {
				tt, err := w.trainTask(trainInputs{Run: training.Run{
					Platform: r.Platform, Framework: r.Framework, Model: r.Model, Dataset: r.Dataset, Variant: r.Variant, RunIndex: i,
					TrainPrefix: r.TrainPrefix, Tokenizer: tok, Encode: et, Host: hw.Host{Platform: hw.PlatformCPU},
					Executor: ex,
				}, Config: r.Config})
				if err != nil {
					return nil, err
				}
				runs = append(runs, tt)
			}
		}
		return runs, nil
	}
	runs, err := build(executor.Host{})
	if err != nil {
		return err
	}
	// PyTorch is needed only when a run is not already cached.
	uncached := 0
	for _, tt := range runs {
		if !w.runner.IsCached(tt) {
			uncached++
		}
	}
	if uncached > 0 {
		ex, done, err := demoTrainer(w, ctx)
		if err != nil {
			return err
		}
		defer done()
		// Built again: the runs' keys hold the torch version, which the
		// first build read before PyTorch was installed.
		if runs, err = build(ex); err != nil {
			return err
		}
		w.printf("demo: training the %s %d times in each of %d configurations (%s): %d runs to train\n",
			demoModel, demoRepeats, len(demoVariants), "one process, two data-parallel processes", uncached)
	}
	// Training runs are exclusive host-wide: they run one after the other.
	if err := w.runner.Run(ctx, runs...); err != nil {
		return err
	}
	w.reportRuns(runs)
	src := w.resultSources(nil)
	if src.TargetLoss == "" {
		src.TargetLoss = demoTargetLoss
		w.printf("demo: time to a held-out loss of %s, a loss the proxy reaches in its 16 iterations (TARGET_LOSS sets another)\n", demoTargetLoss)
	}
	ct, err := w.compareTaskFrom(src, runs...)
	if err != nil {
		return err
	}
	if err := w.runner.Run(ctx, ct); err != nil {
		return err
	}
	w.printf("demo: %s, in %s\n", english.Plural(len(runs), "result"), rel(w.root, filepath.Dir(runs[0].Outputs[0].Path)))
	w.reportCompare(ct, w.out)
	return nil
}
