package logparse

// Framework families the parser knows. Megatron, Primus and Megatron-Bridge share the
// Megatron iteration-line format and differ in the extra segments they print.
const (
	Megatron       = "megatron"
	Primus         = "primus"
	MegatronBridge = "megatron-bridge"
	// MegatronDeepSpeed is Microsoft's fork; its iteration line adds "consumed
	// tokens", "actual seqlen", "samples per second" and "TFLOPs" segments.
	MegatronDeepSpeed = "megatron-deepspeed"
	NeMo              = "nemo"
	TorchTitan        = "torchtitan"
)

// Log is everything one training log says about a run.
type Log struct {
	// Source names the input (a file path) in error messages and provenance.
	Source string `json:"source,omitempty"`
	// Framework is the family the steps were read as: the one asked for, or the one
	// detected by signature when none was asked for.
	Framework string `json:"framework"`
	// Detected is the family the log's signatures point to, whatever was asked for.
	Detected string `json:"detected"`
	// Rank is the rank whose step series was kept when lines carry a rank label
	// (torchrun "[rank3]:"/"[default3]:", srun "3: ", Primus "[rank-3/8]"). The
	// highest rank that prints step lines wins: Megatron prints its iteration line on
	// the last rank (which holds the loss), and every TorchTitan rank prints the same
	// global figures. Nil when no step line carries a rank.
	Rank     *int     `json:"rank,omitempty"`
	Preamble Preamble `json:"preamble"`
	// StepCount is the number of steps kept (duplicates and other ranks' lines left out).
	StepCount int `json:"step_count"`
	// Steps are the first HeadSteps steps in full (warm-up is looked for among them).
	Steps []Step `json:"steps"`
	// Tail folds every step after Steps into streaming statistics.
	Tail Aggregate `json:"-"`
	// Curve is every step when there are at most CurvePoints, else every
	// CurveStride-th step (the first step included), so a log of any size has a
	// bounded curve.
	Curve       []Point      `json:"-"`
	CurveStride int          `json:"curve_stride"`
	Memory      []MemoryNote `json:"memory_reports,omitempty"`
	// Evaluations are the held-out evaluations the log printed, in order.
	Evaluations []Evaluation `json:"evaluations,omitempty"`
	// MLPerf is set for an MLLOG result file read as MLPerf.
	MLPerf *MLPerfRun `json:"mlperf,omitempty"`
	Stats  Stats      `json:"stats"`
}
