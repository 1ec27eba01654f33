package results

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/result"
)

// Extract parses a training log Rival did not launch into a result JSON,
// written to out; facts the log lacks come from the environment
// (result.ExtractEnv lists them). version is Rival's, recorded when the log
// does not name one. When explain is not nil, Extract writes there what was
// read, skipped, joined or flagged for every step line, and then how the
// headline numbers were formed (extract -v).
func Extract(logfile, version string, out, explain io.Writer) error {
	var trace func(logparse.Event)
	if explain != nil {
		trace = func(e logparse.Event) {
			if e.Line == 0 {
				fmt.Fprintf(explain, "%s\t%s\n", e.Action, e.Detail)
				return
			}
			step := "-"
			if e.Step >= 0 {
				step = fmt.Sprint(e.Step)
			}
			fmt.Fprintf(explain, "line %d\tstep %s\t%s\t%s\n", e.Line, step, e.Action, e.Detail)
		}
	}
	r, err := result.ExtractTraced(logfile, os.Getenv, trace)
	if err != nil {
		return err
	}
	if explain != nil {
		explainResult(explain, r)
	}
	if r.RivalVersion == nil {
		v := version
		r.RivalVersion = &v
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := result.Validate(data); err != nil {
		return fmt.Errorf("extract %s: the result does not match the schema: %w", logfile, err)
	}
	_, err = out.Write(append(data, '\n'))
	return err
}

// explainResult says how the headline numbers came out of the steps.
func explainResult(w io.Writer, r *result.Result) {
	pm := r.PerformanceMetrics
	tc := r.TrainingConfig
	fmt.Fprintf(w, "summary\tframework %s (lines look like %s); %d steps kept\n", r.Framework.Name, deref(r.Log.FrameworkDetected), tc.StepsLogged)
	if n := r.WarmupStepsExcluded; n > 0 && len(r.StepNumbers) > 0 {
		fmt.Fprintf(w, "summary\twarm-up: the first %d logged step(s) are left out of the statistics (the warm-up line above says by which rule)\n", n)
	}
	fmt.Fprintf(w, "summary\tstep time (%s) over %d measured steps: median %.6g s (the headline), mean %.6g s, p10 %.6g s, p90 %.6g s, min %.6g s, max %.6g s\n",
		pm.StepTimeSource, pm.MeasuredSteps, pm.MedianStepTimeSeconds, pm.AvgStepTimeSeconds, pm.P10StepTimeSeconds, pm.P90StepTimeSeconds, pm.MinStepTimeSeconds, pm.MaxStepTimeSeconds)
	fmt.Fprintf(w, "summary\ttokens/s/GPU = GBS %s × SL %s / median step time / GPUS %s = %.1f (from the mean: %.1f)\n",
		intOr(tc.GlobalBatchSize), intOr(tc.SequenceLength), intOr(tc.NumGPUs), pm.TokensPerSecondPerGPU, pm.TokensPerSecondPerGPUMean)
	if fw := pm.FrameworkReportedTokensPerSecondPerGPU; fw != nil && pm.FrameworkTokensPerSecondGapPercent != nil {
		fmt.Fprintf(w, "summary\tthe framework prints %.1f tokens/s/GPU (%+.1f%%)\n", *fw, *pm.FrameworkTokensPerSecondGapPercent)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem\t%s\t%s\n", p.Name, p.Detail)
	}
}

func deref(s *string) string {
	if s == nil {
		return "nothing known"
	}
	return *s
}

func intOr(p *int) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}
