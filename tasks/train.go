package tasks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/internal/units"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/tasks/data"
	"github.com/rivalbench/rival/tasks/executor"
)

// trainVersion changes every training key when result assembly changes.
const trainVersion = "1"

// trainInputs name one training run and what it trains on.
type trainInputs struct {
	Platform, Framework, Model string
	RunIndex                   int // 0-based repetition
	// Variant tells apart configurations of one platform, framework and
	// model trained side by side (the demo's "dp1" and "dp2"); it joins the
	// run's name and task id. Empty for ordinary runs.
	Variant     string
	Dataset     string
	TrainPrefix string // the encoded train split, without .bin/.idx
	Tokenizer   data.TokenizerSpec
	Encode      *dag.Task // the task producing TrainPrefix
	Host        hw.Host
	Config      *config
	// Executor runs the launch: on the host for cpu, in a container otherwise.
	Executor executor.Executor
}

// runName is the file-name stem of a run: train_<platform>_<framework>_<model>_<dataset>[_runN]
// (the original suite's naming, with the repetition when RUNS > 1).
func runName(platform, framework, model, dataset string, run int) string {
	n := fmt.Sprintf("train_%s_%s_%s_%s", platform, framework, model, dataset)
	if run > 0 {
		n += fmt.Sprintf("_run%d", run+1)
	}
	return n
}

// trainTask builds one training run: launch, log, parse, result.
func (w *Workspace) trainTask(in trainInputs) (*dag.Task, error) {
	cfg := in.Config
	if cfg == nil {
		cfg = w.config
	}
	// A CPU trains in the precision it does fast; the configuration says so
	// before anything is fingerprinted, so the key, the launch, the log and
	// the result all name the precision that ran.
	var cpuPrec cpuPrecision
	if in.Platform == hw.PlatformCPU {
		var err error
		if cfg, cpuPrec, err = cpuTrainConfig(cfg); err != nil {
			return nil, err
		}
		in.Config = cfg
	}
	name := variantName(in)
	r := &trainRun{
		w: w, in: in, cfg: cfg, cpuPrec: cpuPrec, name: name,
		runDir:     w.path("OUTPUT_DIR", "runs", name),
		logPath:    w.path("OUTPUT_DIR", "logs", name+".log"),
		resultPath: w.path("OUTPUT_DIR", name+".json"),
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
	if err := cfg.checkGPUs(gpuCount(in.Platform, in.Host, cfg)); err != nil {
		return nil, fmt.Errorf("train %s: %w", name, err)
	}
	params := map[string]string{
		"platform": in.Platform, "framework": in.Framework, "model": in.Model, "run": strconv.Itoa(in.RunIndex),
		"hardware": in.Host.Fingerprint(),
	}
	for k, v := range cfg.trainingValues() {
		params["cfg."+k] = v
	}
	tools := map[string]string{"train": trainVersion, "executor": string(in.Executor.Kind()), "image": in.Executor.ImageDigest()}
	t := &dag.Task{
		ID:        strings.Join(strings.Fields("train "+in.Platform+" "+in.Framework+" "+in.Model+" "+in.Variant), " ") + runSuffix(in.RunIndex),
		Deps:      []*dag.Task{in.Encode},
		Files:     []string{in.Tokenizer.Path},
		Params:    params,
		Tools:     tools,
		Outputs:   []dag.Output{{Path: r.resultPath, Compress: true}, {Path: r.logPath, Compress: true}},
		Exclusive: true,
		Force:     cfg.bool("FORCE"),
	}
	if in.Encode == nil {
		t.Deps = nil
		t.Files = append(t.Files, r.absPrefix+".bin", r.absPrefix+".idx")
	}
	t.Prepare = func(ctx context.Context) error { return r.prepare(t) }
	r.timeout, _ = units.ParseAge(cfg.get("TRAIN_TIMEOUT"))
	t.Run = r.run
	return t, nil
}

// trainRun is one training run from its plan to its result: where its
// files go and, once Prepare knows the dataset's fingerprint, its launch.
type trainRun struct {
	w       *Workspace
	in      trainInputs
	cfg     *config
	cpuPrec cpuPrecision // the precision a CPU run chose; empty on GPUs
	name    string
	timeout time.Duration // TRAIN_TIMEOUT; 0 for none

	runDir, logPath, resultPath string
	absPrefix                   string // the encoded train split, absolute

	manifest data.Manifest // the dataset's, read once, by prepare
	launch   core.Launch
	maps     []executor.PathMap
	cacheDir string // Megatron's data cache folder of the dataset's fingerprint

	sampleOrder *result.SampleOrder // written by stage (writeSampleOrder)
	// frameworkSamples is the framework's preflight's digest of the first samples (nil: not reported).
	frameworkSamples *core.SampleDigest
	// effective is what the framework built, as its preflight read it back (nil: not reported).
	effective *effective.Config
}

// build builds the launch for a dataset fingerprint.
func (r *trainRun) build(fp string) error {
	var err error
	r.launch, r.maps, r.cacheDir, err = r.w.trainLaunch(r.in, r.cfg, r.name, fp)
	return err
}

// prepare builds the launch for the encoded dataset and adds to t's key
// what the key must hold of it: the launch's digest and, on the host, the
// torch it runs on.
func (r *trainRun) prepare(t *dag.Task) error {
	var err error
	if r.manifest, err = readManifest(r.in.TrainPrefix); err != nil {
		return err
	}
	if err := r.build(data.DatasetDigest(r.manifest.Fingerprint).Short()); err != nil {
		return err
	}
	launchJSON, err := json.Marshal(r.launch)
	if err != nil {
		return err
	}
	t.Params["launch"] = cache.HashBytes(workspaceRelative(launchJSON, r.w.root)).String()
	if r.in.Executor.Kind() == executor.KindHost {
		t.Tools["torch"] = executor.HostTorchVersion(r.launch)
	}
	return nil
}

// workspacePlaceholder stands for the workspace's location in what enters
// a key.
const workspacePlaceholder = "${RIVAL_WORKSPACE}"

// workspaceRelative writes every mention of the workspace root in data
// (its path as given and with symlinks resolved) as workspacePlaceholder,
// so a launch (whose paths on the host are absolute) keys alike in every
// checkout of one workspace: two checkouts on one cache share their runs,
// and paths outside the workspace still count as they are.
func workspaceRelative(data []byte, root string) []byte {
	spellings := []string{root}
	if abs, err := filepath.Abs(root); err == nil {
		spellings = append(spellings, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			spellings = append(spellings, real)
		}
	}
	// Longest first, so a spelling that extends another is replaced whole.
	sort.Slice(spellings, func(i, j int) bool { return len(spellings[i]) > len(spellings[j]) })
	for _, sp := range spellings {
		if sp == "" || sp == "/" || sp == "." {
			continue
		}
		data = replacePathPrefix(data, sp, workspacePlaceholder)
	}
	return data
}

// replacePathPrefix replaces the path p in data where it starts a path (at
// the start of a JSON string, or after "=", ":", "," or a space, as in
// "--data-path=P/x" or "PYTHONPATH=a:P/x") and ends one (before "/" or the
// end of the string): never inside a longer path ("/b/ws/x") or a longer
// name ("/ws2").
func replacePathPrefix(data []byte, p, with string) []byte {
	var out []byte
	for {
		i := bytes.Index(data, []byte(p))
		if i < 0 {
			return append(out, data...)
		}
		end := i + len(p)
		startsPath := i == 0 || bytes.IndexByte([]byte(`"=:, `), data[i-1]) >= 0
		endsPath := end < len(data) && (data[end] == '/' || data[end] == '"')
		out = append(out, data[:i]...)
		if startsPath && endsPath {
			out = append(out, with...)
		} else {
			out = append(out, p...)
		}
		data = data[end:]
	}
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
	r.sampleOrder, err = r.writeSampleOrder()
	return err
}

// run trains: the preflight, then the launch with its log, power samples
// and progress, then the log turned into the result.
func (r *trainRun) run(ctx context.Context, x *dag.Exec) error {
	w, in, cfg, name, logPath := r.w, r.in, r.cfg, r.name, r.logPath
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	if err := r.stage(); err != nil {
		return err
	}
	rep, err := runPreflight(ctx, in.Executor, name, r.launch, r.maps)
	if err != nil {
		return err
	}
	r.frameworkSamples = rep.Samples // equal to Rival's: RunPreflight stops the run otherwise
	if r.effective = rep.Effective; rep.Ran != "" && r.launch.RanFile == "" {
		// (A launch with a RanFile records what ran itself, from the training processes.)
		// What the image holds, read inside it, ahead of the pin the launch was built for.
		r.launch.FrameworkVersion = rep.Ran + "; built for " + r.launch.FrameworkVersion
	}
	if r.cpuPrec.Precision != "" {
		w.sayPrecisionOnce(x.Log, r.cpuPrec)
	}
	// A rerun (FORCE=1) keeps the previous good log aside until it
	// succeeds: a failure puts it back where the earlier result points.
	keepPrevLog(logPath)
	started := time.Now().UTC()
	// Power is sampled where the job runs: under Slurm each compute node
	// samples its own GPUs (executor.SlurmPower reads them after the job). Step lines are dated as they stream in, and
	// only samples between the first and last measured step count.
	sampleable := in.Executor.Kind() != executor.KindSlurm && in.Executor.Kind() != executor.KindKube && (in.Executor.Kind() != executor.KindHost || in.Platform != hw.PlatformCPU)
	sampler := startPowerSampler(ctx, in.Platform, sampleable)
	clock := &stepClock{}
	prog := newStepProgress(x.Log, x.Task.ID, cfg.int("TRAIN_ITERS"), cfg.int("SL"))
	if in.Platform == hw.PlatformCPU {
		prog.unit = "process"
	}
	info, runErr := w.runAndLog(ctx, x, in, r.launch, r.maps, logPath, prog, clock)
	sampler.halt()
	finished := time.Now().UTC()
	if runErr != nil {
		prog.finish(nil)
		w.recordFailure(r.runDir, logPath, name, runErr)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("stopped after TRAIN_TIMEOUT=%s; log kept at %s", cfg.get("TRAIN_TIMEOUT"), failedLog(logPath))
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
	if info.Ran != "" && r.launch.RanFile == "" && !strings.Contains(r.launch.FrameworkVersion, "; built for ") {
		// Under Slurm the preflight is the job's first step: what it read in the image.
		r.launch.FrameworkVersion = info.Ran + "; built for " + r.launch.FrameworkVersion
	}
	res, err := w.buildResult(in, cfg, r.launch, r.manifest, logPath)
	if err != nil {
		prog.finish(nil)
		w.recordFailure(r.runDir, logPath, name, err)
		return fmt.Errorf("%w; log kept at %s", err, failedLog(logPath))
	}
	prog.finish(&res.PerformanceMetrics)
	res.Provenance = w.provenance(in, cfg, r.launch, info, started, finished, r.absPrefix)
	fwSHA := ""
	if r.frameworkSamples != nil {
		fwSHA = r.frameworkSamples.SHA256
	}
	res.SampleOrder = r.sampleOrder.WithFramework(fwSHA)
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

// digestBatches is how many global batches a run's sample digest covers.
const digestBatches = 8

// megatronSplit is the --split every Megatron-family launch passes: the whole dataset trains.
const megatronSplit = "100,0,0"

// writeSampleOrder writes the run's sample order (Megatron's GPTDataset document, sample and
// shuffle indices for SEED, SL and TRAIN_ITERS × GBS samples) into the dataset fingerprint's cache
// folder, where fsdp's train.py and titan's extension read it, and returns what the result records:
// the order and the BLAKE3 and SHA-256 of the first digestBatches global batches. It sets the launch's
// Samples to the SHA-256, which each framework's preflight must print for the samples its own data
// path reads (docs/sample-order.md).
func (r *trainRun) writeSampleOrder() (*result.SampleOrder, error) {
	f := fairFromConfig(r.cfg)
	if f.Seed < 0 || int64(f.Seed) > 1<<32-1 {
		return nil, fmt.Errorf("train %s: SEED %d: Megatron's sample order seeds NumPy's RandomState, which takes [0, 2^32-1]", r.name, f.Seed)
	}
	ds, err := indexed.Open(r.absPrefix)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample order: %w", r.name, err)
	}
	defer ds.Close()
	lengths := ds.Lengths()
	beg, end, err := gptorder.TrainRange(megatronSplit, len(lengths))
	if err != nil {
		return nil, fmt.Errorf("train %s: %w", r.name, err)
	}
	o := gptorder.Order{Seed: uint32(f.Seed), SeqLen: f.SL, NumSamples: int64(f.TrainIters) * int64(f.GBS), AddExtraToken: true}
	x, err := gptorder.Build(lengths, beg, end, o)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample order of %s: %w", r.name, r.absPrefix, err)
	}
	if err := x.Write(r.cacheDir); err != nil {
		return nil, fmt.Errorf("train %s: %w", r.name, err)
	}
	n := min(int64(digestBatches)*int64(f.GBS), o.NumSamples)
	digest, err := x.Digest(ds, n)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample digest: %w", r.name, err)
	}
	sha, err := x.SHA256(ds, n)
	if err != nil {
		return nil, fmt.Errorf("train %s: sample digest: %w", r.name, err)
	}
	// The preflight (on this host, or the cluster job's first step) digests the same samples through
	// the framework's own data path; RunPreflight and preflightLines compare the two.
	r.launch.Samples = &core.SampleDigest{Samples: n, SHA256: sha}
	return &result.SampleOrder{
		Order: "megatron-gptdataset", Seed: int64(f.Seed), SequenceLength: f.SL, Samples: o.NumSamples,
		DigestSamples: n, BLAKE3: digest, SHA256: sha,
	}, nil
}

// trainLaunch builds the framework launch of a run for a dataset
// fingerprint, with the directories placed where the executor shows them.
func (w *Workspace) trainLaunch(in trainInputs, cfg *config, name, fp string) (core.Launch, []executor.PathMap, string, error) {
	runDir := w.path("OUTPUT_DIR", "runs", name)
	absPrefix, err := filepath.Abs(in.TrainPrefix)
	if err != nil {
		return core.Launch{}, nil, "", err
	}
	tokDir, err := filepath.Abs(filepath.Dir(in.Tokenizer.Path))
	if err != nil {
		return core.Launch{}, nil, "", err
	}
	// Megatron caches sample indices by dataset path: one cache folder per
	// dataset fingerprint keeps two datasets from sharing stale indices.
	cacheDir := w.path("DATA_DIR", "megatron-cache", fp)
	maps := in.Executor.Place([]executor.PathMap{
		{Host: filepath.Dir(absPrefix), Inside: "/rival/data", ReadOnly: true, Role: "data"},
		{Host: tokDir, Inside: "/rival/tokenizer", ReadOnly: true, Role: "tokenizer"},
		{Host: runDir, Inside: "/rival/run", Role: "run"},
		{Host: cacheDir, Inside: "/rival/cache", Role: "cache"},
	})
	req := core.Request{
		Platform: in.Platform, Framework: in.Framework, Model: in.Model, Fair: fairFromConfig(cfg), Host: in.Host,
		DataPrefix: executor.Inside(maps, absPrefix), DataCacheDir: executor.Inside(maps, cacheDir), TokenizerPath: executor.Inside(maps, tokDir),
		OutputDir: executor.Inside(maps, runDir), NNodes: cfg.int("NNODES"),
	}
	if in.Platform == hw.PlatformCPU {
		req.GPUs = cpuProcs(cfg)
	}
	l, err := frameworks.Build(req)
	if err != nil {
		return l, nil, "", fmt.Errorf("train %s: %w", name, err)
	}
	return l, maps, cacheDir, nil
}

// slurmScript is the batch script a run would submit (train:slurm-script).
func (w *Workspace) slurmScript(in trainInputs) (string, error) {
	ex, ok := in.Executor.(*executor.Slurm)
	if !ok {
		return "", errors.New("slurm script: the run is not a Slurm run")
	}
	cfg := in.Config
	if cfg == nil {
		cfg = w.config
	}
	fp := "unencoded"
	if m, err := readManifest(in.TrainPrefix); err == nil {
		fp = data.DatasetDigest(m.Fingerprint).Short()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	l, maps, _, err := w.trainLaunch(in, cfg, runName(in.Platform, in.Framework, in.Model, in.Dataset, in.RunIndex), fp)
	if err != nil {
		return "", err
	}
	_, script, err := ex.Job(l, maps)
	return script, err
}

// variantName is RunName with the variant before the repetition:
// train_cpu_fsdp_mistral-proxy_sample_dp2_run3.
func variantName(in trainInputs) string {
	if in.Variant == "" {
		return runName(in.Platform, in.Framework, in.Model, in.Dataset, in.RunIndex)
	}
	return runName(in.Platform, in.Framework, in.Model, in.Dataset+"_"+in.Variant, in.RunIndex)
}

// runSuffix is the repetition part of a task id: " run2" for the second.
func runSuffix(run int) string {
	if run == 0 {
		return ""
	}
	return fmt.Sprintf(" run%d", run+1)
}

// gpuCount is the number of processes a run uses for the TP×PP×DP check:
// GPUs per node times NNODES; on the cpu platform, the data-parallel
// processes DP asks for.
func gpuCount(platform string, host hw.Host, cfg *config) int {
	if platform == hw.PlatformCPU {
		return cpuProcs(cfg) * cfg.int("NNODES")
	}
	return len(host.GPUs) * cfg.int("NNODES")
}

// cpuProcs is the processes per node of a CPU run: TP×PP×DP over NNODES.
func cpuProcs(cfg *config) int {
	return max(1, cfg.int("TP")*cfg.int("PP")*cfg.int("DP")/max(1, cfg.int("NNODES")))
}

// keepPrevLog links an existing log to LOG.prev (no copy).
func keepPrevLog(logPath string) {
	os.Remove(logPath + ".prev")
	if _, err := os.Stat(logPath); err == nil {
		if os.Link(logPath, logPath+".prev") != nil {
			os.Rename(logPath, logPath+".prev")
		}
	}
}

func failedLog(logPath string) string { return strings.TrimSuffix(logPath, ".log") + ".failed.log" }

// recordFailure keeps a failed run's log under a name that is not an
// output, and writes why it failed next to the run's files.
func (w *Workspace) recordFailure(runDir, logPath, name string, cause error) {
	if _, err := os.Stat(logPath + ".partial"); err == nil {
		os.Rename(logPath+".partial", failedLog(logPath))
	} else {
		os.Rename(logPath, failedLog(logPath))
	}
	if _, err := os.Stat(logPath + ".prev"); err == nil {
		os.Rename(logPath+".prev", logPath)
	}
	data, _ := json.MarshalIndent(map[string]string{
		"run": name, "failed_at": time.Now().UTC().Format(time.RFC3339), "reason": cause.Error(), "log": failedLog(logPath),
	}, "", "  ")
	cache.WriteFileAtomic(filepath.Join(runDir, "failure.json"), append(data, '\n'), 0o644)
}

// runAndLog runs the launch, writing every line to the log (through a
// partial file renamed at the end) and showing step progress on prog, whose
// closing line the caller writes once the result is known.
func (w *Workspace) runAndLog(ctx context.Context, x *dag.Exec, in trainInputs, launch core.Launch, maps []executor.PathMap, logPath string, prog *stepProgress, clock *stepClock) (executor.Info, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return executor.Info{}, err
	}
	partial := logPath + ".partial"
	f, err := os.Create(partial)
	if err != nil {
		return executor.Info{}, fmt.Errorf("log %s: %w", partial, err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	var writeErr error
	var mu sync.Mutex
	info, runErr := in.Executor.Run(ctx, launch, maps, func(line string) {
		clock.line(line, time.Now())
		mu.Lock()
		defer mu.Unlock()
		if writeErr == nil {
			if _, err := bw.WriteString(line + "\n"); err != nil {
				writeErr = err
			}
		}
		prog.line(line)
	})
	if err := bw.Flush(); err != nil && writeErr == nil {
		writeErr = err
	}
	if err := f.Sync(); err != nil && writeErr == nil {
		writeErr = err
	}
	f.Close()
	// A finished run's log takes its final name; a failed one's stays
	// partial for recordFailure, so it never replaces a good log.
	if writeErr == nil && runErr == nil {
		os.Rename(partial, logPath)
	}
	if writeErr != nil {
		return info, fmt.Errorf("saving the log %s: %w", logPath, writeErr)
	}
	if runErr != nil {
		return info, runErr
	}
	if info.ExitCode != 0 {
		return info, fmt.Errorf("%s exited with status %d", launch.Framework, info.ExitCode)
	}
	return info, nil
}

// buildResult parses the run's log in its family and turns it, with the
// facts of the run (its dataset's manifest, read once by prepare),
// into its result.
func (w *Workspace) buildResult(in trainInputs, cfg *config, launch core.Launch, manifest data.Manifest, logPath string) (*result.Result, error) {
	family := launch.LogFamily
	if family == "" {
		family = frameworks.LogFamily(launch.Framework)
	}
	lg, err := logparse.ParseFile(logPath, family)
	if err != nil {
		return nil, err
	}
	version := launch.FrameworkVersion
	if launch.RanFile != "" {
		// What ran, as the entry script read it inside the container; the pin stays for reference.
		ran, err := launch.Ran(w.path("OUTPUT_DIR", "runs", runName(in.Platform, in.Framework, in.Model, in.Dataset, in.RunIndex)))
		if err != nil {
			return nil, err
		}
		version = ran + " (pinned: " + launch.FrameworkVersion + ")"
	}
	m, err := models.Lookup(in.Model)
	if err != nil {
		return nil, err
	}
	facts := result.Facts{
		GPUs: gpuCount(in.Platform, in.Host, cfg), SeqLen: cfg.int("SL"), GBS: cfg.int("GBS"), MBS: cfg.int("MBS"),
		Precision: cfg.get("PRECISION"), Platform: in.Platform, Host: &in.Host, Model: m.Name,
		Framework: launch.Framework, FrameworkVersion: version, FrameworkRequested: launch.Requested,
		TP: cfg.int("TP"), PP: cfg.int("PP"),
		DatasetName: in.Dataset, DatasetFingerprint: manifest.Fingerprint.Digest.String(), TokenizerFingerprint: manifest.TokenizerDigest.String(),
		ConfigFingerprint: cfg.fingerprint().String(), ImageDigest: in.Executor.ImageDigest(), RivalVersion: rivalVersion,
	}
	if facts.LogDigest, err = result.LogDigest(logPath); err != nil {
		return nil, err
	}
	if len(in.Host.GPUs) > 0 {
		facts.GPUModel = in.Host.GPUs[0].Model
		if facts.GPUModel == "" {
			facts.GPUModel = in.Host.GPUs[0].Name
		}
	}
	if err := fsdpRuntime(lg, &facts, logPath); err != nil {
		return nil, err
	}
	res, err := result.Build(lg, facts)
	if err != nil {
		return nil, err
	}
	if k := in.Executor.Kind(); in.Platform == hw.PlatformCPU && k != executor.KindSlurm && k != executor.KindKube {
		res.CPUInfo = cpuInfo(cfg, logPath) // this host's CPU; a cluster's node reads its own
	}
	return res, nil
}

// threadsLine is the fsdp trainer's report of the threads each process used.
var threadsLine = regexp.MustCompile(`\| threads per process: (\d+) \|`)

// cpuInfo describes the CPU a run trained on (CPUFlagsPath) and the threads
// it used, as the trainer reported them in its log; nil when the kernel
// lists no processor.
func cpuInfo(cfg *config, logPath string) *result.CPUInfo {
	raw, _ := os.ReadFile(cpuFlagsPath)
	model, cores, logical, ok := cpuDescription(raw)
	if !ok {
		return nil
	}
	ci := &result.CPUInfo{Model: model, Cores: cores, LogicalCPUs: logical, Processes: cpuProcs(cfg)}
	if f, err := os.Open(logPath); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if m := threadsLine.FindStringSubmatch(sc.Text()); m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
					ci.ThreadsPerProcess = &n
				}
				break
			}
		}
	}
	return ci
}

// fsdpRuntime adds what the fsdp trainer reports of the path that ran.
func fsdpRuntime(lg *logparse.Log, facts *result.Facts, logPath string) error {
	// The fsdp trainer reports which of its paths ran, on which torch (docs/fsdp.md).
	if rt, ok, err := fsdp.RuntimeFromArgs(lg.Preamble.Args); err != nil {
		return fmt.Errorf("%s: %w", logPath, err)
	} else if ok {
		facts.FrameworkVersion += "; ran " + rt.String()
	}
	return nil
}

// readManifest reads the encode manifest of a dataset prefix.
func readManifest(prefix string) (data.Manifest, error) {
	raw, err := cache.ReadFileLimit(context.Background(), data.ManifestPath(prefix), cache.LimitManifest)
	if err != nil {
		return data.Manifest{}, fmt.Errorf("dataset %s has no usable manifest: %w (encode it with Rival first)", prefix, err)
	}
	return data.DecodeManifest(data.ManifestPath(prefix), raw)
}

// provenance records how and where a run ran.
func (w *Workspace) provenance(in trainInputs, cfg *config, launch core.Launch, info executor.Info, started, finished time.Time, prefix string) *result.Provenance {
	host, _ := os.Hostname()
	p := &result.Provenance{
		RunIndex: in.RunIndex, Host: host, StartedAt: started.Format(time.RFC3339), FinishedAt: finished.Format(time.RFC3339),
		LaunchCommand: launch.Command, LaunchEnv: launch.Env, DataPrefix: prefix, TokenizerPath: in.Tokenizer.Path,
		NodeList: info.NodeList, Config: cfg.trainingValues(),
	}
	if launch.EntryScriptDigest != "" {
		p.EntryScriptDigest = &launch.EntryScriptDigest
	}
	if launch.Remapped != "" {
		p.Remapped = &launch.Remapped
	}
	for _, s := range []struct {
		v   string
		dst **string
	}{{info.ImageID, &p.ImageID}, {info.ContainerID, &p.ContainerID}, {info.SlurmJobID, &p.SlurmJobID}, {info.KubeJob, &p.KubeJob}} {
		if s.v != "" {
			v := s.v
			*s.dst = &v
		}
	}
	return p
}
