package core

import "fmt"

// FairError is a fair-configuration value that cannot run. Key is its config.env key; Msg says what
// is wrong and starts with the key.
type FairError struct{ Key, Msg string }

func (e *FairError) Error() string { return e.Msg }

func fairErr(key, format string, args ...any) error {
	return &FairError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// CheckFair is the one check of the fair configuration's own rules, those that need neither the model
// nor the GPU count: config.env's loader, the framework registry and the fsdp trainer's launch
// builder all call it, so a value is refused with the same message wherever it is found. DP 0 means
// "derived from the GPU count" and skips the GBS rule; GBS 0 means "derived"; the profile window must
// be ordered whenever it is set, and within TRAIN_ITERS when Profile is on.
func CheckFair(f Fair) error {
	for _, c := range []struct {
		key string
		v   int
	}{{"MBS", f.MBS}, {"SL", f.SL}, {"GA", f.GA}, {"TP", f.TP}, {"PP", f.PP}, {"TRAIN_ITERS", f.TrainIters}} {
		if c.v <= 0 {
			return fairErr(c.key, "%s is %d: it must be >= 1", c.key, c.v)
		}
	}
	if f.DP < 0 {
		return fairErr("DP", "DP is %d: it must be >= 1 (or 0 to derive it from the GPU count)", f.DP)
	}
	if gbs := f.MBS * f.DP * f.GA; f.DP > 0 && f.GBS != 0 && f.GBS != gbs {
		return fairErr("GBS", "GBS %d does not equal MBS×DP×GA = %d×%d×%d = %d: set GBS=%d or adjust MBS, DP, GA",
			f.GBS, f.MBS, f.DP, f.GA, gbs, gbs)
	}
	if !(f.LR > 0) {
		return fairErr("LR", "LR is %g: it must be > 0", f.LR)
	}
	if !(f.MinLR >= 0 && f.MinLR <= f.LR) {
		return fairErr("MIN_LR", "MIN_LR %g must lie in [0, LR %g]", f.MinLR, f.LR)
	}
	if f.WarmupSteps < 0 || f.WarmupSteps > f.TrainIters {
		return fairErr("WARMUP_STEPS", "WARMUP_STEPS %d must lie in [0, TRAIN_ITERS %d]", f.WarmupSteps, f.TrainIters)
	}
	if !(f.WeightDecay >= 0) {
		return fairErr("WEIGHT_DECAY", "WEIGHT_DECAY is %g: it must be >= 0", f.WeightDecay)
	}
	if !(f.Beta1 >= 0 && f.Beta1 < 1) {
		return fairErr("BETA1", "BETA1 is %g: it must lie in [0, 1)", f.Beta1)
	}
	if !(f.Beta2 >= 0 && f.Beta2 < 1) {
		return fairErr("BETA2", "BETA2 is %g: it must lie in [0, 1)", f.Beta2)
	}
	if !(f.AdamEps >= 0 && f.AdamEps < 1) {
		return fairErr("ADAM_EPS", "ADAM_EPS is %g: it must lie in [0, 1) (0: the default %g)", f.AdamEps, AdamEps)
	}
	if f.Seed < 0 {
		return fairErr("SEED", "SEED is %d: it must be >= 0", f.Seed)
	}
	switch f.Precision {
	case BF16, FP8, FP32:
	default:
		return fairErr("PRECISION", "PRECISION %q: want bf16, fp8 or fp32", f.Precision)
	}
	if (f.Profile || f.ProfileStepStart != 0 || f.ProfileStepEnd != 0) && (f.ProfileStepStart < 0 || f.ProfileStepEnd <= f.ProfileStepStart) {
		return fairErr("PROFILE_STEP_END", "PROFILE_STEP_START %d and PROFILE_STEP_END %d: want 0 <= start < end", f.ProfileStepStart, f.ProfileStepEnd)
	}
	if f.Profile {
		if f.ProfileStepEnd > f.TrainIters {
			return fairErr("PROFILE_STEP_END", "PROFILE_STEP_END %d is past TRAIN_ITERS %d", f.ProfileStepEnd, f.TrainIters)
		}
	}
	return checkEval(f)
}

// checkEval holds the held-out evaluation to what every framework can do: evaluate after whole
// iterations, and split the held-out sequences evenly over the data-parallel ranks' micro batches.
func checkEval(f Fair) error {
	if f.EvalIntervalSamples == 0 {
		return nil
	}
	gbs := f.GBS
	if gbs == 0 && f.DP > 0 {
		gbs = f.MBS * f.DP * f.GA
	}
	switch {
	case f.EvalIntervalSamples < 0:
		return fairErr("EVAL_INTERVAL_SAMPLES", "EVAL_INTERVAL_SAMPLES is %d: it must be >= 0 (0: no evaluation)", f.EvalIntervalSamples)
	case gbs > 0 && f.EvalIntervalSamples%gbs != 0:
		return fairErr("EVAL_INTERVAL_SAMPLES", "EVAL_INTERVAL_SAMPLES %d is not a multiple of GBS %d: frameworks evaluate after whole iterations; use %d or %d",
			f.EvalIntervalSamples, gbs, f.EvalIntervalSamples/gbs*gbs, (f.EvalIntervalSamples/gbs+1)*gbs)
	case f.EvalSamples < 1:
		return fairErr("EVAL_SAMPLES", "EVAL_SAMPLES is %d: an evaluation reads at least 1 held-out sequence", f.EvalSamples)
	case f.DP > 0 && f.EvalSamples%(f.MBS*f.DP) != 0:
		return fairErr("EVAL_SAMPLES", "EVAL_SAMPLES %d is not a multiple of MBS×DP = %d: every data-parallel rank evaluates whole micro batches of the same sequences",
			f.EvalSamples, f.MBS*f.DP)
	}
	return nil
}
