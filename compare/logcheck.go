package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks/logparse"
	"github.com/rivalbench/rival/result"
)

// measuredFields are the JSON paths of every figure a result derives from
// its training log: VerifyLog rebuilds them with the same parser and
// compares them one by one.
var measuredFields = []string{
	"training_config.sequence_length", "training_config.global_batch_size", "training_config.micro_batch_size",
	"training_config.num_gpus", "training_config.precision", "training_config.train_iters", "training_config.steps_logged",
	"parallelism_config.tensor_parallel", "parallelism_config.pipeline_parallel", "parallelism_config.context_parallel",
	"parallelism_config.data_parallel", "warmup_steps_excluded",
	"performance_metrics.measured_steps", "performance_metrics.avg_step_time_seconds",
	"performance_metrics.median_step_time_seconds", "performance_metrics.p10_step_time_seconds",
	"performance_metrics.p90_step_time_seconds", "performance_metrics.min_step_time_seconds",
	"performance_metrics.max_step_time_seconds", "performance_metrics.std_step_time_seconds",
	"performance_metrics.steps_per_second", "performance_metrics.tokens_per_step", "performance_metrics.tokens_per_second",
	"performance_metrics.tokens_per_second_per_gpu", "performance_metrics.tokens_per_second_per_gpu_mean",
	"performance_metrics.model_flops_per_token", "performance_metrics.tflops_per_gpu", "performance_metrics.mfu_percent",
	"performance_metrics.framework_reported_tflops_per_gpu", "performance_metrics.framework_reported_tokens_per_second_per_gpu",
	"performance_metrics.framework_reported_mfu_percent", "performance_metrics.step_time_source",
	"performance_metrics.quantiles_exact", "performance_metrics.headline_statistic",
	"performance_metrics.framework_tokens_per_second_gap_percent",
	"memory_metrics.peak_allocated_mib", "memory_metrics.peak_reserved_mib", "memory_metrics.peak_device_used_mib",
	"memory_metrics.device_total_mib", "memory_metrics.peak_used_fraction",
	"step_series_stride", "step_numbers", "step_times", "loss_values", "learning_rates", "grad_norms",
	"evaluations", "mlperf",
}

// addedLater are measured fields results gained after results were already written: one that a
// result lacks altogether was not recorded by the Rival that wrote it, which is not a change to its
// figures. (They are omitted when empty, so a newer result without them printed none.)
var addedLater = map[string]bool{"evaluations": true, "mlperf": true}

// notFromTheLog are the result's fields VerifyLog does not re-derive, each with why: a field a
// result gains is either measured (above) or named here, so none is left unchecked by oversight
// (TestEveryResultFieldIsCheckedOrNamed).
var notFromTheLog = map[string]string{
	"schema_version": "the format", "rival_version": "the tool", "platform": "given", "hardware_fingerprint": "the host",
	"image_digest": "the image", "config_fingerprint": "the configuration", "tokenizer_fingerprint": "the tokenizer",
	"framework": "given or detected (log.framework_detected)", "model": "the registry", "dataset": "given",
	"gpu_info": "the host or GPU", "cpu_info": "the host", "training_config.precision_assumed": "whether PRECISION was given",
	"log": "where the log is and its digest (checked as log.digest)", "problems": "doubts, rebuilt by the same rules",
	"power_metrics": "sampled beside the run", "provenance": "the launch", "sample_order": "checked by the preflight",
	"held_out":         "written by Rival before the run, checked by the preflight",
	"effective_config": "read back by the preflight",
}

// LogFound is a training log located for a result: its bytes and where
// they came from ("the cache", a path).
type LogFound struct {
	Data  []byte
	Where string
}

// LogDigestCheck says whether log is the log a result records the digest
// of; ok is false (with the check saying why) when the result records no
// digest or the bytes differ.
func LogDigestCheck(r *result.Result, log *LogFound) (FieldCheck, bool) {
	c := FieldCheck{Field: "log.digest", Recorded: r.Log.Digest}
	switch {
	case r.Log.Digest == "":
		c.Status, c.Detail = StatusNotRecorded, "the result records no digest of its training log, so its figures cannot be checked against it; rebuild it with this Rival (train or extract)"
		return c, false
	case log == nil:
		c.Status, c.Detail = StatusUnavailable, "the log is neither in the cache nor next to the result (logs/<name>.log or <name>.log); copy it there to check the result"
		return c, false
	}
	c.Workspace = "blake3:" + cache.HashBytes(log.Data).String()
	if c.Workspace != r.Log.Digest {
		c.Status, c.Detail = StatusMismatch, "the log at "+log.Where+" is not the one this result was built from"
		return c, false
	}
	c.Status, c.Detail = StatusMatch, "the log at "+log.Where
	return c, true
}

// VerifyLog rebuilds a result from its training log with the same parser
// and the facts the run was given (provenance.config where the result
// records it, else its own training configuration), and compares every
// measured figure. It returns one mismatch check per field that disagrees
// (or one match check naming how many agree) and the facts the log does
// not print, taken from the result and so not checkable against it.
func VerifyLog(r *result.Result, log []byte) (checks []FieldCheck, unchecked []string, err error) {
	facts, unchecked := rebuildFacts(r)
	family := strings.ToLower(r.Framework.Name)
	lg, err := logparse.Parse(bytes.NewReader(log), family)
	if err != nil && family != "" {
		family = ""
		lg, err = logparse.Parse(bytes.NewReader(log), family)
	}
	if err != nil {
		return nil, unchecked, fmt.Errorf("parse the training log again: %w", err)
	}
	var printed []string
	pre := lg.Preamble
	for _, p := range []struct {
		name string
		v    *int
	}{{"SL", pre.SeqLength}, {"GBS", pre.GlobalBatchSize}, {"MBS", pre.MicroBatchSize}, {"GPUs", pre.WorldSize}} {
		if p.v != nil {
			printed = append(printed, p.name)
		}
	}
	var still []string
	for _, u := range unchecked {
		if !contains(printed, u) {
			still = append(still, u)
		}
	}
	unchecked = still
	rebuilt, err := result.Build(lg, facts)
	if err != nil {
		return nil, unchecked, fmt.Errorf("rebuild the result from its log: %w", err)
	}
	got, err := flat(rebuilt)
	if err != nil {
		return nil, unchecked, err
	}
	want, err := flat(r)
	if err != nil {
		return nil, unchecked, err
	}
	agree := 0
	for _, f := range measuredFields {
		if _, recorded := want[f]; !recorded && addedLater[f] {
			continue // a result from before the field existed: nothing recorded to check
		}
		if sameValue(want[f], got[f]) {
			agree++
			continue
		}
		checks = append(checks, FieldCheck{Field: f, Recorded: short(want[f]), Workspace: short(got[f]), Status: StatusMismatch,
			Detail: "the result's own log gives " + short(got[f])})
	}
	if len(checks) == 0 {
		checks = append(checks, FieldCheck{Field: "measured figures", Recorded: strconv.Itoa(agree), Workspace: strconv.Itoa(agree), Status: StatusMatch,
			Detail: fmt.Sprintf("all %d figures re-derived from the log agree", agree)})
	}
	return checks, unchecked, nil
}

// rebuildFacts are the facts a result's run was given: provenance.config
// (what Rival launched with) where recorded, else the result's training
// configuration (an extracted result's facts came from the environment).
// unchecked names the facts taken from the result itself.
func rebuildFacts(r *result.Result) (result.Facts, []string) {
	tc, pc := r.TrainingConfig, r.ParallelismConfig
	f := result.Facts{Platform: strOr(r.Platform, ""), GPUModel: strOr(r.GPUInfo.DeviceName, ""), Model: strOr(r.Model.Name, ""),
		Framework: r.Framework.Name, FrameworkVersion: strOr(r.Framework.Version, ""), FrameworkRequested: strOr(r.Framework.Requested, ""),
		DatasetName: strOr(r.Dataset.Name, ""), DatasetFingerprint: strOr(r.Dataset.Fingerprint, ""),
		TokenizerFingerprint: strOr(r.TokenizerFingerprint, ""), ConfigFingerprint: strOr(r.ConfigFingerprint, ""),
		ImageDigest: strOr(r.ImageDigest, ""), RivalVersion: strOr(r.RivalVersion, ""), LogDigest: r.Log.Digest}
	if r.GPUInfo.SpecModel != nil {
		f.GPUModel = *r.GPUInfo.SpecModel
	}
	if !tc.PrecisionAssumed {
		f.Precision = tc.Precision
	}
	deref := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	var unchecked []string
	cfg := map[string]string{}
	if r.Provenance != nil {
		cfg = r.Provenance.Config
	}
	for _, x := range []struct {
		key  string
		dst  *int
		from *int
	}{{"SL", &f.SeqLen, tc.SequenceLength}, {"GBS", &f.GBS, tc.GlobalBatchSize}, {"MBS", &f.MBS, tc.MicroBatchSize},
		{"TP", &f.TP, pc.TensorParallel}, {"PP", &f.PP, pc.PipelineParallel}} {
		if n, err := strconv.Atoi(cfg[x.key]); err == nil && n > 0 {
			*x.dst = n
			continue
		}
		*x.dst = deref(x.from)
		if x.key == "SL" || x.key == "GBS" || x.key == "MBS" {
			unchecked = append(unchecked, x.key)
		}
	}
	f.CP = deref(pc.ContextParallel)
	f.GPUs = deref(tc.NumGPUs)
	unchecked = append(unchecked, "GPUs")
	return f, unchecked
}

// flat is a result as JSON values by dotted path (two levels deep).
func flat(r *result.Result) (map[string]any, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, err
	}
	out := map[string]any{}
	for k, v := range top {
		out[k] = v
		if m, ok := v.(map[string]any); ok {
			for k2, v2 := range m {
				out[k+"."+k2] = v2
			}
		}
	}
	return out, nil
}

// sameValue compares two JSON values; numbers agree to 1e-9 relative (the
// same parser gives the same bits; this only absorbs printing).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y)))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, found := y[k]; !found || !sameValue(v, w) {
				return false
			}
		}
		return true
	case nil:
		return b == nil
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// short renders a JSON value for a message: arrays by length and first
// difference are too long, so by their length.
func short(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case []any:
		return fmt.Sprintf("[%d values]", len(x))
	case float64:
		return strconv.FormatFloat(x, 'g', 10, 64)
	}
	return fmt.Sprint(v)
}

// Note is the check in a few words, for the report's Inputs table.
func (c LogCheck) Note() string {
	switch {
	case len(c.Bad) > 0:
		return "DISAGREES with its training log (" + strings.Join(c.Bad, ", ") + ")"
	case c.Checked:
		return "checked against its training log: every measured figure agrees"
	}
	return "not checked against its training log: " + c.Why
}

// SetLogChecks records what checking each input against its log found:
// a disagreement becomes a warning, and the report says how many results
// could not be checked.
func (r *Report) SetLogChecks(checks map[string]LogCheck) {
	r.LogChecks = checks
	unchecked := 0
	for _, in := range r.Inputs {
		c, ok := checks[in.Source]
		switch {
		case !ok || !c.Checked && len(c.Bad) == 0:
			unchecked++
		case len(c.Bad) > 0:
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s disagrees with its own training log (%s): its figures were changed after the run; check it with go run mage.go verify:result %s", in.Source, strings.Join(c.Bad, ", "), shellQuote(in.Source)))
		}
	}
	switch {
	case unchecked == 1:
		r.Warnings = append(r.Warnings, "1 result could not be checked against its training log (no log digest recorded, or the log not found: see Inputs); its figures are as the file states them")
	case unchecked > 1:
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d results could not be checked against their training logs (no log digest recorded, or the log not found: see Inputs); their figures are as the files state them", unchecked))
	}
}
