// Command rival-conform runs Rival's numerical conformance: one checkpoint and the same batches
// through each framework's own model code, loss, optimizer and LR schedule (package
// frameworks/conformance), and reports whether every step's numbers agree.
//
//	rival-conform [flags] DIR
//	rival-conform -gpu DIR      on a GPU: the conformance in bf16 with the frameworks' CUDA
//	                            kernels, and 20 training steps of fsdp and TorchTitan per family
//
// It writes the plan into DIR (checkpoints, batches, every framework's launch, run.sh), runs run.sh
// with the local Python (torch with numpy and PyYAML), and writes DIR/report.json; the summary goes
// to standard output. The pinned trees come from -upstream (default: $RIVAL_UPSTREAM_DIR). It
// exits 1 when a run fails or two frameworks differ beyond the tolerance, 2 on bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/conformance"
	"github.com/rivalbench/rival/frameworks/core"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rival-conform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	gpu := fs.Bool("gpu", false, "the GPU check: -device cuda -dtype bf16 -train-steps 20 -stacks current,previous")
	device := fs.String("device", conformance.DeviceCPU, "cpu or cuda")
	dtype := fs.String("dtype", conformance.FP32, "fp32 or bf16 (bf16: fp32 master weights)")
	trainSteps := fs.Int("train-steps", 0, "also train each family's proxy this many steps with fsdp and TorchTitan (their GPU launches)")
	stacks := fs.String("stacks", core.StackCurrent, "comma-separated stacks whose Megatron-LM, Bridge, Primus and TorchTitan launches run ("+strings.Join(core.StackNames, ", ")+")")
	families := fs.String("families", "", "comma-separated proxy models (default: llama-proxy,qwen-proxy,mistral-proxy)")
	upstream := fs.String("upstream", os.Getenv("RIVAL_UPSTREAM_DIR"), "the folder of pinned trees (megatron-<commit>, primus-<tag>, bridge-v<version>, torchtitan-<tag>)")
	python := fs.String("python", "python3", "the Python with torch the runs use")
	repo := fs.String("repo", ".", "the repository's root (the sample corpus and the tokenizers)")
	threads := fs.Int("threads", 0, "torch's CPU threads per run (default 2)")
	prepareOnly := fs.Bool("prepare", false, "write the plan and run.sh, and run nothing")
	collectOnly := fs.Bool("collect", false, "run nothing: read DIR's output (run.sh ran elsewhere) and write the report")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rival-conform [flags] DIR\n\nRuns every framework's own code on one checkpoint and the same batches and compares the numbers\nstep by step (docs/frameworks.md, numerical conformance).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	dir, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "rival-conform:", err)
		return 2
	}
	if *collectOnly {
		return report(dir, stdout, stderr)
	}
	if *gpu {
		*device, *dtype = conformance.DeviceCUDA, conformance.BF16
		if !flagSet(fs, "train-steps") {
			*trainSteps = 20
		}
		if !flagSet(fs, "stacks") {
			*stacks = strings.Join(core.StackNames, ",")
		}
	}
	opt := conformance.Options{Build: frameworks.Build, Dir: dir, Upstream: *upstream, Repo: *repo, Device: *device, DType: *dtype,
		Python: *python, Threads: *threads, TrainSteps: *trainSteps, Stacks: strings.Split(*stacks, ",")}
	if *families != "" {
		for _, m := range strings.Split(*families, ",") {
			f, err := family(m)
			if err != nil {
				fmt.Fprintln(stderr, "rival-conform:", err)
				return 2
			}
			opt.Families = append(opt.Families, f)
		}
	}
	if err := clean(dir); err != nil {
		fmt.Fprintln(stderr, "rival-conform:", err)
		return 1
	}
	fmt.Fprintf(stdout, "rival-conform: writing the plan into %s\n", dir)
	p, err := conformance.Prepare(ctx, opt)
	if err == nil {
		err = p.WriteScript()
	}
	if err != nil {
		fmt.Fprintln(stderr, "rival-conform:", err)
		return 1
	}
	script := filepath.Join(dir, conformance.ScriptFile)
	if *prepareOnly {
		fmt.Fprintf(stdout, "rival-conform: %d runs planned; run them with: bash %s, then: rival-conform -collect %s\n", len(p.Runs), script, dir)
		return 0
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintf(stderr, "rival-conform: %s: %v\n", script, err)
		return 1
	}
	return report(dir, stdout, stderr)
}

// report collects dir's output, writes report.json and prints the summary.
func report(dir string, stdout, stderr io.Writer) int {
	rep, err := conformance.Collect(dir)
	if err == nil {
		err = rep.Write(dir)
	}
	if err != nil {
		fmt.Fprintln(stderr, "rival-conform:", err)
		return 1
	}
	for _, l := range rep.Summary() {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintf(stdout, "rival-conform: report in %s\n", filepath.Join(dir, conformance.ReportFile))
	if rep.Failed > 0 {
		return 1
	}
	return 0
}

// clean removes what an earlier run left in dir (its output and report), so that a report never
// mixes two runs; a folder holding anything else is refused.
func clean(dir string) error {
	es, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(es) > 0 {
		if _, err := os.Stat(filepath.Join(dir, conformance.PlanFile)); err != nil {
			return fmt.Errorf("%s holds files and no %s: name a new or empty folder", dir, conformance.PlanFile)
		}
	}
	for _, n := range []string{conformance.OutDir, conformance.ReportFile} {
		if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

func family(model string) (conformance.Family, error) {
	var names []string
	for _, f := range conformance.Families {
		if f.Model == model {
			return f, nil
		}
		names = append(names, f.Model)
	}
	return conformance.Family{}, fmt.Errorf("-families: no family %q (one of %s)", model, strings.Join(names, ", "))
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
