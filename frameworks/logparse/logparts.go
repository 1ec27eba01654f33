package logparse

// Step is one printed training step. Pointers are nil when the log did not print the
// value (or printed nan/inf, which NonFinite then names).
type Step struct {
	Step       int    `json:"step"`
	TotalSteps *int   `json:"total_steps,omitempty"`
	Epoch      *int   `json:"epoch,omitempty"`
	Timestamp  string `json:"timestamp,omitempty"`
	// NumberInferred is true when the log printed no step number for this step
	// (Megatron-Bridge "Step Time" lines alone) and the parser counted it.
	NumberInferred bool `json:"number_inferred,omitempty"`

	StepTimeSeconds *float64 `json:"step_time_s,omitempty"`
	Loss            *float64 `json:"loss,omitempty"`
	LearningRate    *float64 `json:"learning_rate,omitempty"`
	GradNorm        *float64 `json:"grad_norm,omitempty"`
	LossScale       *float64 `json:"loss_scale,omitempty"`
	// TFLOPsPerGPU and TokensPerSecondPerGPU are the framework's own figures, as printed
	// (each framework counts FLOPs its own way).
	TFLOPsPerGPU          *float64 `json:"framework_tflops_per_gpu,omitempty"`
	TokensPerSecondPerGPU *float64 `json:"framework_tokens_per_s_per_gpu,omitempty"`
	MFUPercent            *float64 `json:"framework_mfu_percent,omitempty"`
	ConsumedSamples       *float64 `json:"consumed_samples,omitempty"`
	GlobalBatchSize       *int     `json:"global_batch_size,omitempty"`

	MemAllocatedMiB    *float64 `json:"mem_allocated_mib,omitempty"`
	MemMaxAllocatedMiB *float64 `json:"mem_max_allocated_mib,omitempty"`
	MemReservedMiB     *float64 `json:"mem_reserved_mib,omitempty"`
	MemMaxReservedMiB  *float64 `json:"mem_max_reserved_mib,omitempty"`
	// MemDeviceUsedMiB and MemDeviceTotalMiB are the device-wide figures (HIP
	// mem_get_info in Primus), which include memory outside PyTorch's allocator.
	MemDeviceUsedMiB  *float64 `json:"mem_device_used_mib,omitempty"`
	MemDeviceTotalMiB *float64 `json:"mem_device_total_mib,omitempty"`
	// MemUsedFraction is the device memory in use as a fraction of its capacity (0..1).
	MemUsedFraction *float64 `json:"mem_used_fraction,omitempty"`

	SkippedIterations *int `json:"skipped_iterations,omitempty"`
	NaNIterations     *int `json:"nan_iterations,omitempty"`

	// NonFinite names the fields printed as nan or inf.
	NonFinite []string `json:"non_finite,omitempty"`
	// Extra keeps every key the parser does not map, with its value as printed.
	Extra map[string]string `json:"extra,omitempty"`
}

// MemoryNote is a one-off memory report (Megatron's "[Rank r] (after k iterations)
// memory (MB|GB) | ..." line), normalised to MiB.
type MemoryNote struct {
	Rank            int               `json:"rank"`
	AfterIterations int               `json:"after_iterations"`
	AllocatedMiB    *float64          `json:"allocated_mib,omitempty"`
	MaxAllocatedMiB *float64          `json:"max_allocated_mib,omitempty"`
	ReservedMiB     *float64          `json:"reserved_mib,omitempty"`
	MaxReservedMiB  *float64          `json:"max_reserved_mib,omitempty"`
	Extra           map[string]string `json:"extra,omitempty"`
}

// Preamble holds the run facts printed before (or around) the training loop.
type Preamble struct {
	// ParameterCount is the model's parameter count; ParameterCountExact is false when
	// it was printed rounded (e.g. "8.0 B Total params") or summed over
	// model-parallel ranks.
	ParameterCount      *int64 `json:"parameter_count,omitempty"`
	ParameterCountExact bool   `json:"parameter_count_exact,omitempty"`
	WorldSize           *int   `json:"world_size,omitempty"`
	SeqLength           *int   `json:"seq_length,omitempty"`
	MicroBatchSize      *int   `json:"micro_batch_size,omitempty"`
	GlobalBatchSize     *int   `json:"global_batch_size,omitempty"`
	TensorParallel      *int   `json:"tensor_parallel,omitempty"`
	PipelineParallel    *int   `json:"pipeline_parallel,omitempty"`
	ContextParallel     *int   `json:"context_parallel,omitempty"`
	DataParallel        *int   `json:"data_parallel,omitempty"`
	TrainIters          *int   `json:"train_iters,omitempty"`
	// Sources says where the log printed each fact it gives ("line 12 (argument
	// seq_length)", "the step line of step 10"), keyed by the JSON names above.
	Sources map[string]string `json:"-"`
	// Args is Megatron's printed arguments block ("  name ....... value"), bounded.
	Args map[string]string `json:"args,omitempty"`
}

// Stats counts what the parser skipped, so a reader can judge the log's health.
type Stats struct {
	Lines int64 `json:"lines"`
	// CutLines are step lines that end mid-way (a truncated log, another process
	// writing into the middle of the line); they are skipped.
	CutLines int `json:"cut_lines"`
	// LongLines were longer than the line bound; only their start was read.
	LongLines int `json:"long_lines"`
	// DuplicateSteps are step lines whose number was not above the previous one kept
	// (a line echoed by two ranks, a resumed run replaying steps); the first is kept.
	DuplicateSteps int `json:"duplicate_steps"`
	// OtherRankLines are step lines from ranks other than the kept one.
	OtherRankLines int `json:"other_rank_lines"`
	// NonFiniteValues counts nan/inf values seen in kept steps.
	NonFiniteValues int `json:"non_finite_values"`
}
