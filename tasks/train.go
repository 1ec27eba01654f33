package tasks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/dag"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/frameworks/spec"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
)

// trainVersion changes every training key when result assembly changes.
const trainVersion = "1"

// TrainInputs name one training run and what it trains on.
type TrainInputs struct {
	Platform, Framework, Model string
	RunIndex                   int // 0-based repetition
	// Variant tells apart configurations of one platform, framework and
	// model trained side by side (the demo's "dp1" and "dp2"); it joins the
	// run's name and task id. Empty for ordinary runs.
	Variant     string
	Dataset     string
	TrainPrefix string // the encoded train split, without .bin/.idx
	Tokenizer   TokenizerSpec
	Encode      *dag.Task // the task producing TrainPrefix
	Host        hw.Host
	Config      *Config
	// Executor runs the launch: on the host for cpu, in a container otherwise.
	Executor Executor
}

// RunName is the file-name stem of a run: train_<platform>_<framework>_<model>_<dataset>[_runN]
// (the original suite's naming, with the repetition when RUNS > 1).
func RunName(platform, framework, model, dataset string, run int) string {
	n := fmt.Sprintf("train_%s_%s_%s_%s", platform, framework, model, dataset)
	if run > 0 {
		n += fmt.Sprintf("_run%d", run+1)
	}
	return n
}

// fairFromConfig converts config.env's training keys into the frameworks'
// Fair configuration.
func fairFromConfig(c *Config) spec.Fair {
	var ranks []int
	for _, r := range c.List("PROFILE_RANKS") {
		if n, err := strconv.Atoi(r); err == nil {
			ranks = append(ranks, n)
		}
	}
	return spec.Fair{
		Seed: c.Int("SEED"), MBS: c.Int("MBS"), SL: c.Int("SL"), GA: c.Int("GA"), GBS: c.Int("GBS"),
		TP: c.Int("TP"), PP: c.Int("PP"), DP: c.Int("DP"), TrainIters: c.Int("TRAIN_ITERS"), WarmupSteps: c.Int("WARMUP_STEPS"),
		LR: c.Float("LR"), MinLR: c.Float("MIN_LR"), WeightDecay: c.Float("WEIGHT_DECAY"), Beta1: c.Float("BETA1"), Beta2: c.Float("BETA2"),
		Precision: c.Get("PRECISION"), Profile: c.Bool("PROFILE"), ProfileStepStart: c.Int("PROFILE_STEP_START"),
		ProfileStepEnd: c.Int("PROFILE_STEP_END"), ProfileRanks: ranks,
	}
}

// TrainTask builds one training run: launch, log, parse, result.
func (w *Workspace) TrainTask(in TrainInputs) (*dag.Task, error) {
	cfg := in.Config
	if cfg == nil {
		cfg = w.Config
	}
	// A CPU trains in the precision it does fast; the configuration says so
	// before anything is fingerprinted, so the key, the launch, the log and
	// the result all name the precision that ran.
	var cpuPrec CPUPrecision
	if in.Platform == hw.PlatformCPU {
		var err error
		if cfg, cpuPrec, err = cpuTrainConfig(cfg); err != nil {
			return nil, err
		}
		in.Config = cfg
	}
	name := variantName(in)
	runDir := w.Path("OUTPUT_DIR", "runs", name)
	logPath := w.Path("OUTPUT_DIR", "logs", name+".log")
	resultPath := w.Path("OUTPUT_DIR", name+".json")
	absPrefix, err := filepath.Abs(in.TrainPrefix)
	if err != nil {
		return nil, err
	}
	// The launch names a per-dataset-fingerprint cache folder; the
	// fingerprint is known once the dataset is encoded, so the launch is
	// built again in Prepare; the plan-time build catches bad requests early.
	var launch spec.Launch
	var maps []PathMap
	var cacheDir string
	build := func(fp string) error {
		var err error
		launch, maps, cacheDir, err = w.trainLaunch(in, cfg, name, fp)
		return err
	}
	if err := build("unencoded"); err != nil {
		return nil, err
	}
	if err := cfg.CheckGPUs(gpuCount(in.Platform, in.Host, cfg)); err != nil {
		return nil, fmt.Errorf("train %s: %w", name, err)
	}
	params := map[string]string{
		"platform": in.Platform, "framework": in.Framework, "model": in.Model, "run": strconv.Itoa(in.RunIndex),
		"hardware": in.Host.Fingerprint(),
	}
	for k, v := range cfg.TrainingValues() {
		params["cfg."+k] = v
	}
	tools := map[string]string{"train": trainVersion, "executor": string(in.Executor.Kind()), "image": in.Executor.ImageDigest()}
	t := &dag.Task{
		ID:        strings.Join(strings.Fields("train "+in.Platform+" "+in.Framework+" "+in.Model+" "+in.Variant), " ") + runSuffix(in.RunIndex),
		Deps:      []*dag.Task{in.Encode},
		Files:     []string{in.Tokenizer.Path},
		Params:    params,
		Tools:     tools,
		Outputs:   []dag.Output{{Path: resultPath, Compress: true}, {Path: logPath, Compress: true}},
		Exclusive: true,
		Force:     cfg.Bool("FORCE"),
	}
	if in.Encode == nil {
		t.Deps = nil
		t.Files = append(t.Files, absPrefix+".bin", absPrefix+".idx")
	}
	t.Prepare = func(ctx context.Context) error {
		m, err := readManifest(in.TrainPrefix)
		if err != nil {
			return err
		}
		if err := build(datasetDigest(m.Fingerprint).Short()); err != nil {
			return err
		}
		launchJSON, err := json.Marshal(launch)
		if err != nil {
			return err
		}
		t.Params["launch"] = cache.HashBytes(launchJSON).String()
		if in.Executor.Kind() == ExecutorHost {
			t.Tools["torch"] = hostTorchVersion(launch)
		}
		return nil
	}
	timeout, _ := ParseAge(cfg.Get("TRAIN_TIMEOUT"))
	t.Run = func(ctx context.Context, x *dag.Exec) error {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		for _, d := range []string{runDir, cacheDir} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		if launch.RanFile != "" {
			// A reused run folder may hold an earlier run's record: this run must write its own.
			if err := os.Remove(filepath.Join(runDir, filepath.FromSlash(launch.RanFile))); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("train %s: removing an earlier run's record of what ran: %w", name, err)
			}
		}
		for rel, data := range launch.Files {
			if err := cache.WriteFileAtomic(filepath.Join(runDir, filepath.FromSlash(rel)), data, 0o644); err != nil {
				return err
			}
		}
		if _, ran, err := RunPreflight(ctx, in.Executor, name, launch, maps); err != nil {
			return err
		} else if ran != "" && launch.RanFile == "" {
			// (A launch with a RanFile records what ran itself, from the training processes.)
			// What the image holds, read inside it, ahead of the pin the launch was built for.
			launch.FrameworkVersion = ran + "; built for " + launch.FrameworkVersion
		}
		if cpuPrec.Precision != "" {
			w.sayPrecisionOnce(x.Log, cpuPrec)
		}
		// A rerun (FORCE=1) keeps the previous good log aside until it
		// succeeds: a failure puts it back where the earlier result points.
		keepPrevLog(logPath)
		started := time.Now().UTC()
		// Power is sampled where the job runs: under Slurm each compute node
		// samples its own GPUs (slurmPower reads them after the job). Step lines are dated as they stream in, and
		// only samples between the first and last measured step count.
		sampleable := in.Executor.Kind() != ExecutorSlurm && (in.Executor.Kind() != ExecutorHost || in.Platform != hw.PlatformCPU)
		sampler := startPowerSampler(ctx, in.Platform, sampleable)
		clock := &stepClock{}
		info, runErr := w.runAndLog(ctx, x, in, launch, maps, logPath, cfg.Int("TRAIN_ITERS"), clock)
		sampler.halt()
		finished := time.Now().UTC()
		if runErr != nil {
			w.recordFailure(runDir, logPath, name, runErr)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("stopped after TRAIN_TIMEOUT=%s; log kept at %s", cfg.Get("TRAIN_TIMEOUT"), failedLog(logPath))
			}
			return fmt.Errorf("%w; log kept at %s", runErr, failedLog(logPath))
		}
		if info.Ran != "" && launch.RanFile == "" && !strings.Contains(launch.FrameworkVersion, "; built for ") {
			// Under Slurm the preflight is the job's first step: what it read in the image.
			launch.FrameworkVersion = info.Ran + "; built for " + launch.FrameworkVersion
		}
		res, err := w.buildResult(in, cfg, launch, logPath)
		if err != nil {
			w.recordFailure(runDir, logPath, name, err)
			return fmt.Errorf("%w; log kept at %s", err, failedLog(logPath))
		}
		res.Provenance = w.provenance(in, cfg, launch, info, started, finished, absPrefix)
		from, to, dated := clock.window(res.WarmupStepsExcluded)
		res.PowerMetrics = sampler.summary(from, to, dated, runGPUs(launch.Env, in.Host))
		if in.Executor.Kind() == ExecutorSlurm {
			res.PowerMetrics = slurmPower(runDir, in.Platform, from, to, dated)
		}
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := result.Validate(data); err != nil {
			return fmt.Errorf("result of %s does not match the schema: %w", name, err)
		}
		if err := cache.WriteFileAtomic(resultPath, append(data, '\n'), 0o644); err != nil {
			return err
		}
		// This run stands: an earlier failure's leftovers are stale.
		os.Remove(logPath + ".prev")
		os.Remove(failedLog(logPath))
		os.Remove(filepath.Join(runDir, "failure.json"))
		return nil
	}
	return t, nil
}

// trainLaunch builds the framework launch of a run for a dataset
// fingerprint, with the directories placed where the executor shows them.
func (w *Workspace) trainLaunch(in TrainInputs, cfg *Config, name, fp string) (spec.Launch, []PathMap, string, error) {
	runDir := w.Path("OUTPUT_DIR", "runs", name)
	absPrefix, err := filepath.Abs(in.TrainPrefix)
	if err != nil {
		return spec.Launch{}, nil, "", err
	}
	tokDir, err := filepath.Abs(filepath.Dir(in.Tokenizer.Path))
	if err != nil {
		return spec.Launch{}, nil, "", err
	}
	// Megatron caches sample indices by dataset path: one cache folder per
	// dataset fingerprint keeps two datasets from sharing stale indices.
	cacheDir := w.Path("DATA_DIR", "megatron-cache", fp)
	maps := in.Executor.Place([]PathMap{
		{Host: filepath.Dir(absPrefix), Inside: "/rival/data", ReadOnly: true, Role: "data"},
		{Host: tokDir, Inside: "/rival/tokenizer", ReadOnly: true, Role: "tokenizer"},
		{Host: runDir, Inside: "/rival/run", Role: "run"},
		{Host: cacheDir, Inside: "/rival/cache", Role: "cache"},
	})
	req := spec.Request{
		Platform: in.Platform, Framework: in.Framework, Model: in.Model, Fair: fairFromConfig(cfg), Host: in.Host,
		DataPrefix: inside(maps, absPrefix), DataCacheDir: inside(maps, cacheDir), TokenizerPath: inside(maps, tokDir),
		OutputDir: inside(maps, runDir), NNodes: cfg.Int("NNODES"),
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

// SlurmScript is the batch script a run would submit (train:slurm-script).
func (w *Workspace) SlurmScript(in TrainInputs) (string, error) {
	ex, ok := in.Executor.(*SlurmExecutor)
	if !ok {
		return "", errors.New("slurm script: the run is not a Slurm run")
	}
	cfg := in.Config
	if cfg == nil {
		cfg = w.Config
	}
	fp := "unencoded"
	if m, err := readManifest(in.TrainPrefix); err == nil {
		fp = datasetDigest(m.Fingerprint).Short()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	l, maps, _, err := w.trainLaunch(in, cfg, RunName(in.Platform, in.Framework, in.Model, in.Dataset, in.RunIndex), fp)
	if err != nil {
		return "", err
	}
	_, script, err := ex.Job(l, maps)
	return script, err
}

// variantName is RunName with the variant before the repetition:
// train_cpu_fsdp_mistral-proxy_sample_dp2_run3.
func variantName(in TrainInputs) string {
	if in.Variant == "" {
		return RunName(in.Platform, in.Framework, in.Model, in.Dataset, in.RunIndex)
	}
	return RunName(in.Platform, in.Framework, in.Model, in.Dataset+"_"+in.Variant, in.RunIndex)
}

func runSuffix(run int) string {
	if run == 0 {
		return ""
	}
	return fmt.Sprintf(" run%d", run+1)
}

// gpuCount is the number of processes a run uses for the TP×PP×DP check:
// GPUs per node times NNODES; on the cpu platform, the data-parallel
// processes DP asks for.
func gpuCount(platform string, host hw.Host, cfg *Config) int {
	if platform == hw.PlatformCPU {
		return cpuProcs(cfg) * cfg.Int("NNODES")
	}
	return len(host.GPUs) * cfg.Int("NNODES")
}

// cpuProcs is the processes per node of a CPU run: TP×PP×DP over NNODES.
func cpuProcs(cfg *Config) int {
	return max(1, cfg.Int("TP")*cfg.Int("PP")*cfg.Int("DP")/max(1, cfg.Int("NNODES")))
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
// partial file renamed at the end) and showing step progress.
func (w *Workspace) runAndLog(ctx context.Context, x *dag.Exec, in TrainInputs, launch spec.Launch, maps []PathMap, logPath string, total int, clock *stepClock) (ExecInfo, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return ExecInfo{}, err
	}
	partial := logPath + ".partial"
	f, err := os.Create(partial)
	if err != nil {
		return ExecInfo{}, fmt.Errorf("log %s: %w", partial, err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	prog := newStepProgress(x.Log, x.Task.ID, total, in.Config.Int("SL"))
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
	prog.finish()
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

func (w *Workspace) buildResult(in TrainInputs, cfg *Config, launch spec.Launch, logPath string) (*result.Result, error) {
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
		ran, err := launch.Ran(w.Path("OUTPUT_DIR", "runs", RunName(in.Platform, in.Framework, in.Model, in.Dataset, in.RunIndex)))
		if err != nil {
			return nil, err
		}
		version = ran + " (pinned: " + launch.FrameworkVersion + ")"
	}
	m, err := models.Lookup(in.Model)
	if err != nil {
		return nil, err
	}
	manifest, err := readManifest(in.TrainPrefix)
	if err != nil {
		return nil, err
	}
	facts := result.Facts{
		GPUs: gpuCount(in.Platform, in.Host, cfg), SeqLen: cfg.Int("SL"), GBS: cfg.Int("GBS"), MBS: cfg.Int("MBS"),
		Precision: cfg.Get("PRECISION"), Platform: in.Platform, Host: &in.Host, Model: m.Name,
		Framework: launch.Framework, FrameworkVersion: version, FrameworkRequested: launch.Requested,
		TP: cfg.Int("TP"), PP: cfg.Int("PP"),
		DatasetName: in.Dataset, DatasetFingerprint: manifest.Fingerprint.Digest, TokenizerFingerprint: manifest.TokenizerDigest.String(),
		ConfigFingerprint: cfg.Fingerprint().String(), ImageDigest: in.Executor.ImageDigest(), RivalVersion: Version,
	}
	if len(in.Host.GPUs) > 0 {
		facts.GPUModel = in.Host.GPUs[0].Model
		if facts.GPUModel == "" {
			facts.GPUModel = in.Host.GPUs[0].Name
		}
	}
	// The fsdp trainer reports which of its paths ran, on which torch (docs/fsdp.md).
	if rt, ok, err := fsdp.RuntimeFromArgs(lg.Preamble.Args); err != nil {
		return nil, fmt.Errorf("%s: %w", logPath, err)
	} else if ok {
		facts.FrameworkVersion += "; ran " + rt.String()
	}
	return result.Build(lg, facts)
}

func readManifest(prefix string) (EncodeManifest, error) {
	data, err := os.ReadFile(ManifestPath(prefix))
	if err != nil {
		return EncodeManifest{}, fmt.Errorf("dataset %s has no manifest: %w (encode it with Rival first)", prefix, err)
	}
	return decodeManifest(ManifestPath(prefix), data)
}

func (w *Workspace) provenance(in TrainInputs, cfg *Config, launch spec.Launch, info ExecInfo, started, finished time.Time, prefix string) *result.Provenance {
	host, _ := os.Hostname()
	p := &result.Provenance{
		RunIndex: in.RunIndex, Host: host, StartedAt: started.Format(time.RFC3339), FinishedAt: finished.Format(time.RFC3339),
		LaunchCommand: launch.Command, LaunchEnv: launch.Env, DataPrefix: prefix, TokenizerPath: in.Tokenizer.Path,
		NodeList: info.NodeList, Config: cfg.TrainingValues(),
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
	}{{info.ImageID, &p.ImageID}, {info.ContainerID, &p.ContainerID}, {info.SlurmJobID, &p.SlurmJobID}} {
		if s.v != "" {
			v := s.v
			*s.dst = &v
		}
	}
	return p
}
