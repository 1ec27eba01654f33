package compare

// Thresholds of the sanity and parity checks.
const (
	// TokensConsistencyTolerance is the largest relative difference allowed
	// between tokens/s and GBS×SL/step time (and tokens/s/GPU × GPUs), and
	// between the mean of the measured step series and the stated mean.
	TokensConsistencyTolerance = 0.02
	// LossDivergenceThreshold flags loss parity: the relative gap of the mean
	// loss over the last LossTailShare of the common steps above this is
	// divergence.
	LossDivergenceThreshold = 0.02
	// LossTailShare is the share of the common steps, at the end of the run,
	// whose mean loss is compared.
	LossTailShare = 0.10
	// StepLossTolerance is the relative loss difference at one step within
	// which two runs that read the same batches still agree: an allowance,
	// chosen rather than measured, for what each framework's own initial
	// weights, bf16 kernels and reduction orders may change in one step. A real difference
	// (another schedule, initialisation or loss scaling) that grows past it
	// and stays is caught at the step it does. It is above
	// LossDivergenceThreshold because one step is noisier than a mean.
	StepLossTolerance = 0.05
	// HeldOutTolerance is the relative difference of two groups' held-out losses at the same
	// training samples within which their curves are drawn as the same and their difference is
	// plotted: held-out losses average thousands of tokens, so they are far less noisy than one
	// training step's loss (StepLossTolerance).
	HeldOutTolerance = 0.01
	// StepPartMinSteps is how many steps at the end of a curve must all stay
	// above StepLossTolerance for the curves to count as parted: one noisy
	// last step or two is not a parting.
	StepPartMinSteps = 3
	// MaxGroupsPlotted caps the bars per panel so the figure stays readable.
	MaxGroupsPlotted = 12
	// FixedWindowFirst and FixedWindowLast bound NVIDIA's fixed timing window
	// (iterations 35-44 of a 50-iteration run, as Megatron-Bridge's
	// performance recipes time them).
	FixedWindowFirst, FixedWindowLast = 35, 44
	// DecimatedSeriesTolerance replaces TokensConsistencyTolerance when the
	// step series keeps every step_series_stride-th step only: its mean is a
	// sample of the measured steps, not their exact mean.
	DecimatedSeriesTolerance = 0.10
	// OldSuiteWarmupShare is the warm-up rule applied to old-suite results,
	// which record none: this share of the logged steps, at least one.
	OldSuiteWarmupShare = 0.10
	// FixedWindowRunLength is the run length the fixed window belongs to: it
	// applies only to runs of at least this many iterations (in a shorter run
	// iterations 35-44 are its last steps, not a settled middle).
	FixedWindowRunLength = 50
	// PartitionShare: a GPU exposing less than this share of its datasheet
	// memory is a partition (CPX, MIG) and is compared against the whole GPU's
	// peak only with a mark.
	PartitionShare = 0.6
)
