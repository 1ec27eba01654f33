package logparse

// Evaluation is one held-out evaluation a log printed: the loss over the framework's validation
// (or test) data after some training.
type Evaluation struct {
	// Step is the number of training iterations done before the evaluation.
	Step int `json:"step"`
	// Samples is the number of training samples seen before it, where the log says (MLLOG's
	// samples_count); nil elsewhere (Build derives it from the batch size).
	Samples *int64 `json:"samples,omitempty"`
	// Loss is the mean cross-entropy per token in nats, as printed (MLLOG's eval_accuracy for
	// llama31_8b is this log-perplexity).
	Loss float64 `json:"loss"`
	// Set names what was evaluated: "validation" for the periodic evaluation during training,
	// "validation-final" and "test" for Megatron's evaluations after training.
	Set string `json:"set"`
	// ClockSeconds is the wall time from the run's start to the end of the evaluation, where the log
	// has a clock (MLLOG: time_ms since run_start); nil elsewhere.
	ClockSeconds *float64 `json:"clock_s,omitempty"`
	// TrainSeconds is the sum of the step times logged up to the evaluation (each logged step time
	// counted for the iterations it stands for): training time, without evaluations or checkpoints.
	TrainSeconds *float64 `json:"train_s,omitempty"`
	// Line is the log line that printed the loss.
	Line int64 `json:"line"`
}

// MLPerfRun is what an MLLOG result file says about the run as a whole.
type MLPerfRun struct {
	Benchmark string `json:"benchmark,omitempty"`
	Org       string `json:"org,omitempty"`
	Platform  string `json:"platform,omitempty"`
	// TargetLoss is the benchmark's target_accuracy event (llama31_8b: 3.3 log-perplexity).
	TargetLoss *float64 `json:"target_loss,omitempty"`
	// Status is run_stop's metadata.status ("success", "aborted"); empty without run_stop.
	Status string `json:"status,omitempty"`
	// RunSeconds is run_stop minus run_start: MLPerf's time to train for this run.
	RunSeconds *float64 `json:"run_s,omitempty"`
	// BlockConvention says how block_start/block_stop gave each block's samples: "step" (metadata.step
	// at both ends, samples_count the block's length), "cumulative" (samples_count before and after),
	// or "start-offset" (samples_count before the block on both; the end read from the next event).
	BlockConvention string `json:"block_convention,omitempty"`
}
