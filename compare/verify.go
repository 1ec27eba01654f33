package compare

import (
	"fmt"
	"sort"

	"github.com/rivalbench/rival/result"
)

// Recomputed is what this workspace would use for each input a result
// records, recomputed by the caller (verify:result, from this checkout and
// its cache) for the run the result is checked against. A Value of "" with
// no Err means the input does not exist for that run by design (no image
// for a host run).
type Recomputed struct {
	// DatasetFingerprint is the fingerprint of the encoded dataset (.bin/.idx)
	// the run trains on.
	DatasetFingerprint   Recomputation
	TokenizerFingerprint Recomputation
	// ConfigFingerprint is the fingerprint of the training configuration
	// the run would use.
	ConfigFingerprint Recomputation
	ImageDigest       Recomputation
	EntryScriptDigest Recomputation
}

// Recomputation is one recomputed input: its value, or why it could not be
// computed here.
type Recomputation struct {
	Value string
	Err   error
}

// Check statuses.
const (
	StatusMatch       = "match"
	StatusMismatch    = "mismatch"
	StatusNotRecorded = "not recorded" // the result lacks the field: it cannot be proven
	StatusUnavailable = "unavailable"  // the workspace could not compute it
)

// FieldCheck says whether this workspace reproduces one recorded input.
type FieldCheck struct {
	Field     string
	Recorded  string
	Workspace string
	Status    string
	Detail    string
}

// OK is true only for a proven match.
func (c FieldCheck) OK() bool { return c.Status == StatusMatch }

// Failed returns the checks that are not a proven match; callers exit
// non-zero when it is not empty.
func Failed(checks []FieldCheck) []FieldCheck {
	var out []FieldCheck
	for _, c := range checks {
		if !c.OK() {
			out = append(out, c)
		}
	}
	return out
}

// ReadResult reads a result of any known format (a Rival result, or an old
// suite's, upgraded) as verify:result and verify:results read it: without
// requiring a throughput, which Parse demands of results to compare.
func ReadResult(data []byte) (*result.Result, error) { return parseAny(data) }

// parseAny reads a result of any known format without requiring throughput.
func parseAny(data []byte) (*result.Result, error) {
	in, prob := parseDoc("result", data)
	if prob != nil {
		return nil, fmt.Errorf("read result: %s", prob.Reason)
	}
	return in.Result, nil
}

// VerifyResult checks every input fingerprint the result records
// (dataset, tokenizer, config, image, framework entry script) against the
// workspace's recomputed values and says field by field whether this
// workspace would reproduce the run's inputs. An input whose run the result
// does not identify (no model name, say) is not recorded, whatever got holds.
func VerifyResult(r *result.Result, got Recomputed) []FieldCheck {
	model, dataset, platform := strOr(r.Model.Name, ""), strOr(r.Dataset.Name, ""), strOr(r.Platform, "")
	fw := r.Framework.Name
	var entry *string
	if r.Provenance != nil {
		entry = r.Provenance.EntryScriptDigest
	}
	type item struct {
		field    string
		recorded *string
		need     []string // facts that identify the input, by name
		have     []string
		got      Recomputation
		// emptyOK: a null record matches a workspace that has no such input
		emptyOK bool
	}
	items := []item{
		{"dataset.fingerprint", r.Dataset.Fingerprint, []string{"dataset.name", "model.name"}, []string{dataset, model}, got.DatasetFingerprint, false},
		{"tokenizer_fingerprint", r.TokenizerFingerprint, []string{"model.name"}, []string{model}, got.TokenizerFingerprint, false},
		{"config_fingerprint", r.ConfigFingerprint, []string{"platform", "framework.name", "model.name"}, []string{platform, fw, model}, got.ConfigFingerprint, false},
		{"image_digest", r.ImageDigest, []string{"platform"}, []string{platform}, got.ImageDigest, true},
		{"provenance.entry_script_digest", entry, []string{"framework.name"}, []string{fw}, got.EntryScriptDigest, true},
	}
	var out []FieldCheck
	for _, it := range items {
		c := FieldCheck{Field: it.field, Recorded: strOr(it.recorded, "")}
		missing := ""
		for i, v := range it.have {
			if v == "" {
				missing = it.need[i]
			}
		}
		if missing != "" {
			c.Status, c.Detail = StatusNotRecorded, "the result does not record "+missing+", so the input cannot be recomputed"
			out = append(out, c)
			continue
		}
		c.Workspace = it.got.Value
		switch {
		case it.got.Err != nil:
			c.Status, c.Detail = StatusUnavailable, it.got.Err.Error()
		case it.recorded == nil && it.got.Value == "" && it.emptyOK:
			c.Status, c.Detail = StatusMatch, "no such input for this run, here or in the result"
		case it.recorded == nil:
			c.Status, c.Detail = StatusNotRecorded, "the result does not record it, so the workspace's value cannot be proven to be the one used"
		case *it.recorded == it.got.Value:
			c.Status = StatusMatch
		default:
			c.Status, c.Detail = StatusMismatch, "this workspace would use a different input"
		}
		out = append(out, c)
	}
	return out
}

// Difference is one input field two runs disagree on.
type Difference struct {
	Field string
	A, B  string
	// HardwareBound marks fields that differ because the hardware differs
	// (platform, GPU, host fingerprint, the platform's image); they do not
	// count against identical inputs.
	HardwareBound bool
	Detail        string
}

// Mismatches returns the differences that are not hardware-bound; callers
// exit non-zero when it is not empty.
func Mismatches(diffs []Difference) []Difference {
	var out []Difference
	for _, d := range diffs {
		if !d.HardwareBound {
			out = append(out, d)
		}
	}
	return out
}

// CompareInputs lists every input on which two results differ, saying which
// differences come with the hardware. Fingerprints missing from both results
// are differences too: identical inputs cannot be proven without them.
func CompareInputs(a, b []byte) ([]Difference, error) {
	ra, err := parseAny(a)
	if err != nil {
		return nil, fmt.Errorf("first result: %w", err)
	}
	rb, err := parseAny(b)
	if err != nil {
		return nil, fmt.Errorf("second result: %w", err)
	}
	return compareResults(ra, rb), nil
}

// compareResults is CompareInputs on parsed results; the report uses it for
// the evidence line of every headline pair.
func compareResults(ra, rb *result.Result) []Difference {
	var out []Difference
	cmp := func(field string, x, y *string, fingerprint, hardware bool) {
		switch {
		case x == nil && y == nil:
			if fingerprint {
				out = append(out, Difference{Field: field, A: "—", B: "—", Detail: "recorded in neither result: identical input cannot be proven"})
			}
		case x == nil || y == nil:
			out = append(out, Difference{Field: field, A: strOr(x, "—"), B: strOr(y, "—"), HardwareBound: hardware, Detail: "recorded in one result only"})
		case *x != *y:
			out = append(out, Difference{Field: field, A: *x, B: *y, HardwareBound: hardware})
		}
	}
	sp := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	ip := func(p *int) *string {
		if p == nil {
			return nil
		}
		s := fmt.Sprint(*p)
		return &s
	}
	cmp("platform", ra.Platform, rb.Platform, false, true)
	cmp("gpu_info.spec_model", sp(gpuOf(ra)), sp(gpuOf(rb)), false, true)
	cmp("hardware_fingerprint", ra.HardwareFingerprint, rb.HardwareFingerprint, false, true)
	// The image is built per platform (ROCm or CUDA base), so it differs with the hardware.
	cmp("image_digest", ra.ImageDigest, rb.ImageDigest, false, true)

	cmp("model.name", ra.Model.Name, rb.Model.Name, false, false)
	cmp("dataset.name", ra.Dataset.Name, rb.Dataset.Name, false, false)
	cmp("dataset.fingerprint", ra.Dataset.Fingerprint, rb.Dataset.Fingerprint, true, false)
	cmp("tokenizer_fingerprint", ra.TokenizerFingerprint, rb.TokenizerFingerprint, true, false)
	cmp("config_fingerprint", ra.ConfigFingerprint, rb.ConfigFingerprint, true, false)
	cmp("framework.name", sp(ra.Framework.Name), sp(rb.Framework.Name), false, false)
	cmp("framework.version", ra.Framework.Version, rb.Framework.Version, false, false)
	cmp("framework.requested", ra.Framework.Requested, rb.Framework.Requested, false, false)
	cmp("framework.stack", sp(ra.Framework.Stack), sp(rb.Framework.Stack), false, false)
	cmp("rival_version", ra.RivalVersion, rb.RivalVersion, false, false)
	ta, tb := ra.TrainingConfig, rb.TrainingConfig
	cmp("training_config.num_gpus", ip(ta.NumGPUs), ip(tb.NumGPUs), false, false)
	cmp("training_config.global_batch_size", ip(ta.GlobalBatchSize), ip(tb.GlobalBatchSize), false, false)
	cmp("training_config.micro_batch_size", ip(ta.MicroBatchSize), ip(tb.MicroBatchSize), false, false)
	cmp("training_config.sequence_length", ip(ta.SequenceLength), ip(tb.SequenceLength), false, false)
	cmp("training_config.precision", sp(ta.Precision), sp(tb.Precision), false, false)
	cmp("training_config.train_iters", ip(ta.TrainIters), ip(tb.TrainIters), false, false)
	pa, pb := ra.ParallelismConfig, rb.ParallelismConfig
	cmp("parallelism_config.tensor_parallel", ip(pa.TensorParallel), ip(pb.TensorParallel), false, false)
	cmp("parallelism_config.pipeline_parallel", ip(pa.PipelineParallel), ip(pb.PipelineParallel), false, false)
	cmp("parallelism_config.context_parallel", ip(pa.ContextParallel), ip(pb.ContextParallel), false, false)
	cmp("parallelism_config.data_parallel", ip(pa.DataParallel), ip(pb.DataParallel), false, false)

	var ea, eb *string
	ca, cb := map[string]string{}, map[string]string{}
	if ra.Provenance != nil {
		ea = ra.Provenance.EntryScriptDigest
		ca = ra.Provenance.Config
	}
	if rb.Provenance != nil {
		eb = rb.Provenance.EntryScriptDigest
		cb = rb.Provenance.Config
	}
	cmp("provenance.entry_script_digest", ea, eb, true, false)
	keys := map[string]bool{}
	for k := range ca {
		keys[k] = true
	}
	for k := range cb {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		var x, y *string
		if v, ok := ca[k]; ok {
			x = &v
		}
		if v, ok := cb[k]; ok {
			y = &v
		}
		cmp("provenance.config."+k, x, y, false, false)
	}
	if ra.Framework.Name != rb.Framework.Name && ra.Framework.Requested != nil && rb.Framework.Requested != nil && *ra.Framework.Requested == *rb.Framework.Requested {
		for i := range out {
			if out[i].Field == "framework.name" {
				out[i].Detail = "both asked for " + *ra.Framework.Requested + "; the platform's remap ran a different framework"
			}
		}
	}
	return out
}
