package compare

import (
	"time"

	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/result"
)

// Methodology names of a comparison.
const (
	MethodIdentical = "identical configuration"
	MethodBest      = "each platform at its best"
	NotIdentical    = "not identical configuration"
)

// GroupKey is what makes runs repetitions of one another: runs whose recorded
// configuration (Setup) differs are never pooled, whatever their fingerprints.
type GroupKey struct {
	Platform, GPU, Framework, Model, Dataset, ConfigFingerprint string
	// Setup is the recorded configuration line (precision, SL, GBS, MBS,
	// parallelism, GPU count); unrecorded fields read "?".
	Setup string
	// Stack is the recorded software stack (framework version, the platform
	// stack an old-suite result names): runs of two stacks are never pooled.
	Stack string
}

// Run is one usable result with Rival's recomputed figures.
type Run struct {
	Input     *Input
	TPSPerGPU float64 // tokens/s/GPU
	TPS       float64 // tokens/s over all GPUs
	StepTime  float64 // mean step time, seconds
	// TFLOPs and MFU are Rival's (models.TrainFLOPsPerToken × tokens/s/GPU
	// over the dense peak); nil when the model or the GPU is unknown.
	TFLOPs, MFU *float64
	Peak        *float64
	Errors      []result.Problem // sanity errors: the run is left out of stats and plots
	// FixedWindowTPS is tokens/s/GPU over iterations FixedWindowFirst to
	// FixedWindowLast; nil (FixedWindowNote says why) when the run is shorter
	// than FixedWindowRunLength, did not log them or lacks GBS/SL/GPUs.
	FixedWindowTPS  *float64
	FixedWindowNote string
	// Outlier is the run's modified z-score of tokens/s/GPU within its group
	// when it is an outlier (see OutlierZ), 0 otherwise.
	Outlier float64
	// DroppedSteps says which logged step times were left out of the step
	// statistics for being zero, negative or not finite; empty when none.
	DroppedSteps string
}

// Group is every repetition of one configuration on one platform.
type Group struct {
	Key        GroupKey
	Label      string // "MI300X Primus"
	ModelLabel string // "Llama 3.1 8B"
	Runs       []*Run
	TPS        Summary // tokens/s/GPU over runs
	TotalTPS   Summary // tokens/s over runs
	StepTime   Summary // mean step time over runs, seconds
	StepMedian float64 // pooled measured steps of all runs
	StepP10    float64
	StepP90    float64
	// StepStatsRecorded: median/p10/p90 are the results' own (over every
	// measured step), not recomputed from the step series.
	StepStatsRecorded bool
	StepSamples       []float64 // pooled measured step times (sorted)
	TFLOPs, MFU       *float64  // Rival's, mean over runs
	// TFLOPsRuns summarises Rival's model TFLOP/s/GPU over runs (N is 0
	// when the model or SL is unknown).
	TFLOPsRuns Summary
	// FLOPsPerToken is the model's training FLOPs per token at the group's
	// SL (models.TrainFLOPsPerToken); nil when the model or SL is unknown.
	FLOPsPerToken *float64
	FrameworkTF   *float64 // framework's own printed TFLOP/s/GPU, mean over runs that print it
	FrameworkMFU  *float64
	Peak          *float64
	Precision     string
	NumGPUs       int

	// Setup is the configuration line: precision and FP8 recipe, SL, GBS,
	// MBS, GA, TP/PP/CP/DP, DDP or FSDP, recompute.
	Setup string
	// Stack is the software stack: framework and version, image digest.
	Stack string
	// Proxy is a small stand-in model; CPU a run without a GPU. Neither gets
	// a time-to-train or a cost.
	Proxy, CPU bool
	// Partition is set when the run used a GPU partition (CPX, MIG) while MFU
	// is against the whole GPU's peak.
	Partition string

	AllocatedMiB, ReservedMiB, DeviceUsedMiB *float64 // max over runs
	GPUMemoryMiB                             *float64
	MemoryShare                              *float64 // largest of reserved/used over GPU memory, 0-1

	TokensPerWh *float64
	PowerWatts  float64
	PowerSource string // "sampled" or "TDP estimate"

	Price         *Price
	CostPer1T     *float64 // USD
	GPUHoursPer1T float64
	DaysFor1T     float64 // on NumGPUs GPUs; 0 for proxies and CPU runs
	DaysFor15T    float64

	Config map[string]string // fairness fields → value
	// Marked is true when no group of another platform it is compared with
	// has an identical configuration: every comparison of it is
	// "not identical configuration".
	Marked bool

	stackTag   string // the label's stack extension, when it has one
	stackLabel string // the label's stack part (" nemo:26.06"), when the runs record their stack
}

// Metrics a speedup is computed on.
const (
	MetricTokens = "tokens/s/GPU"
	MetricFLOPs  = "model TFLOP/s/GPU"
)

// Comparison is a cross-platform speedup: Faster's tokens/s/GPU over
// Slower's, or their model FLOP/s when the work per token differs.
type Comparison struct {
	Faster, Slower *Group
	Ratio          Ratio
	// Metric is MetricTokens, or MetricFLOPs when the two groups do
	// different work per token (SL, model); WorkDiffers then says how.
	Metric      string
	WorkDiffers string
	// RunsNeeded is, for an inconclusive ratio (interval includes 1), the
	// runs per side that would decide at the observed spread (see
	// RunsNeeded).
	RunsNeeded int
	Method     string // MethodIdentical or MethodBest
	Identical  bool
	Why        string // every field that differs ("GBS 384 vs 128, ..."), when not identical
	// Stack says how the software stacks differ ("frameworks differ"), empty
	// when framework and version are equal.
	Stack string
	// MixedStacks says which side's platform holds runs of more than one
	// software stack for this model (each stack a group of its own), empty
	// when neither does.
	MixedStacks string
	// Evidence is the verify:results verdict on the two groups' first runs.
	Evidence string
	// FixedWindow is the speedup over NVIDIA's fixed window; nil (with
	// FixedWindowNote saying why) when a side lacks those iterations.
	FixedWindow     *Ratio
	FixedWindowNote string
}

// ConfigComparison sets two configurations of one model against each other
// on the same platform, GPU (or CPU), framework and dataset: what a user
// tunes on one machine (data-parallel processes, precision, batch).
type ConfigComparison struct {
	Faster, Slower *Group
	Ratio          Ratio // on Metric, faster over slower
	TotalRatio     Ratio // tokens/s over all GPUs (or processes)
	// Metric, WorkDiffers and RunsNeeded are as in Comparison.
	Metric      string
	WorkDiffers string
	RunsNeeded  int
	Differs     []string // the configuration fields that differ, "data_parallel: 2 vs 1"
	// Parity compares the first runs' losses when both used the same data
	// and seed; nil otherwise.
	Parity *LossParity
}

// LossParity compares the loss curves of two groups on identical data and seed.
type LossParity struct {
	A, B      *Group
	Steps     int // common steps compared after warm-up
	Warmup    int // leading common steps skipped
	MaxGap    float64
	AtStep    int
	Diverged  bool
	Available bool // false when the curves share no step after warm-up
	// PrecisionOnly is true when the groups differ in precision only
	// (BF16 against FP8): a convergence check, not a reproduction.
	PrecisionOnly bool
	// TailGap is |mean(a) − mean(b)| / ((mean(a)+mean(b))/2) over the last
	// TailSteps common steps: the figure Diverged is decided on.
	TailGap   float64
	TailSteps int
	// Frameworks is true for a pair of groups of different frameworks that read the
	// same batches (ModelSection.FrameworkParity): its verdict is StepWise's, not the
	// tail mean's, which is kept for information only.
	Frameworks bool
	// StepWise compares the first runs step by step when both recorded the same
	// sample-order digest; nil otherwise (their steps need not hold the same batches).
	StepWise *StepParity
}

// StepParity compares two loss curves at every step either records, warm-up
// included: runs that recorded the same sample-order digest read the same batches
// from step 1, so their curves can be compared step by step, not only on average.
type StepParity struct {
	Digest string     // sample_order.blake3, the same on both runs
	Diffs  []StepDiff // every common step, in order
	// Largest is the step of the largest relative difference (the first on a tie).
	Largest StepDiff
	// Parted is true when the relative difference stays above StepLossTolerance
	// from step PartedAt to the end, for at least StepPartMinSteps steps.
	Parted   bool
	PartedAt int
}

// StepDiff is one common step of two loss curves: the losses, |A−B| and
// |A−B| / ((|A|+|B|)/2) (0 when both are 0).
type StepDiff struct {
	Step     int
	A, B     float64
	Abs, Rel float64
}

// SkippedPair is a pair of groups of different frameworks, otherwise equal in
// configuration and data, whose losses are not compared step by step; Why says why.
type SkippedPair struct {
	A, B *Group
	Why  string
}

// ModelSection gathers a model's groups and comparisons.
type ModelSection struct {
	Name, Label  string
	Groups       []*Group
	Headlines    []Comparison
	Comparisons  []Comparison
	NoComparison string // set when fewer than two platforms ran this model
	Fairness     []FairnessRow
	Identical    []string // fairness fields recorded and equal across all groups
	Unrecorded   []string // fairness fields no group recorded
	// Declared are the differences a framework of this section does not let Rival remove
	// (frameworks/effective); every report that compares the framework shows them.
	Declared []effective.Declared
	Parity   []LossParity
	// FrameworkParity compares step by step the groups of different frameworks that
	// read the same batches (frameworkParity); FrameworkSkipped lists the pairs that
	// would be compared but for their seed or sample order, with the reason.
	FrameworkParity  []LossParity
	FrameworkSkipped []SkippedPair
	// HeldOut is the groups' held-out evaluations and time to the target (SetTarget); nil when
	// no run of the model recorded a periodic evaluation.
	HeldOut *HeldOut
}

// FairnessRow is one configuration field that differs between groups.
type FairnessRow struct {
	Field  string
	Values []string // aligned with ModelSection.Groups
}

// RunError is a result reported by name and kept out of statistics and plots.
type RunError struct {
	Source string
	Name   string
	Detail string
}

// Report is everything compare writes.
type Report struct {
	Inputs []*Input
	// Skipped lists what Load could not use; the caller sets it (Analyze only
	// sees usable inputs) so the report shows it.
	Skipped []Problem
	// ConfigDefaults are the configuration keys' defaults; the caller sets
	// them so reproduce commands name only the keys a run changed (nil:
	// every recorded key is named).
	ConfigDefaults map[string]string
	Errors         []RunError
	Groups         []*Group
	Models         []*ModelSection
	Prices         PriceTable
	// Warnings are what a reader must see before trusting a figure: noisy
	// hosts, outlier runs, dropped step times, implausible prices, results
	// that disagree with their training log.
	Warnings []string
	// LogChecks says, by input source, what checking the result against
	// its training log found (see SetLogChecks); nil when no check ran.
	LogChecks map[string]LogCheck
	// Platforms seen among usable runs, sorted.
	Platforms []string
	// History is every workload measured on more than one stack, host or
	// date (history.go); nil when there is none.
	History *History
	// Target is the held-out loss time to target is measured to, when HasTarget; TargetSource
	// says where it came from (TARGET_LOSS, or the MLPerf logs' own target).
	Target       float64
	HasTarget    bool
	TargetSource string
}

// LogCheck is what checking one result against its training log found:
// Checked is true when the log was found with the recorded digest and
// rebuilt; Bad lists the fields that disagree (or "log.digest"); Why says
// why it could not be checked.
type LogCheck struct {
	Checked bool
	Bad     []string
	Why     string
}

// HistoryBatch is the runs of one workload on one software stack and one
// host, close together in time.
type HistoryBatch struct {
	Stack HistoryStack
	Host  string // provenance.node_list, else provenance.host; "host not recorded"
	// Start is the earliest provenance.started_at, End the latest finished_at.
	Start, End time.Time
	Runs       []*Run
	TPS        Summary // tokens/s/GPU over the batch's runs
	group      *Group  // the batch as a group, for loss parity
}

// HistoryStack is the software stack a result records.
type HistoryStack struct {
	Framework, FrameworkVersion string
	Image                       string // image_digest, "" for a host run
	PlatformStack               string // old-suite software_stack / pytorch_version
	// Driver is gpu_info.driver_version, "" when the result does not record it.
	Driver string
	// Hardware is hardware_fingerprint: it covers the GPU driver, power limit
	// and clocks, so on one host it changes with the driver.
	Hardware string
}

// HistoryStep is one step of a workload's history: From is the batch it is
// measured against (the latest earlier batch on the same host, else the
// batch just before), To the later one.
type HistoryStep struct {
	From, To *HistoryBatch
	Kind     string   // StepStack, StepDateOnly, StepHost, StepHostAndStack
	Changed  []string // what differs: "torch 1.13.1 → 2.6.0", "image …", "host a → b"
	// Ratio is To's mean tokens/s/GPU over From's, with its 95 % interval.
	Ratio   Ratio
	Verdict string // VerdictRegression, VerdictImprovement, VerdictNoChange, VerdictInconclusive
	Why     string // how the verdict follows from the interval and θ
	// Parity compares the loss curves of the two batches' first runs when
	// they used the same data and seed; nil otherwise.
	Parity *LossParity
}

// HistorySeries is one workload (model, recorded configuration and config
// fingerprint, dataset, platform, GPU and count, framework) over time.
type HistorySeries struct {
	Group   *Group // the workload: every run of it, pooled across stacks
	Label   string // "Mistral 7B v0.1 proxy (2 layers, h256) · CPU FSDP · fp32, SL 128, …"
	Batches []*HistoryBatch
	Steps   []HistoryStep
	// Undated lists results left out because they record no start time.
	Undated []string
}

// History is every workload measured on more than one stack, host or date.
type History struct {
	Threshold float64
	Series    []*HistorySeries
}

// HeldOut is a model's held-out losses: each group's evaluations, when its runs reached the
// target loss, and which groups' curves are the same within HeldOutTolerance.
type HeldOut struct {
	Groups []*HeldOutGroup
	// Same lists the pairs of groups whose first runs evaluated at the same training samples with
	// held-out losses within HeldOutTolerance of each other at every one.
	Same []HeldOutPair
}

// HeldOutGroup is one group's held-out evaluations and time to target.
type HeldOutGroup struct {
	Group *Group
	// Runs are the group's runs that recorded periodic held-out evaluations; NoEvals counts the rest.
	Runs    []TargetRun
	NoEvals int
	// Reached counts the runs whose held-out loss reached the target.
	Reached int
	// Samples, Tokens, WallSeconds and TrainSeconds summarise, over the runs that reached the
	// target, the training samples, tokens and time to reach it.
	Samples, Tokens, WallSeconds, TrainSeconds Summary
	// Final summarises the last periodic held-out loss of each run.
	Final Summary
}

// TargetRun is one run's periodic held-out evaluations, and where it reached the target.
type TargetRun struct {
	Run   *Run
	Evals []result.Evaluation // periodic ("validation") evaluations with samples, in order
	// Reached is true when an evaluation's loss is at or below the target. Interpolated is true
	// when the crossing lies between two evaluations (linear in loss between them); false when
	// the first evaluation is already at or below it, so the figures are an upper bound.
	Reached, Interpolated bool
	Samples, Tokens       float64
	// WallSeconds is nil when the run's evaluations have no clock; TrainSeconds when its log
	// gave no step times.
	WallSeconds, TrainSeconds *float64
	// Best is the lowest held-out loss the run recorded.
	Best float64
}

// HeldOutPair is two groups whose held-out curves are the same within HeldOutTolerance.
type HeldOutPair struct {
	A, B *Group
	// Samples are the training samples of the evaluations both first runs recorded; Diff is
	// B's loss minus A's at each.
	Samples, Diff []float64
	MaxRel        float64 // the largest |B−A| / ((A+B)/2)
}
