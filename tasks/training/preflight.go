package training

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/executor"
)

// preflightReport is what a preflight said about a launch.
type preflightReport struct {
	OK  string // the preflight's summary line
	Ran string // what the image actually holds ("ran": Megatron Core, the trees' commits, TE, torch, CUDA or ROCm)
	// Effective is what the framework built, read back from its own objects (nil when the
	// framework's preflight does not report it).
	Effective *effective.Config
	// samples is the digest of the first samples the framework's own data path will read
	// ("preflight samples: {json}"; nil when the preflight does not report one).
	samples *core.SampleDigest
	// heldOut is its digest of the held-out sequences its evaluation reads ("preflight held-out:
	// {json}"; nil when it prints none).
	heldOut *core.SampleDigest
}

// Preflight runs a launch's preflight (the framework's own argument parsing and config
// validation; see core.Launch.Preflight). Its files must already be written. It fails quoting
// the framework's error, when the effective configuration the preflight read back differs from
// the workload's (core.Launch.Workload), naming each field with both values, and when its digest of
// the first samples differs from Rival's (core.Launch.Samples), with both digests.
func Preflight(ctx context.Context, ex executor.Executor, name string, launch core.Launch, maps []executor.PathMap) (preflightReport, error) {
	var rep preflightReport
	if launch.Preflight == nil {
		return rep, nil
	}
	pex := preflightExecutor(ex, *launch.Preflight)
	if pex == nil {
		return rep, nil
	}
	var tail []string
	eff := ""
	var samplesErr error
	// The preflight's launch carries the digest it is held to (never serialized), so an executor
	// standing in for a framework can answer as one whose data path reads Rival's order.
	pre := *launch.Preflight
	pre.Samples, pre.HeldOut = launch.Samples, launch.HeldOut
	info, err := pex.Run(ctx, pre, maps, func(l string) {
		if strings.HasPrefix(l, effective.LinePrefix) {
			eff = l // long: kept apart from the tail
			return
		}
		if j, ok := strings.CutPrefix(l, executor.SamplesPrefix); ok {
			if rep.samples == nil && samplesErr == nil {
				rep.samples, samplesErr = executor.ReadSamples(j)
			}
			return
		}
		if j, ok := strings.CutPrefix(l, executor.HeldOutPrefix); ok {
			if rep.heldOut == nil && samplesErr == nil {
				rep.heldOut, samplesErr = executor.ReadHeldOut(j)
			}
			return
		}
		if len(tail) == 40 {
			tail = tail[1:]
		}
		tail = append(tail, l)
	})
	if err != nil {
		return rep, fmt.Errorf("preflight of %s: %w", name, err)
	}
	last := ""
	for _, l := range tail {
		if strings.HasPrefix(l, "preflight ok: ") || strings.HasPrefix(l, "preflight failed: ") {
			last = l
		}
		if j, found := strings.CutPrefix(l, "preflight ran: "); found {
			rep.Ran = executor.DescribeRan(j)
		}
	}
	if info.ExitCode != 0 {
		if last == "" {
			last = "exit status " + strconv.Itoa(info.ExitCode) + ": " + strings.Join(tail, "\n")
		}
		return preflightReport{}, fmt.Errorf("preflight of %s stopped the run before it started: %s", name, strings.TrimPrefix(last, "preflight failed: "))
	}
	rep.OK = last
	if samplesErr == nil {
		samplesErr = executor.CompareSamples(launch.Samples, rep.samples)
	}
	if samplesErr == nil && launch.Evaluation != "" {
		// The frameworks that evaluate Rival's held-out set digest it too (heldOutEvaluated).
		samplesErr = executor.CompareHeldOut(launch.HeldOut, rep.heldOut)
	}
	if samplesErr != nil {
		return preflightReport{}, fmt.Errorf("preflight of %s stopped the run before it started: %w", name, samplesErr)
	}
	if eff != "" {
		got, err := executor.ReadEffective(launch.Framework, launch.Workload, eff)
		if got == nil {
			return preflightReport{}, fmt.Errorf("preflight of %s: %w", name, err)
		}
		rep.Effective = got
		if err != nil {
			return rep, fmt.Errorf("preflight of %s stopped the run before it started: %w", name, err)
		}
	}
	return rep, nil
}

// preflightExecutor is where a preflight runs: in the run's image without GPUs and without a network
// (a Docker run; with the run's devices when the preflight asks for them), or the run's own
// executor. Slurm runs it as the job's first step (executor.Slurm.Job), not as a second job;
// train:check runs it in the image on the login node.
func preflightExecutor(ex executor.Executor, pre core.Launch) executor.Executor {
	if k := ex.Kind(); k == executor.KindSlurm || k == executor.KindKube {
		return nil // the job's first step, in the image on the nodes (by kind: a wrapped executor too)
	}
	switch d := ex.(type) {
	case *executor.Docker:
		if pre.Devices {
			return ex
		}
		c := *d
		c.Platform = hw.PlatformCPU // no devices, --network none
		return &c
	}
	return ex
}
