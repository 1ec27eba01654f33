package training

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/internal/units"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
)

// version changes every training key when result assembly changes.
const version = "1"

// Task builds one training run: launch, log, parse, result. The launch is built here for a dataset
// not yet encoded, so a bad request fails the plan; Prepare builds it again for the encoded one.
func Task(in Run, site Site) (*dag.Task, error) {
	name := in.RunName()
	// The workspace fills these from validated settings; a zero value would sample power in a
	// tight loop or skip the TP×PP×DP check.
	if site.PowerInterval <= 0 {
		return nil, fmt.Errorf("train %s: the power sampling interval is %s: it must be positive", name, site.PowerInterval)
	}
	if in.Workload.NNodes < 1 {
		return nil, fmt.Errorf("train %s: NNODES is %d: it must be >= 1", name, in.Workload.NNodes)
	}
	r := &trainRun{
		site: site, in: in, name: name,
		runDir:     filepath.Join(site.OutputDir, "runs", name),
		logPath:    filepath.Join(site.OutputDir, "logs", name+".log"),
		resultPath: filepath.Join(site.OutputDir, name+".json"),
	}
	var err error
	if r.absPrefix, err = filepath.Abs(in.TrainPrefix); err != nil {
		return nil, err
	}
	// The launch names a per-dataset-fingerprint cache folder; the
	// fingerprint is known once the dataset is encoded, so the launch is
	// built again in Prepare; the plan-time build catches bad requests early.
	if err := r.build("unencoded"); err != nil {
		return nil, err
	}
	if err := checkParallelism(in.Workload.Fair, in.gpus()); err != nil {
		return nil, fmt.Errorf("train %s: %w", name, err)
	}
	params := map[string]string{
		"platform": in.Platform, "framework": in.Framework, "model": in.Model, "run": strconv.Itoa(in.RunIndex),
		"hardware": in.Host.Fingerprint(),
	}
	for k, v := range in.Workload.Values {
		params["cfg."+k] = v
	}
	if st := in.stackName(r.launch); st != "" {
		params["stack"] = st
	}
	tools := map[string]string{"train": version, "executor": string(in.Executor.Kind()), "image": in.Executor.ImageDigest()}
	t := &dag.Task{
		ID:        strings.Join(strings.Fields("train "+in.Platform+" "+in.Framework+" "+in.Model+" "+in.Variant+" "+in.otherStack()), " ") + runSuffix(in.RunIndex),
		Deps:      []*dag.Task{in.Encode},
		Files:     []string{in.Tokenizer.Path},
		Params:    params,
		Tools:     tools,
		Outputs:   []dag.Output{{Path: r.resultPath, Compress: true}, {Path: r.logPath, Compress: true}},
		Exclusive: true,
		Force:     in.Workload.Force,
	}
	if in.Encode == nil {
		t.Deps = nil
		t.Files = append(t.Files, r.absPrefix+".bin", r.absPrefix+".idx")
	}
	t.Prepare = func(ctx context.Context) error { return r.prepare(t) }
	r.timeout, _ = units.ParseAge(in.Workload.Timeout)
	t.Run = r.run
	return t, nil
}

// prepare builds the launch for the encoded dataset and adds to t's key
// what the key must hold of it: the launch's digest and, on the host, the
// torch it runs on.
func (r *trainRun) prepare(t *dag.Task) error {
	var err error
	if r.manifest, err = ReadManifest(r.in.TrainPrefix); err != nil {
		return err
	}
	if err := r.build(data.DatasetDigest(r.manifest.Fingerprint).Short()); err != nil {
		return err
	}
	launchJSON, err := json.Marshal(r.launch)
	if err != nil {
		return err
	}
	t.Params["launch"] = cache.HashBytes(workspaceRelative(launchJSON, r.site.Root)).String()
	if r.in.Executor.Kind() == executor.KindHost {
		t.Tools["torch"] = executor.HostTorchVersion(r.launch)
	}
	return nil
}

// stage writes the launch's files into the run folder and makes the
// folders the launch writes to.
func (r *trainRun) stage() error {
	for _, d := range []string{r.runDir, r.cacheDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if r.launch.RanFile != "" {
		// A reused run folder may hold an earlier run's record: this run must write its own.
		if err := os.Remove(filepath.Join(r.runDir, filepath.FromSlash(r.launch.RanFile))); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("train %s: removing an earlier run's record of what ran: %w", r.name, err)
		}
	}
	for rel, data := range r.launch.Files {
		if err := cache.WriteFileAtomic(filepath.Join(r.runDir, filepath.FromSlash(rel)), data, 0o644); err != nil {
			return err
		}
	}
	var err error
	if r.sampleOrder, err = r.writeSampleOrder(); err != nil {
		return err
	}
	r.heldOut, err = r.writeHeldOut()
	return err
}

// run trains: the preflight, then the launch with its log, power samples
// and progress, then the log turned into the result.
func (r *trainRun) run(ctx context.Context, x *dag.Exec) error {
	in, name, logPath := r.in, r.name, r.logPath
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	if err := r.stage(); err != nil {
		return err
	}
	rep, err := Preflight(ctx, in.Executor, name, r.launch, r.maps)
	if err != nil {
		return err
	}
	r.frameworkSamples = rep.samples // equal to Rival's: Preflight stops the run otherwise
	r.frameworkHeldOut = rep.heldOut
	if r.effective = rep.Effective; rep.Ran != "" && r.launch.RanFile == "" {
		// (A launch with a RanFile records what ran itself, from the training processes.)
		// What the image holds, read inside it, ahead of the pin the launch was built for.
		r.launch.FrameworkVersion = rep.Ran + "; built for " + r.launch.FrameworkVersion
	}
	if p := in.Workload.CPUPrecision; p.Precision != "" {
		r.site.Notes.once(x.Log, p, "  CPU runs train in "+p.Precision+": "+p.Reason)
	}
	// A rerun (FORCE=1) keeps the previous good log aside until it
	// succeeds: a failure puts it back where the earlier result points.
	keepPrevLog(logPath)
	started := time.Now().UTC()
	// Power is sampled where the job runs: under Slurm each compute node
	// samples its own GPUs (executor.SlurmPower reads them after the job). Step lines are dated as they stream in, and
	// only samples between the first and last measured step count.
	sampleable := in.Executor.Kind() != executor.KindSlurm && in.Executor.Kind() != executor.KindKube && (in.Executor.Kind() != executor.KindHost || in.Platform != hw.PlatformCPU)
	sampler := startPowerSampler(ctx, in.Platform, sampleable, r.site.PowerInterval)
	clock := &stepClock{}
	prog := newStepProgress(x.Log, x.Task.ID, in.Workload.Fair.TrainIters, in.Workload.Fair.SL)
	if in.Platform == hw.PlatformCPU {
		prog.unit = "process"
	}
	info, runErr := runAndLog(ctx, in.Executor, r.launch, r.maps, logPath, prog, clock)
	sampler.halt()
	finished := time.Now().UTC()
	if runErr != nil {
		prog.finish(nil)
		recordFailure(r.runDir, logPath, name, runErr)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("stopped after TRAIN_TIMEOUT=%s; log kept at %s", in.Workload.Timeout, failedLog(logPath))
		}
		return fmt.Errorf("%w; log kept at %s", runErr, failedLog(logPath))
	}
	if r.effective == nil {
		// Under Slurm and Kubernetes the preflight is the job's first step, in the image on the cluster.
		r.effective = info.Effective
	}
	if r.frameworkSamples == nil {
		r.frameworkSamples = info.Samples // the cluster job's preflight step's, already compared
	}
	if r.frameworkHeldOut == nil {
		r.frameworkHeldOut = info.HeldOut
	}
	if info.Ran != "" && r.launch.RanFile == "" && !strings.Contains(r.launch.FrameworkVersion, "; built for ") {
		// Under Slurm the preflight is the job's first step: what it read in the image.
		r.launch.FrameworkVersion = info.Ran + "; built for " + r.launch.FrameworkVersion
	}
	res, err := r.buildResult(logPath)
	if err != nil {
		prog.finish(nil)
		recordFailure(r.runDir, logPath, name, err)
		return fmt.Errorf("%w; log kept at %s", err, failedLog(logPath))
	}
	prog.finish(&res.PerformanceMetrics)
	res.Provenance = r.provenance(info, started, finished)
	fwSHA := ""
	if r.frameworkSamples != nil {
		fwSHA = r.frameworkSamples.SHA256
	}
	res.SampleOrder = r.sampleOrder.WithFramework(fwSHA)
	heldSHA := ""
	if r.frameworkHeldOut != nil {
		heldSHA = r.frameworkHeldOut.SHA256
	}
	res.HeldOut = r.heldOut.WithFramework(heldSHA)
	if h := res.HeldOut; h != nil && r.launch.Evaluation == "" {
		res.Problems = append(res.Problems, result.Problem{Name: "held_out_not_evaluated", Detail: h.Evaluated})
	}
	res.EffectiveConfig = r.effective
	from, to, dated := clock.window(res.WarmupStepsExcluded)
	res.PowerMetrics = sampler.summary(from, to, dated, runGPUs(r.launch.Env, in.Host))
	if in.Executor.Kind() == executor.KindSlurm {
		res.PowerMetrics = executor.SlurmPower(ctx, r.runDir, in.Platform, from, to, dated)
	}
	return r.writeResult(res)
}

// writeResult checks the result against the schema and writes it; the run
// stands, so an earlier failure's leftovers go.
func (r *trainRun) writeResult(res *result.Result) error {
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := result.Validate(data); err != nil {
		return fmt.Errorf("result of %s does not match the schema: %w", r.name, err)
	}
	if err := cache.WriteFileAtomic(r.resultPath, append(data, '\n'), 0o644); err != nil {
		return err
	}
	os.Remove(r.logPath + ".prev")
	os.Remove(failedLog(r.logPath))
	os.Remove(filepath.Join(r.runDir, "failure.json"))
	return nil
}
