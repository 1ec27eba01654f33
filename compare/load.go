package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/result"
	"github.com/rivalbench/rival/safefile"
)

// MaxResultBytes bounds one result file; a larger file is reported, not read.
const MaxResultBytes = safefile.LimitResult

// Input formats.
const (
	FormatRival    = "rival-" + result.SchemaVersion
	FormatOldSuite = "old-suite"
)

// Input is one result that can be compared.
type Input struct {
	Source      string // file path, or "cache:<fingerprint prefix>" for a cache blob
	Fingerprint string // "blake3:<hex>" of the bytes as read
	// Format is FormatRival, FormatOldSuite, or "rival-<v> (read leniently)" for
	// a schema version this Rival does not know.
	Format string
	Result *result.Result
	// Missing lists the fields a comparison uses that this result does not
	// record (null or absent), by JSON path.
	Missing []string
	// Notes are what the loader had to do to read the file (NaN replaced,
	// schema violations, upgrade from the old suite).
	Notes []string
	// Duplicates lists other sources holding the same run, counted once:
	// byte-identical, or the same step series and run identity re-serialised
	// (see contentKey).
	Duplicates []string
	// PlatformStack is the platform software an old-suite result recorded
	// (ROCm or CUDA stack and version, torch): not the framework's version.
	PlatformStack string
}

// Problem is a file or blob that could not be used, and why.
type Problem struct {
	Source string
	// Kind is "invalid" (looks like a result but cannot be compared) or
	// "ignored" (a JSON file that is not a result, e.g. a manifest).
	Kind    string
	Reason  string
	Missing []string
}

func (p Problem) String() string {
	s := fmt.Sprintf("%s (%s): %s", p.Source, p.Kind, p.Reason)
	if len(p.Missing) > 0 {
		s += "; missing: " + strings.Join(p.Missing, ", ")
	}
	return s
}

// Load reads every *.json under dirs (recursively) and the raw blobs in extra
// (results from the cache). Results of schema 1.0, of unknown later versions
// (read leniently) and of the old suite (train_{platform}_{framework}_{model}
// [_{dataset}].json) become Inputs; files that cannot be compared become
// Problems naming what is missing. Byte-identical results count once. The
// error is for a directory that cannot be read.
func Load(ctx context.Context, dirs []string, extra [][]byte) ([]Input, []Problem, error) {
	var paths []string
	for _, dir := range dirs {
		var found []string
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(path), ".json") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("read results under %s: %w", dir, err)
		}
		sort.Strings(found)
		paths = append(paths, found...)
	}
	inputs, problems := LoadFiles(ctx, paths, extra)
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("read results: %w", err)
	}
	return inputs, problems, nil
}

// LoadFiles is Load over a list of files (in the given order) and blobs. It
// stops reading when ctx ends (Ctrl-C); the caller then reports ctx.Err().
func LoadFiles(ctx context.Context, paths []string, extra [][]byte) ([]Input, []Problem) {
	type blob struct {
		source string
		data   []byte
	}
	var blobs []blob
	var problems []Problem
	for _, p := range paths {
		if ctx.Err() != nil {
			return nil, nil
		}
		info, err := os.Stat(p)
		if err != nil {
			problems = append(problems, Problem{Source: p, Kind: "invalid", Reason: err.Error()})
			continue
		}
		if !info.Mode().IsRegular() {
			problems = append(problems, Problem{Source: p, Kind: "invalid", Reason: fmt.Sprintf("not a regular file (%s); a result is a JSON file", info.Mode().Type())})
			continue
		}
		if info.Size() > MaxResultBytes {
			problems = append(problems, Problem{Source: p, Kind: "invalid", Reason: fmt.Sprintf("%d bytes is over the %d-byte limit for a result", info.Size(), MaxResultBytes)})
			continue
		}
		// Read as a regular file within the limit again: the file may have
		// been replaced since the stat above.
		data, err := safefile.ReadFile(ctx, p, MaxResultBytes)
		if err != nil {
			problems = append(problems, Problem{Source: p, Kind: "invalid", Reason: err.Error()})
			continue
		}
		blobs = append(blobs, blob{p, data})
	}
	for _, data := range extra {
		blobs = append(blobs, blob{"cache:" + cache.HashBytes(data).Short(), data})
	}

	var inputs []Input
	seen := map[string]int{}
	for _, b := range blobs {
		in, prob := Parse(b.source, b.data)
		if prob != nil {
			problems = append(problems, *prob)
			continue
		}
		if i, dup := seen[in.Fingerprint]; dup {
			inputs[i].Duplicates = append(inputs[i].Duplicates, b.source)
			continue
		}
		if series, full := contentKey(in.Result); series != "" {
			if i, dup := seen[full]; dup {
				inputs[i].Duplicates = append(inputs[i].Duplicates, b.source+" (same run re-serialised: same step series, run identity and figures)")
				continue
			}
			if i, same := seen[series]; same {
				// The same run with other figures: one copy was edited. Both
				// stay, so the checks can name the one that disagrees.
				in.Notes = append(in.Notes, "same step series and run identity as "+inputs[i].Source+" but different figures: one of the two was edited")
			} else {
				seen[series] = len(inputs)
			}
			seen[full] = len(inputs)
		}
		seen[in.Fingerprint] = len(inputs)
		inputs = append(inputs, *in)
	}
	return inputs, problems
}

// contentKey identifies a run by what it measured rather than by its bytes:
// its step series (step numbers, step times, losses) and its identity
// (platform, hardware, GPU, framework, model, dataset, configuration and
// where and when it ran). Two files with equal keys are one run written
// twice (re-indented, keys reordered, a field added by a later tool) when
// their figures (performance metrics, training and parallelism
// configuration) are equal too: full covers those, series does not. Both
// "" when the result has no step series to tell runs apart.
func contentKey(r *result.Result) (series, full string) {
	if len(r.StepTimes) == 0 {
		return "", ""
	}
	id := struct {
		Platform, Hardware, GPU, Model, Dataset *string
		Framework                               string
		Setup                                   string
		Host, Started                           string
		RunIndex                                int
		Slurm                                   *string
		Steps                                   []int
		Times, Losses                           []*float64
	}{r.Platform, r.HardwareFingerprint, r.GPUInfo.DeviceName, r.Model.Name, r.Dataset.Fingerprint,
		r.Framework.Name, setupKey(r), "", "", 0, nil, r.StepNumbers, r.StepTimes, r.LossValues}
	if p := r.Provenance; p != nil {
		id.Host, id.Started, id.RunIndex, id.Slurm = p.Host, p.StartedAt, p.RunIndex, p.SlurmJobID
	}
	data, err := json.Marshal(id)
	if err != nil {
		return "", ""
	}
	figures, err := json.Marshal([]any{r.PerformanceMetrics, r.TrainingConfig, r.ParallelismConfig, r.WarmupStepsExcluded})
	if err != nil {
		return "", ""
	}
	return "series:" + cache.HashBytes(data).String(), "content:" + cache.HashBytes(append(data, figures...)).String()
}

func fingerprint(data []byte) string {
	return "blake3:" + cache.HashBytes(data).String()
}

// oldName matches the old suite's result file names.
var oldName = regexp.MustCompile(`^train_(amd|nvd|cpu)_([a-z0-9]+)_([a-z0-9]+)(?:_([A-Za-z0-9.-]+))?\.json$`)

// Parse reads one result document. source names it in messages; for old-suite
// files its base name supplies framework, model and dataset. A result without
// a usable throughput is a Problem: it cannot be compared.
func Parse(source string, data []byte) (*Input, *Problem) {
	in, prob := parseDoc(source, data)
	if prob != nil {
		return nil, prob
	}
	pm := in.Result.PerformanceMetrics
	if !(pm.TokensPerSecondPerGPU > 0) || math.IsInf(pm.TokensPerSecondPerGPU, 0) {
		return nil, &Problem{Source: source, Kind: "invalid", Missing: in.Missing,
			Reason: "no usable throughput: performance_metrics.tokens_per_second_per_gpu is missing, zero or not finite"}
	}
	return in, nil
}

// parseDoc decodes and upgrades a document without judging its throughput.
func parseDoc(source string, data []byte) (*Input, *Problem) {
	invalid := func(reason string, missing ...string) (*Input, *Problem) {
		return nil, &Problem{Source: source, Kind: "invalid", Reason: reason, Missing: missing}
	}
	clean, replaced := replaceNonFinite(data)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(clean, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return invalid(fmt.Sprintf("not valid JSON at byte %d: %v", syn.Offset, err))
		}
		return invalid("not a JSON object: " + err.Error())
	}
	in := &Input{Source: source, Fingerprint: fingerprint(data)}
	if replaced > 0 {
		in.Notes = append(in.Notes, fmt.Sprintf("%d NaN/Infinity literal(s) read as null (unknown)", replaced))
	}
	_, hasVersion := raw["schema_version"]
	_, hasPerf := raw["performance_metrics"]
	base := filepath.Base(source)
	switch {
	case hasVersion:
		var ver string
		_ = json.Unmarshal(raw["schema_version"], &ver)
		var r result.Result
		if err := json.Unmarshal(clean, &r); err != nil {
			return invalid("schema_version " + ver + " document does not decode: " + err.Error())
		}
		in.Result = &r
		if ver == result.SchemaVersion {
			in.Format = FormatRival
			if err := result.Validate(clean); err != nil {
				in.Notes = append(in.Notes, "does not match the result schema: "+firstLines(err.Error(), 4))
			}
		} else {
			in.Format = fmt.Sprintf("rival-%s (read leniently)", ver)
			in.Notes = append(in.Notes, fmt.Sprintf("schema version %q is not %s, the version this Rival writes: fields it does not know are ignored and missing ones are shown as missing", ver, result.SchemaVersion))
		}
	case hasPerf || oldName.MatchString(base):
		r, notes, stack, err := upgradeOld(base, clean)
		if err != nil {
			return invalid(err.Error())
		}
		in.Format, in.Result, in.PlatformStack = FormatOldSuite, r, stack
		in.Notes = append(in.Notes, notes...)
	default:
		return nil, &Problem{Source: source, Kind: "ignored", Reason: "JSON without schema_version or performance_metrics: not a result"}
	}
	in.Missing = missingFields(in.Result)
	return in, nil
}

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d more lines)", len(lines)-n))
	}
	return strings.Join(lines, "; ")
}

// replaceNonFinite turns the NaN, Infinity and -Infinity literals Python's
// json module writes into null, outside strings, so such files still load.
func replaceNonFinite(data []byte) ([]byte, int) {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data, 0
	}
	out := make([]byte, 0, len(data))
	n := 0
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		matched := false
		for _, lit := range []string{"-Infinity", "+Infinity", "Infinity", "NaN"} {
			if bytes.HasPrefix(data[i:], []byte(lit)) {
				out = append(out, "null"...)
				i += len(lit) - 1
				n++
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, c)
		}
	}
	return out, n
}

// missingFields lists what the comparison uses but the result lacks.
func missingFields(r *result.Result) []string {
	var m []string
	chk := func(path string, missing bool) {
		if missing {
			m = append(m, path)
		}
	}
	chk("platform", r.Platform == nil)
	chk("framework.name", r.Framework.Name == "")
	chk("framework.version", r.Framework.Version == nil)
	chk("model.name", r.Model.Name == nil)
	chk("dataset.name", r.Dataset.Name == nil)
	chk("dataset.fingerprint", r.Dataset.Fingerprint == nil)
	chk("config_fingerprint", r.ConfigFingerprint == nil)
	chk("tokenizer_fingerprint", r.TokenizerFingerprint == nil)
	chk("image_digest", r.ImageDigest == nil)
	chk("gpu_info.spec_model", r.GPUInfo.SpecModel == nil)
	chk("training_config.num_gpus", r.TrainingConfig.NumGPUs == nil)
	chk("training_config.global_batch_size", r.TrainingConfig.GlobalBatchSize == nil)
	chk("training_config.sequence_length", r.TrainingConfig.SequenceLength == nil)
	chk("training_config.precision", r.TrainingConfig.Precision == "" || r.TrainingConfig.PrecisionAssumed)
	chk("parallelism_config.tensor_parallel", r.ParallelismConfig.TensorParallel == nil)
	chk("parallelism_config.pipeline_parallel", r.ParallelismConfig.PipelineParallel == nil)
	chk("parallelism_config.data_parallel", r.ParallelismConfig.DataParallel == nil)
	chk("memory_metrics.peak_allocated_mib", r.MemoryMetrics.PeakAllocatedMiB == nil)
	chk("memory_metrics.peak_reserved_mib", r.MemoryMetrics.PeakReservedMiB == nil)
	chk("step_times", len(r.StepTimes) == 0)
	chk("loss_values", len(r.LossValues) == 0)
	return m
}

// oldResult is the old suite's result layout (what its Python scripts wrote).
type oldResult struct {
	Platform string `json:"platform"`
	GPUInfo  struct {
		DeviceCount     *int     `json:"device_count"`
		DeviceName      *string  `json:"device_name"`
		TotalMemoryGB   *float64 `json:"total_memory_gb"`
		SoftwareStack   *string  `json:"software_stack"`
		SoftwareVersion *string  `json:"software_version"`
		PyTorchVersion  *string  `json:"pytorch_version"`
	} `json:"gpu_info"`
	Parallelism struct {
		TP *int `json:"tensor_model_parallel_size"`
		PP *int `json:"pipeline_model_parallel_size"`
		DP *int `json:"data_parallel_size"`
	} `json:"parallelism_config"`
	Training struct {
		MaxSteps  *int    `json:"max_steps"`
		GBS       *int    `json:"global_batch_size"`
		MBS       *int    `json:"micro_batch_size"`
		SeqLen    *int    `json:"sequence_length"`
		NumGPUs   *int    `json:"num_gpus"`
		Precision *string `json:"precision"`
	} `json:"training_config"`
	Perf struct {
		TotalSteps  *int     `json:"total_steps"`
		AvgStep     *float64 `json:"avg_step_time_seconds"`
		MinStep     *float64 `json:"min_step_time_seconds"`
		MaxStep     *float64 `json:"max_step_time_seconds"`
		StepsPerSec *float64 `json:"steps_per_second"`
		TPS         *float64 `json:"tokens_per_second"`
		TPSPerGPU   *float64 `json:"tokens_per_second_per_gpu"`
	} `json:"performance_metrics"`
	Memory struct {
		PeakAllocGB *float64 `json:"peak_memory_allocated_gb"`
		PeakResGB   *float64 `json:"peak_memory_reserved_gb"`
	} `json:"memory_metrics"`
	StepTimes     []*float64 `json:"step_times"`
	LossValues    []*float64 `json:"loss_values"`
	LearningRates []*float64 `json:"learning_rates"`
}

// oldFrameworks maps the old suite's file-name abbreviations to framework names.
var oldFrameworks = core.OldSuiteNames(map[string]string{"tran": "transformers", "deep": "deepspeed"})

// gbToMiB converts the old suite's decimal gigabytes (10^9 bytes, as its
// total_memory_gb shows: 85.0 for an 80 GB H100) to MiB.
func gbToMiB(gb float64) float64 { return gb * 1e9 / (1 << 20) }

// upgradeOld maps an old-suite result onto the unified schema; what the old
// suite never recorded stays null and is listed as missing.
func upgradeOld(base string, data []byte) (*result.Result, []string, string, error) {
	var o oldResult
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, nil, "", fmt.Errorf("old-suite result does not decode: %v", err)
	}
	notes := []string{"old-suite result upgraded to schema " + result.SchemaVersion + "; fields it never recorded are null"}
	r := &result.Result{SchemaVersion: result.SchemaVersion, Problems: []result.Problem{}}
	platform := o.Platform
	var fwShort, model, dataset string
	if m := oldName.FindStringSubmatch(base); m != nil {
		if platform == "" {
			platform = m[1]
		}
		fwShort, model, dataset = m[2], m[3], m[4]
	} else {
		notes = append(notes, "file name is not train_{platform}_{framework}_{model}[_{dataset}].json: framework and model unknown")
	}
	switch platform {
	case hw.PlatformAMD, hw.PlatformNVIDIA, hw.PlatformCPU:
		r.Platform = &platform
	}
	if fwShort != "" {
		name := fwShort
		if full, ok := oldFrameworks[fwShort]; ok {
			name = full
		}
		r.Framework = result.Framework{Name: name, Requested: &fwShort}
	} else {
		r.Framework.Name = "unknown"
	}
	if model != "" {
		if m, err := models.Lookup(model); err == nil {
			proxy := m.Proxy
			n := m.Params()
			exact := true
			r.Model = result.Model{Name: &m.Name, DisplayName: &m.DisplayName, Proxy: &proxy, ParameterCount: &n, ParameterCountExact: &exact}
		} else {
			r.Model.Name = &model
			notes = append(notes, fmt.Sprintf("model %q is not in Rival's registry: no FLOPs, so no TFLOP/s or MFU", model))
		}
	}
	if dataset != "" {
		r.Dataset.Name = &dataset
	}

	gi := &r.GPUInfo
	gi.DeviceCount, gi.DeviceName = o.GPUInfo.DeviceCount, o.GPUInfo.DeviceName
	if o.GPUInfo.TotalMemoryGB != nil {
		mib := int64(math.Round(gbToMiB(*o.GPUInfo.TotalMemoryGB)))
		gi.MemoryPerGPUMiB = &mib
	}
	// The old suite recorded the platform stack, never the framework's
	// version: framework.version stays unknown.
	var stack string
	if o.GPUInfo.SoftwareStack != nil && o.GPUInfo.SoftwareVersion != nil {
		stack = *o.GPUInfo.SoftwareStack + " " + *o.GPUInfo.SoftwareVersion
		if o.GPUInfo.PyTorchVersion != nil {
			stack += ", torch " + *o.GPUInfo.PyTorchVersion
		}
	}

	tc := &r.TrainingConfig
	tc.NumGPUs, tc.GlobalBatchSize, tc.MicroBatchSize, tc.SequenceLength, tc.TrainIters = o.Training.NumGPUs, o.Training.GBS, o.Training.MBS, o.Training.SeqLen, o.Training.MaxSteps
	if tc.NumGPUs == nil {
		tc.NumGPUs = gi.DeviceCount
	}
	if o.Training.Precision != nil && (strings.EqualFold(*o.Training.Precision, "bf16") || strings.EqualFold(*o.Training.Precision, "fp8")) {
		tc.Precision = strings.ToLower(*o.Training.Precision)
	} else {
		tc.Precision, tc.PrecisionAssumed = "bf16", true
		r.Problems = append(r.Problems, result.Problem{Name: "precision_assumed", Detail: "the old suite did not record precision; bf16 assumed for the MFU peak"})
	}
	r.ParallelismConfig = result.ParallelismConfig{TensorParallel: o.Parallelism.TP, PipelineParallel: o.Parallelism.PP, DataParallel: o.Parallelism.DP}
	if spec := resolveSpec(r); spec != "" {
		gi.SpecModel = &spec
		if s, ok := hw.LookupSpec(spec); ok && s.TDPWatts > 0 {
			tdp := s.TDPWatts
			gi.TDPWatts = &tdp
		}
		if peak, err := hw.PeakTFLOPs(spec, tc.Precision); err == nil {
			gi.PeakTFLOPsDense = &peak
		}
	}

	n := len(o.StepTimes)
	r.StepTimes, r.LossValues, r.LearningRates = o.StepTimes, o.LossValues, o.LearningRates
	r.StepNumbers = make([]int, n)
	for i := range r.StepNumbers {
		r.StepNumbers[i] = i + 1
	}
	r.GradNorms = []*float64{}
	tc.StepsLogged = n

	pm := &r.PerformanceMetrics
	pm.StepTimeSource = "log"
	deref := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	pm.AvgStepTimeSeconds, pm.MinStepTimeSeconds, pm.MaxStepTimeSeconds = deref(o.Perf.AvgStep), deref(o.Perf.MinStep), deref(o.Perf.MaxStep)
	pm.StepsPerSecond, pm.TokensPerSecond, pm.TokensPerSecondPerGPU = deref(o.Perf.StepsPerSec), deref(o.Perf.TPS), deref(o.Perf.TPSPerGPU)
	if tc.GlobalBatchSize != nil && tc.SequenceLength != nil {
		pm.TokensPerStep = int64(*tc.GlobalBatchSize) * int64(*tc.SequenceLength)
	}
	// The old suite's own averages are kept; the spread is recomputed from its
	// step series, leaving out OldSuiteWarmupShare of the logged steps (at
	// least 1) as warm-up: the old suite recorded none.
	warm := min(max(1, int(float64(n)*OldSuiteWarmupShare)), max(0, n-1))
	r.WarmupStepsExcluded = warm
	var times []float64
	for _, t := range o.StepTimes[warm:] {
		if t != nil && *t > 0 {
			times = append(times, *t)
		}
	}
	if len(times) > 0 {
		sort.Float64s(times)
		pm.MeasuredSteps = len(times)
		pm.MedianStepTimeSeconds = percentile(times, 0.5)
		pm.P10StepTimeSeconds, pm.P90StepTimeSeconds = percentile(times, 0.1), percentile(times, 0.9)
		pm.StdStepTimeSeconds = sampleSD(times)
		if pm.AvgStepTimeSeconds == 0 {
			pm.AvgStepTimeSeconds = mean(times)
		}
	}
	if pm.TokensPerSecondPerGPU == 0 && pm.TokensPerSecond > 0 && tc.NumGPUs != nil && *tc.NumGPUs > 0 {
		pm.TokensPerSecondPerGPU = pm.TokensPerSecond / float64(*tc.NumGPUs)
	}
	if o.Memory.PeakAllocGB != nil {
		v := gbToMiB(*o.Memory.PeakAllocGB)
		r.MemoryMetrics.PeakAllocatedMiB = &v
	}
	if o.Memory.PeakResGB != nil {
		v := gbToMiB(*o.Memory.PeakResGB)
		r.MemoryMetrics.PeakReservedMiB = &v
	}
	r.Log.Source = base
	return r, notes, stack, nil
}
