package compare

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/english"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/effective"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
)

// fairnessFields are compared between groups, in this order.
var fairnessFields = []string{
	"precision", "tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel",
	"global_batch_size", "micro_batch_size", "sequence_length", "num_gpus",
	"dataset", "dataset_fingerprint", "tokenizer_fingerprint", "config_fingerprint",
	"framework", "framework_version", "stack", "image_digest",
}

// setupFields are the hyperparameters and data: two groups are identical
// configuration only when every one is recorded and equal on both sides.
// The remaining fairness fields are the software stack.
var setupFields = fairnessFields[:13]

// fieldLabels are what every output calls a configuration field: the headlines' differing
// setup fields ("GBS 384 vs 128"), the fairness notes and the names that tell groups apart.
var fieldLabels = map[string]string{
	"precision": "precision", "tensor_parallel": "TP", "pipeline_parallel": "PP", "context_parallel": "CP",
	"data_parallel": "DP", "global_batch_size": "GBS", "micro_batch_size": "MBS", "sequence_length": "SL",
	"num_gpus": "GPUs", "dataset": "dataset", "dataset_fingerprint": "dataset fingerprint",
	"tokenizer_fingerprint": "tokenizer fingerprint", "config_fingerprint": "config fingerprint",
	"framework": "framework", "framework_version": "version", "stack": "stack", "image_digest": "image digest",
	"sample_digest": "sample digest",
}

// shownFields are the fairness fields a reader tells groups apart by (ModelSection.DisplayName);
// the fingerprints and digests only say that something differs.
var shownFields = map[string]bool{
	"precision": true, "tensor_parallel": true, "pipeline_parallel": true, "context_parallel": true,
	"data_parallel": true, "global_batch_size": true, "micro_batch_size": true, "sequence_length": true,
	"num_gpus": true, "framework_version": true, "dataset": true,
}

// sampleDigestField is the digest of the first samples a run trained on (sample_order.blake3, the
// same bytes the framework's preflight digested through its own data path): equal runs trained on the
// same batches in the same order.
const sampleDigestField = "sample_digest"

// effectivePrefix starts the configuration keys of a run's effective configuration (what the
// framework built, frameworks/effective), one per field: "effective.norm_eps".
const effectivePrefix = "effective."

// effectiveFields are the fairness keys of the effective configuration, in effective.Fields order.
func effectiveFields() []string {
	var out []string
	for _, f := range effective.Fields() {
		out = append(out, effectivePrefix+f)
	}
	return out
}

func configOf(r *result.Result) map[string]string {
	prec := r.TrainingConfig.Precision
	if r.TrainingConfig.PrecisionAssumed {
		prec += " (assumed)"
	}
	c := requestedConfigOf(r, prec)
	c[sampleDigestField] = unknown
	if r.SampleOrder != nil && r.SampleOrder.BLAKE3 != "" {
		c[sampleDigestField] = r.SampleOrder.BLAKE3
	}
	for _, f := range effective.Fields() {
		c[effectivePrefix+f] = unknown
		if r.EffectiveConfig != nil {
			if v, ok := r.EffectiveConfig.Value(f); ok {
				c[effectivePrefix+f] = v
			}
		}
	}
	return c
}

func requestedConfigOf(r *result.Result, prec string) map[string]string {
	return map[string]string{
		"precision":             strOr(&prec, unknown),
		"tensor_parallel":       intStr(r.ParallelismConfig.TensorParallel),
		"pipeline_parallel":     intStr(r.ParallelismConfig.PipelineParallel),
		"context_parallel":      intStr(r.ParallelismConfig.ContextParallel),
		"data_parallel":         intStr(r.ParallelismConfig.DataParallel),
		"global_batch_size":     intStr(r.TrainingConfig.GlobalBatchSize),
		"micro_batch_size":      intStr(r.TrainingConfig.MicroBatchSize),
		"sequence_length":       intStr(r.TrainingConfig.SequenceLength),
		"num_gpus":              intStr(r.TrainingConfig.NumGPUs),
		"dataset":               strOr(r.Dataset.Name, unknown),
		"dataset_fingerprint":   strOr(r.Dataset.Fingerprint, unknown),
		"tokenizer_fingerprint": strOr(r.TokenizerFingerprint, unknown),
		"config_fingerprint":    strOr(r.ConfigFingerprint, unknown),
		"framework":             r.Framework.Name,
		"framework_version":     strOr(r.Framework.Version, unknown),
		"stack":                 strOr(strPtr(r.Framework.Stack), unknown),
		"image_digest":          strOr(r.ImageDigest, unknown),
	}
}

// strPtr is s as an optional string: nil when empty (a result without framework.stack: cpu runs,
// extracted logs, results from before it was recorded).
func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// provConfig reads a provenance.config key, "" when absent.
func provConfig(r *result.Result, key string) string {
	if r.Provenance == nil {
		return ""
	}
	return r.Provenance.Config[key]
}

// fsdpSharding is how Rival's fsdp trainer spread the model over its
// processes, by the path it records (frameworks/fsdp/train.py's wrap).
var fsdpSharding = map[string]string{
	"fsdp2":  "FSDP2 (ZeRO-2)",
	"fsdp1":  "FSDP (SHARD_GRAD_OP)",
	"ddp":    "DDP",
	"single": "none (one process)",
}

// runSetting is the sharding (SHARDING) or activation recompute
// (RECOMPUTE) of a run: the provenance.config key when recorded, else what
// Rival's own fsdp trainer implies. That trainer records the path it took
// in its version and has no activation recompute, so its runs always know
// both.
func runSetting(r *result.Result, key string) string {
	if v := provConfig(r, key); v != "" {
		return v
	}
	if r.Framework.Name != "fsdp" {
		return ""
	}
	switch key {
	case "SHARDING":
		return fsdpSharding[fsdpPath(r)]
	case "RECOMPUTE":
		return "none"
	}
	return ""
}

// gradAccum is GBS / (MBS × DP) from a group's recorded configuration, ""
// when a field is unknown or GBS is not a whole multiple.
func gradAccum(c map[string]string) string {
	gbs, e1 := strconv.Atoi(c["global_batch_size"])
	mbs, e2 := strconv.Atoi(c["micro_batch_size"])
	dp, e3 := strconv.Atoi(c["data_parallel"])
	if e1 != nil || e2 != nil || e3 != nil || mbs <= 0 || dp <= 0 || gbs%(mbs*dp) != 0 {
		return ""
	}
	return strconv.Itoa(gbs / (mbs * dp))
}

// setupKey is the recorded configuration runs must share to be pooled.
func setupKey(r *result.Result) string {
	c := configOf(r)
	var parts []string
	for _, f := range []string{"precision", "sequence_length", "global_batch_size", "micro_batch_size", "tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel", "num_gpus"} {
		parts = append(parts, c[f])
	}
	return strings.Join(parts, "/")
}

// setupLine is the configuration line of a result: precision and FP8 recipe,
// SL, GBS, MBS, GA, TP/PP/CP/DP, GPUs, DDP or FSDP, recompute.
func setupLine(r *result.Result) string {
	q := func(p *int) string {
		if p == nil {
			return "?"
		}
		return fmt.Sprint(*p)
	}
	tc, pc := r.TrainingConfig, r.ParallelismConfig
	prec := strOr(&tc.Precision, "?")
	if tc.PrecisionAssumed {
		prec += " (assumed)"
	}
	var notRecorded []string
	if strings.EqualFold(tc.Precision, "fp8") {
		if rec := provConfig(r, "FP8_RECIPE"); rec != "" {
			prec += " " + rec
		} else {
			notRecorded = append(notRecorded, "FP8 recipe")
		}
	}
	ga := "?"
	if tc.GlobalBatchSize != nil && tc.MicroBatchSize != nil && pc.DataParallel != nil && *tc.MicroBatchSize > 0 && *pc.DataParallel > 0 {
		ga = fmt.Sprint(*tc.GlobalBatchSize / (*tc.MicroBatchSize * *pc.DataParallel))
	}
	gpus := "?"
	if n := gpuCount(r); n > 0 {
		gpus = english.Plural(n, "GPU")
	}
	if r.Platform != nil && *r.Platform == hw.PlatformCPU {
		gpus = "CPU" + cpuUse(r)
	}
	s := fmt.Sprintf("%s, SL %s, GBS %s, MBS %s, GA %s, TP %s PP %s CP %s DP %s, %s", prec, q(tc.SequenceLength), q(tc.GlobalBatchSize),
		q(tc.MicroBatchSize), ga, q(pc.TensorParallel), q(pc.PipelineParallel), q(pc.ContextParallel), q(pc.DataParallel), gpus)
	for _, k := range []struct{ key, name string }{{"SHARDING", "DDP/FSDP"}, {"RECOMPUTE", "recompute"}} {
		if v := runSetting(r, k.key); v != "" {
			s += ", " + k.name + " " + v
		} else {
			notRecorded = append(notRecorded, k.name)
		}
	}
	if len(notRecorded) > 0 {
		s += " (not recorded: " + strings.Join(notRecorded, ", ") + ")"
	}
	return s
}

// frameworkNames are what reports call each framework, by name and alias (the framework table,
// frameworks/core).
var frameworkNames = core.FrameworkLabels()

// frameworkTargets are the framework arguments of train:run, by name and alias.
var frameworkTargets = core.FrameworkTargets()

func frameworkLabel(name string) string {
	if l, ok := frameworkNames[strings.ToLower(name)]; ok {
		return l
	}
	return name
}

func platformOf(r *result.Result) string { return strOr(r.Platform, unknown) }

func gpuOf(r *result.Result) string {
	if s := resolveSpec(r); s != "" {
		return s
	}
	if platformOf(r) == hw.PlatformCPU && r.GPUInfo.DeviceName == nil {
		return "CPU"
	}
	return strOr(r.GPUInfo.DeviceName, "unknown GPU")
}

// gpuCount is the run's GPU count: num_gpus, else TP×PP×CP×DP when all four
// are recorded, else gpu_info.device_count; 0 when unknown.
func gpuCount(r *result.Result) int {
	if r.TrainingConfig.NumGPUs != nil && *r.TrainingConfig.NumGPUs > 0 {
		return *r.TrainingConfig.NumGPUs
	}
	p := r.ParallelismConfig
	if p.TensorParallel != nil && p.PipelineParallel != nil && p.ContextParallel != nil && p.DataParallel != nil {
		if n := *p.TensorParallel * *p.PipelineParallel * *p.ContextParallel * *p.DataParallel; n > 0 {
			return n
		}
	}
	if r.GPUInfo.DeviceCount != nil && *r.GPUInfo.DeviceCount > 0 {
		return *r.GPUInfo.DeviceCount
	}
	return 0
}

func modelKey(r *result.Result) string { return strOr(r.Model.Name, unknown) }

func modelLabel(r *result.Result) string {
	if r.Model.DisplayName != nil {
		return *r.Model.DisplayName
	}
	if r.Model.Name != nil {
		if m, err := models.Lookup(*r.Model.Name); err == nil {
			return m.DisplayName
		}
		return *r.Model.Name
	}
	return "unknown model"
}

func isProxy(r *result.Result) bool {
	if r.Model.Proxy != nil {
		return *r.Model.Proxy
	}
	if r.Model.Name != nil {
		if m, err := models.Lookup(*r.Model.Name); err == nil {
			return m.Proxy
		}
	}
	return false
}

// shortGPU drops the form factor for headlines ("H100 SXM" → "H100").
func shortGPU(gpu string) string {
	return strings.TrimSuffix(gpu, " SXM")
}

// resolveSpec names the spec-table key of a result's GPU: the recorded
// spec_model, else the device name as a tool prints it.
func resolveSpec(r *result.Result) string {
	if r.GPUInfo.SpecModel != nil {
		if _, ok := hw.LookupSpec(*r.GPUInfo.SpecModel); ok {
			return *r.GPUInfo.SpecModel
		}
	}
	if r.GPUInfo.DeviceName == nil {
		return ""
	}
	name := *r.GPUInfo.DeviceName
	if _, ok := hw.LookupSpec(name); ok {
		return name
	}
	vendors := []string{hw.VendorNVIDIA, hw.VendorAMD}
	if r.Platform != nil && *r.Platform == "amd" {
		vendors = []string{hw.VendorAMD}
	} else if r.Platform != nil && *r.Platform == "nvd" {
		vendors = []string{hw.VendorNVIDIA}
	}
	for _, v := range vendors {
		if k := hw.CanonicalModel(v, name, 0); k != "" {
			return k
		}
	}
	return ""
}

// cpuName is a CPU run's processor where a GPU's name would stand in a
// group's label, " (Xeon Platinum 8370C)"; "" when the result records none.
func cpuName(r *result.Result) string {
	if r.CPUInfo == nil || platformOf(r) != hw.PlatformCPU {
		return ""
	}
	m := r.CPUInfo.Model
	for _, cut := range []string{"(R)", "(TM)", "(tm)", "Intel ", "AMD ", " Processor"} {
		m = strings.ReplaceAll(m, cut, "")
	}
	if i := strings.Index(m, " CPU @"); i > 0 {
		m = m[:i]
	}
	return " (" + strings.Join(strings.Fields(m), " ") + ")"
}

// cpuUse is what a CPU run used of its processor, for the configuration
// line where a GPU run gives its GPU count: " Intel(R) Xeon(R) Platinum
// 8370C CPU @ 2.80GHz, 2 cores / 4 threads, 2 processes × 1 thread".
func cpuUse(r *result.Result) string {
	c := r.CPUInfo
	if c == nil {
		return ""
	}
	s := fmt.Sprintf(" %s, %s / %s, %s", c.Model, english.Plural(c.Cores, "core"), english.Plural(c.LogicalCPUs, "thread"), english.Plural(c.Processes, "process"))
	if c.ThreadsPerProcess != nil {
		s += " × " + english.Plural(*c.ThreadsPerProcess, "thread")
	}
	return s
}

// fsdpPath is the data-parallel path Rival's fsdp trainer says it took
// (fsdp2, fsdp1, ddp or single: the word after "; ran " in its version),
// "" for another framework or a trainer that did not say.
func fsdpPath(r *result.Result) string {
	if r.Framework.Name != "fsdp" || r.Framework.Version == nil {
		return ""
	}
	_, rest, ok := strings.Cut(*r.Framework.Version, "; ran ")
	if !ok {
		return ""
	}
	path, _, _ := strings.Cut(rest, " ")
	return path
}
