// Package result builds Rival's result JSON: one file per benchmark run, holding the
// old suite's fields (platform, gpu_info, training_config, parallelism_config,
// performance_metrics, memory_metrics, step_times, loss_values, learning_rates) plus
// provenance and statistics. Units are in field names; unknown values are null, never 0.
//
// [Build] makes a [Result] from a parsed log (frameworks/logparse) and the [Facts] of the run
// around it; [Extract] does the same for a log Rival did not launch; [Validate] checks a document
// against the JSON Schema in [SchemaJSON]. It reads models and hw for the figures it derives;
// compare and tasks import it.
package result

import (
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/frameworks/logparse"
)

// SchemaVersion is written into every result; bump it when a field changes meaning.
const SchemaVersion = "1.0"

// Result is the unified result of one run. Field names are stable: tooling (pandas
// json_normalize, the comparison report) reads them.
type Result struct {
	SchemaVersion        string  `json:"schema_version"`
	RivalVersion         *string `json:"rival_version"`
	Platform             *string `json:"platform"` // "nvd", "amd", "cpu"; null when unknown
	HardwareFingerprint  *string `json:"hardware_fingerprint"`
	ImageDigest          *string `json:"image_digest"`
	ConfigFingerprint    *string `json:"config_fingerprint"`
	TokenizerFingerprint *string `json:"tokenizer_fingerprint"`

	Framework Framework `json:"framework"`
	Model     Model     `json:"model"`
	Dataset   Dataset   `json:"dataset"`
	GPUInfo   GPUInfo   `json:"gpu_info"`
	// CPUInfo describes the processor of a CPU run (platform cpu), where gpu_info names no
	// device; absent for GPU runs and extracted logs.
	CPUInfo           *CPUInfo          `json:"cpu_info,omitempty"`
	TrainingConfig    TrainingConfig    `json:"training_config"`
	ParallelismConfig ParallelismConfig `json:"parallelism_config"`

	WarmupStepsExcluded int                `json:"warmup_steps_excluded"`
	PerformanceMetrics  PerformanceMetrics `json:"performance_metrics"`
	MemoryMetrics       MemoryMetrics      `json:"memory_metrics"`

	// Per logged step, aligned: step_numbers[i] is the iteration that printed
	// step_times[i], loss_values[i], learning_rates[i] and grad_norms[i]. Warm-up steps
	// are included (warmup_steps_excluded says how many lead the list). A log with
	// more than 4096 steps keeps every step_series_stride-th step (a power of two),
	// so a result's size is bounded; the statistics use every step.
	StepSeriesStride int        `json:"step_series_stride,omitempty"`
	StepNumbers      []int      `json:"step_numbers"`
	StepTimes        []*float64 `json:"step_times"` // seconds
	LossValues       []*float64 `json:"loss_values"`
	LearningRates    []*float64 `json:"learning_rates"`
	GradNorms        []*float64 `json:"grad_norms"`

	// Evaluations are the run's held-out evaluations, in the order the log printed them; absent
	// when it printed none.
	Evaluations []Evaluation `json:"evaluations,omitempty"`
	// MLPerf is what an MLPerf MLLOG result file says of the run as a whole; absent for other logs.
	MLPerf *MLPerfRun `json:"mlperf,omitempty"`

	Log      LogInfo   `json:"log"`
	Problems []Problem `json:"problems"`

	// Set for runs Rival launched (absent from extracted logs).
	PowerMetrics *PowerMetrics `json:"power_metrics,omitempty"`
	Provenance   *Provenance   `json:"provenance,omitempty"`
	// SampleOrder names the order the run's samples came in and digests the first of them, so
	// that runs of different frameworks show they trained on the same batches (docs/sample-order.md).
	SampleOrder *SampleOrder `json:"sample_order,omitempty"`
	// HeldOut is the held-out set a run Rival launched was to evaluate (EVAL_INTERVAL_SAMPLES): what it
	// is, its digest and the framework's own, and how the framework evaluated it or why it did not.
	HeldOut *HeldOut `json:"held_out,omitempty"`
	// EffectiveConfig is what the framework built, read back by the run's preflight from the
	// framework's own objects (frameworks/effective); absent when the preflight does not report it.
	EffectiveConfig *effective.Config `json:"effective_config,omitempty"`
	// warmupRule says which rule chose WarmupStepsExcluded, for extract -v.
	warmupRule string
}

// SampleOrder is the order a run reads its training samples in: Megatron's GPTDataset order for the
// seed, sequence length and sample count, which every framework Rival launches reads (gptorder).
type SampleOrder struct {
	Order          string `json:"order"` // "megatron-gptdataset"
	Seed           int64  `json:"seed"`
	SequenceLength int    `json:"sequence_length"`
	Samples        int64  `json:"samples"`        // train_iters × global batch size
	DigestSamples  int64  `json:"digest_samples"` // how many samples the digest covers, from the first
	// BLAKE3 is over the first DigestSamples samples in training order (global batch by global
	// batch, data-parallel rank by rank), each as its sequence_length + 1 token ids in
	// little-endian int64.
	BLAKE3 string `json:"blake3"`
	// SHA256 is over the same bytes as BLAKE3: the digest the preflights print.
	SHA256 string `json:"sha256,omitempty"`
	// FrameworkSHA256 is the framework's own digest of its first DigestSamples samples, printed by its
	// preflight through its own data path and checked equal to SHA256 before training (a preflight
	// that prints none stops the run); null for a run without a preflight.
	FrameworkSHA256 *string `json:"framework_sha256"`
}

// WithFramework is o with the framework's preflight digest recorded ("": none reported).
func (o *SampleOrder) WithFramework(sha256 string) *SampleOrder {
	if o == nil {
		return nil
	}
	c := *o
	c.FrameworkSHA256 = nil
	if sha256 != "" {
		c.FrameworkSHA256 = &sha256
	}
	return &c
}

// PowerMetrics summarise GPU power and memory sampled while a run trained.
type PowerMetrics struct {
	Source              string   `json:"source"` // "nvidia-smi", "amd-smi", or "none"
	Samples             int      `json:"samples"`
	IntervalSeconds     float64  `json:"interval_seconds"`
	AvgPowerWattsPerGPU *float64 `json:"avg_power_watts_per_gpu"`
	MaxPowerWattsPerGPU *float64 `json:"max_power_watts_per_gpu"`
	MaxMemoryUsedMiB    *float64 `json:"max_memory_used_mib"`
}

// Provenance is everything needed to prove what a run used and to redo it.
type Provenance struct {
	RunIndex          int               `json:"run_index"`
	Host              string            `json:"host"`
	StartedAt         string            `json:"started_at"`  // RFC 3339, UTC
	FinishedAt        string            `json:"finished_at"` // RFC 3339, UTC
	EntryScriptDigest *string           `json:"entry_script_digest"`
	Remapped          *string           `json:"remapped"` // why the framework run differs from the one asked
	LaunchCommand     []string          `json:"launch_command"`
	LaunchEnv         map[string]string `json:"launch_env"`
	DataPrefix        string            `json:"data_prefix"`
	TokenizerPath     string            `json:"tokenizer_path"`
	ImageID           *string           `json:"image_id"`
	ContainerID       *string           `json:"container_id"`
	SlurmJobID        *string           `json:"slurm_job_id"`
	KubeJob           *string           `json:"kube_job,omitempty"` // CLUSTER/NAMESPACE/NAME of a Kubernetes run
	NodeList          []string          `json:"node_list"`
	Config            map[string]string `json:"config"` // the training keys of config.env as used
}

// Framework says what trained: Name is what ran, Requested what was asked for when a
// platform maps it to another (a "prim" run on NVIDIA runs NeMo).
type Framework struct {
	Name      string  `json:"name"`
	Version   *string `json:"version"`
	Requested *string `json:"requested"`
	// Stack names the pinned image of the run's software stack (core.Pin.Name, e.g. "nemo:26.06");
	// absent on cpu and when extracted from a log.
	Stack string `json:"stack,omitempty"`
}

// Model names the trained model; Proxy is true for the small stand-ins.
type Model struct {
	Name                *string `json:"name"`
	DisplayName         *string `json:"display_name"`
	Proxy               *bool   `json:"proxy"`
	ParameterCount      *int64  `json:"parameter_count"`
	ParameterCountExact *bool   `json:"parameter_count_exact"`
}

// Dataset identifies the training data.
type Dataset struct {
	Name        *string `json:"name"`
	Fingerprint *string `json:"fingerprint"`
}

// GPUInfo describes the accelerators of the run.
type GPUInfo struct {
	DeviceCount     *int     `json:"device_count"`
	DeviceName      *string  `json:"device_name"` // as the detection tool or the user named it
	SpecModel       *string  `json:"spec_model"`  // key of the spec table; null when unknown
	MemoryPerGPUMiB *int64   `json:"memory_per_gpu_mib"`
	PeakTFLOPsDense *float64 `json:"peak_tflops_per_gpu_dense"` // at training_config.precision
	TDPWatts        *float64 `json:"tdp_watts"`
	// DriverVersion is the GPU driver detection read (nvidia-smi's driver_version, amd-smi's
	// driver); absent for extracted logs, which do not print it.
	DriverVersion *string `json:"driver_version,omitempty"`
}

// CPUInfo is the processor a CPU run trained on, from /proc/cpuinfo, and how much of it the
// run used: ThreadsPerProcess × Processes threads on each node.
type CPUInfo struct {
	Model             string `json:"model"`               // /proc/cpuinfo's "model name"
	Cores             int    `json:"cores"`               // physical cores of the node
	LogicalCPUs       int    `json:"logical_cpus"`        // hardware threads of the node
	Processes         int    `json:"processes"`           // training processes per node
	ThreadsPerProcess *int   `json:"threads_per_process"` // as the trainer reported it; null when it did not
}

// TrainingConfig holds the shape of the run.
type TrainingConfig struct {
	NumGPUs          *int   `json:"num_gpus"`
	GlobalBatchSize  *int   `json:"global_batch_size"`
	MicroBatchSize   *int   `json:"micro_batch_size"`
	SequenceLength   *int   `json:"sequence_length"`
	Precision        string `json:"precision"`
	PrecisionAssumed bool   `json:"precision_assumed"`
	TrainIters       *int   `json:"train_iters"`
	StepsLogged      int    `json:"steps_logged"`
}

// ParallelismConfig holds the model/data parallel degrees when known.
type ParallelismConfig struct {
	TensorParallel   *int `json:"tensor_parallel"`
	PipelineParallel *int `json:"pipeline_parallel"`
	ContextParallel  *int `json:"context_parallel"`
	DataParallel     *int `json:"data_parallel"`
}

// PerformanceMetrics are computed over the measured steps (warm-up excluded).
type PerformanceMetrics struct {
	MeasuredSteps         int     `json:"measured_steps"`
	StepTimeSource        string  `json:"step_time_source"` // "log" or "derived_from_framework_tokens_per_second"
	AvgStepTimeSeconds    float64 `json:"avg_step_time_seconds"`
	MedianStepTimeSeconds float64 `json:"median_step_time_seconds"`
	P10StepTimeSeconds    float64 `json:"p10_step_time_seconds"`
	P90StepTimeSeconds    float64 `json:"p90_step_time_seconds"`
	MinStepTimeSeconds    float64 `json:"min_step_time_seconds"`
	MaxStepTimeSeconds    float64 `json:"max_step_time_seconds"`
	StdStepTimeSeconds    float64 `json:"std_step_time_seconds"`
	// QuantilesExact is false when the log had more than 2^20 measured steps and the
	// median and percentiles come from a histogram (at most 0.1% relative error).
	QuantilesExact bool `json:"quantiles_exact"`
	// HeadlineStatistic, TokensPerSecondPerGPUMean and Result.StepSeriesStride are
	// always set by Build; they are omitted only from results made by hand (older
	// tools, tests), which then still validate.
	//
	// HeadlineStatistic names the step-time statistic behind steps_per_second,
	// tokens_per_second(_per_gpu), tflops_per_gpu and mfu_percent: "median_step_time".
	HeadlineStatistic     string  `json:"headline_statistic,omitempty"`
	StepsPerSecond        float64 `json:"steps_per_second"`
	TokensPerStep         int64   `json:"tokens_per_step"`
	TokensPerSecond       float64 `json:"tokens_per_second"`
	TokensPerSecondPerGPU float64 `json:"tokens_per_second_per_gpu"`
	// TokensPerSecondPerGPUMean is the same figure from the mean step time.
	TokensPerSecondPerGPUMean float64 `json:"tokens_per_second_per_gpu_mean,omitempty"`
	// FrameworkTokensPerSecondGapPercent is how far the framework's own tokens/s/GPU
	// lies from tokens_per_second_per_gpu, in percent (null when it prints none).
	FrameworkTokensPerSecondGapPercent *float64 `json:"framework_tokens_per_second_gap_percent"`
	ModelFLOPsPerToken                 *float64 `json:"model_flops_per_token"`
	// TFLOPsPerGPU and MFUPercent are Rival's own: model_flops_per_token (Megatron's
	// causal formula) × tokens_per_second_per_gpu, over the GPU's dense peak.
	TFLOPsPerGPU *float64 `json:"tflops_per_gpu"`
	MFUPercent   *float64 `json:"mfu_percent"`
	// The framework's own printed figures (means over the measured steps), each
	// counted its own way; kept for reference, never compared across frameworks.
	FrameworkReportedTFLOPsPerGPU          *float64 `json:"framework_reported_tflops_per_gpu"`
	FrameworkReportedTokensPerSecondPerGPU *float64 `json:"framework_reported_tokens_per_second_per_gpu"`
	FrameworkReportedMFUPercent            *float64 `json:"framework_reported_mfu_percent"`
}

// MemoryMetrics are per-GPU peaks in MiB (2^20 bytes) over the whole log.
type MemoryMetrics struct {
	PeakAllocatedMiB  *float64 `json:"peak_allocated_mib"`
	PeakReservedMiB   *float64 `json:"peak_reserved_mib"`
	PeakDeviceUsedMiB *float64 `json:"peak_device_used_mib"`
	DeviceTotalMiB    *float64 `json:"device_total_mib"`
	PeakUsedFraction  *float64 `json:"peak_used_fraction"`
}

// LogInfo says where the numbers came from and how healthy the log was.
type LogInfo struct {
	Source string `json:"source"`
	// Digest is "blake3:<hex>" of the log file's bytes, so that the result
	// can be checked against the log it was built from (verify:result
	// parses it again); empty in results made without the file.
	Digest            string  `json:"digest,omitempty"`
	FrameworkDetected *string `json:"framework_detected"`
	Rank              *int    `json:"rank"`
	// The parser's counts, embedded so their keys sit at this level:
	// lines, cut_lines, long_lines, duplicate_steps, other_rank_lines,
	// non_finite_values.
	logparse.Stats
	SkippedIterations int `json:"skipped_iterations"`
	NaNIterations     int `json:"nan_iterations"`
}

// Evaluation is one held-out evaluation: the mean cross-entropy per token over the evaluated
// sequences after some training.
type Evaluation struct {
	// Set is "validation" for the periodic evaluation during training (or the set's own name),
	// "validation-final" and "test" for Megatron's evaluations after training.
	Set  string `json:"set"`
	Step int    `json:"step"` // training iterations done before it
	// SamplesSeen and TokensSeen are the training samples and tokens before it: as the log
	// printed them (MLLOG), else step × global batch size (× sequence length); null when unknown.
	SamplesSeen *int64   `json:"samples_seen"`
	TokensSeen  *int64   `json:"tokens_seen"`
	Loss        float64  `json:"loss"`       // nats per token
	Perplexity  *float64 `json:"perplexity"` // exp(loss); null where it overflows
	// WallSeconds is the time from the start of training to the end of this evaluation, everything
	// included, where the log has a clock (MLLOG); null elsewhere.
	WallSeconds *float64 `json:"wall_seconds"`
	// TrainSeconds is the training time before it: the logged step times, each counted for the
	// iterations it stands for (evaluations and checkpoints left out).
	TrainSeconds *float64 `json:"train_seconds"`
}

// HeldOut is a run's held-out set: Sequences windows of SequenceLength+1 tokens cut, in file order,
// from the start of the encoded test split Source, evaluated every IntervalSamples training samples.
type HeldOut struct {
	Source          string `json:"source"`
	Sequences       int    `json:"sequences"`
	SequenceLength  int    `json:"sequence_length"`
	IntervalSamples int    `json:"interval_samples"`
	// BLAKE3 and SHA256 are over the sequences in order, each token a little-endian int64.
	BLAKE3 string `json:"blake3"`
	SHA256 string `json:"sha256"`
	// FrameworkSHA256 is the framework's own digest of the sequences its evaluation reads, printed by
	// its preflight and checked equal to SHA256 before training; null when it printed none.
	FrameworkSHA256 *string `json:"framework_sha256"`
	// Evaluated says how the framework evaluated the set, or why it did not.
	Evaluated string `json:"evaluated"`
}

// WithFramework is h with the framework's preflight digest of the set recorded ("": none).
func (h *HeldOut) WithFramework(sha256 string) *HeldOut {
	if h == nil {
		return nil
	}
	c := *h
	c.FrameworkSHA256 = nil
	if sha256 != "" {
		c.FrameworkSHA256 = &sha256
	}
	return &c
}

// MLPerfRun is what an MLPerf MLLOG result file says of its run.
type MLPerfRun struct {
	Benchmark  string   `json:"benchmark"`
	Org        string   `json:"org"`
	Platform   string   `json:"platform"` // as submitted; not always the hardware (a placeholder in some)
	TargetLoss *float64 `json:"target_loss"`
	Status     string   `json:"status"`
	// RunMinutes is run_stop − run_start: the time MLPerf scores one run by.
	RunMinutes      *float64 `json:"run_minutes"`
	BlockConvention string   `json:"block_convention"`
}

// Problem is a named doubt about the result, for a reader to judge.
type Problem struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

// Text is an optional text field's value, "" when it is absent.
func Text(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
