package tasks

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/internal/units"
	"github.com/rivalbench/rival/models"
)

type keyKind int

const (
	kString keyKind = iota
	kInt
	kFloat
	kBool
	kList
	kEnum
)

// keySpec describes one configuration key.
type keySpec struct {
	name  string
	def   string
	kind  keyKind
	min   float64 // for kInt and kFloat
	max   float64 // 0 means none
	enum  []string
	doc   string
	train bool // part of the training configuration fingerprint
	opt   bool // a string that may be empty
}

// configKeys is every key config.env may set, with the fair-comparison
// defaults of the original suite.
var configKeys = []keySpec{
	{name: "DATA_DIR", def: "data", kind: kString, doc: "where datasets (raw, filtered, encoded) live"},
	{name: "OUTPUT_DIR", def: "output", kind: kString, doc: "where results, logs, plots and reports go"},
	{name: "DATASET", def: "bc", kind: kEnum, enum: []string{"bc", "c4"}, doc: "training corpus: bc (BookCorpus) or c4 (C4 en)", train: true},
	{name: "MODELS", def: "llama,qwen,mistral", kind: kList, doc: "models to prepare and train (llama, qwen, mistral)"},
	{name: "SEED", def: "42", kind: kInt, min: 0, doc: "random seed everywhere", train: true},
	{name: "MBS", def: "1", kind: kInt, min: 1, doc: "micro batch size per GPU", train: true},
	{name: "SL", def: "2048", kind: kInt, min: 1, doc: "sequence length", train: true},
	{name: "GBS", def: "", kind: kInt, min: 1, doc: "global batch size; derived as MBS×DP×GA, and must equal it when set", train: true},
	{name: "LR", def: "3.0e-4", kind: kFloat, min: 0, doc: "peak learning rate", train: true},
	{name: "MIN_LR", def: "3.0e-5", kind: kFloat, min: 0, doc: "final learning rate of the cosine decay", train: true},
	{name: "WEIGHT_DECAY", def: "0.1", kind: kFloat, min: 0, doc: "AdamW weight decay", train: true},
	{name: "BETA1", def: "0.9", kind: kFloat, min: 0, max: 1, doc: "AdamW beta1", train: true},
	{name: "BETA2", def: "0.95", kind: kFloat, min: 0, max: 1, doc: "AdamW beta2", train: true},
	{name: "WARMUP_STEPS", def: "50", kind: kInt, min: 0, doc: "linear warm-up steps", train: true},
	{name: "TRAIN_ITERS", def: "500", kind: kInt, min: 1, doc: "training iterations", train: true},
	{name: "DATA_SAMPLES", def: "50000", kind: kInt, min: 1, doc: "documents fetched from the dataset"},
	{name: "TRAIN_SPLIT", def: "0.8", kind: kFloat, min: 0, max: 1, doc: "share of documents in the train split (by documents, in input order)", train: true},
	{name: "PRECISION", def: "bf16", kind: kEnum, enum: []string{"bf16", "fp8", "fp32"}, doc: "training precision", train: true},
	{name: "TP", def: "1", kind: kInt, min: 1, doc: "tensor parallel size", train: true},
	{name: "PP", def: "1", kind: kInt, min: 1, doc: "pipeline parallel size", train: true},
	{name: "DP", def: "8", kind: kInt, min: 1, doc: "data parallel size", train: true},
	{name: "GA", def: "8", kind: kInt, min: 1, doc: "gradient accumulation steps", train: true},
	{name: "EVAL_INTERVAL_SAMPLES", def: "0", kind: kInt, min: 0, doc: "held-out evaluation every this many training samples, a multiple of GBS (MLPerf's Llama 3.1 8B: 12288); 0: none", train: true},
	{name: "EVAL_SAMPLES", def: "1024", kind: kInt, min: 1, doc: "held-out sequences each evaluation reads, the same ones from the first every time, from the encoded test split", train: true},
	{name: "FILTER_MIN_CHARS", def: "100", kind: kInt, min: 0, doc: "filter: drop documents shorter than this many characters"},
	{name: "FILTER_MIN_WORDS", def: "20", kind: kInt, min: 0, doc: "filter: drop documents with fewer words"},
	{name: "PROFILE", def: "0", kind: kBool, doc: "capture a profiler trace during training"},
	{name: "PROFILE_STEP_START", def: "10", kind: kInt, min: 0, doc: "first profiled step"},
	{name: "PROFILE_STEP_END", def: "12", kind: kInt, min: 0, doc: "last profiled step"},
	{name: "PROFILE_RANKS", def: "0", kind: kList, doc: "ranks that write profiler traces"},
	{name: "HISTORY_THRESHOLD", def: "5%", kind: kString, doc: "compare's History: a step from one software stack to the next is a regression or improvement only beyond this change (5% or 0.05)"},
	{name: "TARGET_LOSS", def: "", kind: kString, opt: true, doc: "compare's time to target: the held-out loss (nats per token) each run's evaluations must reach, such as 3.3 (MLPerf's Llama 3.1 8B); empty: the target MLPerf logs record, else none"},
	{name: "JOBS", def: "0", kind: kInt, min: 0, doc: "tasks run in parallel (0: one per CPU)"},
	{name: "RUNS", def: "1", kind: kInt, min: 1, doc: "repetitions of every training run, each its own cached result"},
	{name: "FORCE", def: "0", kind: kBool, doc: "re-run training even when a cached result exists"},
	{name: "TRAIN_TIMEOUT", def: "12h", kind: kString, doc: "a training run still going after this long is stopped (30m, 6h, 2d)"},
	{name: "NNODES", def: "1", kind: kInt, min: 1, doc: "nodes per run; above 1 the run goes through Slurm", train: true},
	{name: "SLURM", def: "0", kind: kBool, doc: "submit runs through Slurm even on one node"},
	{name: "SLURM_PARTITION", def: "", kind: kString, opt: true, doc: "Slurm partition (empty: the cluster's default)"},
	{name: "SLURM_ACCOUNT", def: "", kind: kString, opt: true, doc: "Slurm account (empty: the user's default)"},
	{name: "SLURM_TIME", def: "", kind: kString, opt: true, doc: "Slurm time limit, e.g. 2:00:00 (empty: the partition's)"},
	{name: "SLURM_PENDING_TIMEOUT", def: "2h", kind: kString, doc: "a job still pending after this long is cancelled"},
}

// config is the validated configuration: config.env, then environment
// overrides, then derived values.
type config struct {
	values  map[string]string
	sources map[string]string // where each value came from, for errors
	secrets map[string]string
}

// configKeyDocs lists the known keys with their defaults and meaning.
func configKeyDocs() []struct{ Name, Default, Doc string } {
	out := make([]struct{ Name, Default, Doc string }, len(configKeys))
	for i, k := range configKeys {
		out[i] = struct{ Name, Default, Doc string }{k.name, k.def, k.doc}
	}
	return out
}

func specFor(name string) (keySpec, bool) {
	for _, k := range configKeys {
		if k.name == name {
			return k, true
		}
	}
	return keySpec{}, false
}

func knownKeyNames() string {
	names := make([]string, len(configKeys))
	for i, k := range configKeys {
		names[i] = k.name
	}
	return strings.Join(names, ", ")
}

// parseEnvFile reads KEY=VALUE lines: blank lines and # comments are
// skipped, an optional `export ` prefix and matching quotes are removed.
//
// The file must be a regular file of at most cache.LimitConfig bytes; a
// line may be as long as the file.
func parseEnvFile(path string, each func(line int, key, value string) error) error {
	f, fi, err := cache.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi.Size() > cache.LimitConfig {
		return fmt.Errorf("%s: %d bytes, more than the %d a configuration file may hold: %w", path, fi.Size(), cache.LimitConfig, cache.ErrTooLarge)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), cache.LimitConfig+1)
	n := 0
	seen := map[string]int{}
	for sc.Scan() {
		n++
		text := sc.Text()
		if n == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // a UTF-8 byte-order mark
		}
		line := strings.TrimSpace(text)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		// Never echo a line or a key that is not a plain KEY: it may be a
		// token pasted on its own line, or the first line of a file that
		// is no configuration at all.
		if !ok || !isKeyName(k) {
			return fmt.Errorf("%s:%d: expected KEY=VALUE with KEY made of A-Z, 0-9 and _ (the line is not shown: it may hold a secret)", path, n)
		}
		if first, dup := seen[k]; dup {
			return fmt.Errorf("%s:%d: %s is already set on line %d; keep one", path, n, k, first)
		}
		seen[k] = n
		v, err := envValue(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, n, k, err)
		}
		if err := each(n, k, v); err != nil {
			return err
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return fmt.Errorf("%s:%d: the line is longer than %d bytes (the line is not shown: it may hold a secret)", path, n+1, cache.LimitConfig)
	} else if err != nil {
		return fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	return nil
}

// isKeyName reports whether k is spelled like a configuration key.
func isKeyName(k string) bool {
	if k == "" || len(k) > 64 || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, c := range k {
		if !(c == '_' || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// envValue reads a value: "quoted" or 'quoted' (then only a # comment may
// follow), or bare up to a " #" comment.
func envValue(v string) (string, error) {
	if v != "" && (v[0] == '"' || v[0] == '\'') {
		end := strings.IndexByte(v[1:], v[0])
		if end < 0 {
			return "", fmt.Errorf("no closing %c", v[0])
		}
		rest := strings.TrimSpace(v[end+2:])
		if rest != "" && !strings.HasPrefix(rest, "#") {
			return "", fmt.Errorf("text after the closing quote (put a comment after \" #\")")
		}
		return v[1 : end+1], nil
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v, nil
}

// loadConfig reads path (config.env; a missing file means all defaults),
// applies overrides from getenv for every known key, reads secretsPath
// (secrets.env, optional) and validates the result.
func loadConfig(path, secretsPath string, getenv func(string) (string, bool)) (*config, error) {
	c := &config{values: map[string]string{}, sources: map[string]string{}, secrets: map[string]string{}}
	for _, k := range configKeys {
		c.values[k.name] = k.def
		c.sources[k.name] = "default"
	}
	err := parseEnvFile(path, func(line int, key, value string) error {
		if _, ok := specFor(key); !ok {
			return fmt.Errorf("%s:%d: unknown key %s (known keys: %s)", path, line, key, knownKeyNames())
		}
		c.values[key] = value
		c.sources[key] = fmt.Sprintf("%s:%d", path, line)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("config: %w", err)
	}
	for _, k := range configKeys {
		if v, ok := getenv(k.name); ok {
			c.values[k.name] = v
			c.sources[k.name] = "environment"
		}
	}
	if secretsPath != "" {
		err := parseEnvFile(secretsPath, func(line int, key, value string) error {
			c.secrets[key] = value
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			// Never echo the line: it may hold a token.
			return nil, fmt.Errorf("secrets: cannot read %s (expected HF_TOKEN=... lines)", secretsPath)
		}
	}
	if v, ok := getenv("HF_TOKEN"); ok && v != "" {
		c.secrets["HF_TOKEN"] = v
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *config) fieldErr(key, format string, args ...any) error {
	return fmt.Errorf("config %s (from %s): %s", key, c.sources[key], fmt.Sprintf(format, args...))
}

func (c *config) validate() error {
	for _, k := range configKeys {
		v := c.values[k.name]
		if v == "" && k.name == "GBS" {
			continue
		}
		switch k.kind {
		case kInt:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return c.fieldErr(k.name, "%q is not an integer", v)
			}
			if float64(n) < k.min || (k.max > 0 && float64(n) > k.max) {
				return c.fieldErr(k.name, "%d is out of range (at least %g)", n, k.min)
			}
		case kFloat:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil && !math.IsInf(f, 0) {
				return c.fieldErr(k.name, "%q is not a number", v)
			}
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return c.fieldErr(k.name, "%s is not a finite number", v)
			}
			if f < k.min || (k.max > 0 && f > k.max) {
				return c.fieldErr(k.name, "%g is out of range [%g, %g]", f, k.min, k.max)
			}
		case kBool:
			if _, err := strconv.ParseBool(v); err != nil {
				return c.fieldErr(k.name, "%q is not a boolean (use 0 or 1)", v)
			}
		case kEnum:
			ok := k.name == "DATASET" && v == sampleDataset && c.sources[k.name] == demoDatasetSource
			for _, e := range k.enum {
				ok = ok || v == e
			}
			if !ok {
				return c.fieldErr(k.name, "%q is not one of %s", v, strings.Join(k.enum, ", "))
			}
		case kList:
			if strings.TrimSpace(v) == "" {
				return c.fieldErr(k.name, "empty list")
			}
		case kString:
			if v == "" && !k.opt {
				return c.fieldErr(k.name, "empty value")
			}
		}
	}
	for _, m := range c.list("MODELS") {
		if !slices.Contains(models.Bases(), m) {
			return c.fieldErr("MODELS", "unknown model %q (known: %s)", m, strings.Join(models.Bases(), ", "))
		}
	}
	split := c.float("TRAIN_SPLIT")
	if split <= 0 || split > 1 {
		return c.fieldErr("TRAIN_SPLIT", "%g must be in (0, 1]", split)
	}
	product, ok := mulNoOverflow(c.int("MBS"), c.int("DP"), c.int("GA"))
	if !ok {
		return c.fieldErr("MBS", "MBS×DP×GA overflows (%d×%d×%d); these are a micro batch, a GPU count and a step count", c.int("MBS"), c.int("DP"), c.int("GA"))
	}
	if c.values["GBS"] == "" {
		c.values["GBS"] = strconv.Itoa(product)
		c.sources["GBS"] = "derived MBS×DP×GA"
	}
	// The fair configuration's own rules, with the messages every framework gives (core.CheckFair).
	var fe *core.FairError
	if err := core.CheckFair(fairFromConfig(c)); errors.As(err, &fe) {
		return c.fieldErr(fe.Key, "%s", fe.Msg)
	}
	for _, k := range []string{"TRAIN_TIMEOUT", "SLURM_PENDING_TIMEOUT"} {
		d, err := units.ParseAge(c.values[k])
		if err != nil {
			return c.fieldErr(k, "%v", err)
		}
		if d <= 0 {
			return c.fieldErr(k, "%s is no limit at all; give a duration such as 12h (a run still going after it is stopped)", c.values[k])
		}
	}
	return nil
}

// mulNoOverflow multiplies positive ints, reporting overflow.
func mulNoOverflow(ns ...int) (int, bool) {
	p := 1
	for _, n := range ns {
		if n <= 0 {
			return 0, false
		}
		if p > math.MaxInt/n {
			return 0, false
		}
		p *= n
	}
	return p, true
}

// with returns a copy with some keys replaced, validated again; source
// labels them in errors (for example "demo").
func (c *config) with(source string, values map[string]string) (*config, error) {
	n := &config{values: map[string]string{}, sources: map[string]string{}, secrets: c.secrets}
	for k, v := range c.values {
		n.values[k] = v
		n.sources[k] = c.sources[k]
	}
	for k, v := range values {
		if _, ok := specFor(k); !ok {
			return nil, fmt.Errorf("config: unknown key %s", k)
		}
		n.values[k] = v
		n.sources[k] = source
	}
	if values["GBS"] == "" && n.sources["GBS"] == "derived MBS×DP×GA" {
		n.values["GBS"] = ""
	}
	if err := n.validate(); err != nil {
		return nil, err
	}
	return n, nil
}

// sampleDataset is the DATASET value of the demo's runs: the sample corpus
// shipped in testdata/sample. Only the demo sets it (onDemoDataset);
// config.env and the environment choose among the hub datasets.
const sampleDataset = "sample"

const demoDatasetSource = "demo (the shipped sample corpus, testdata/sample)"

// onDemoDataset is c training on the shipped sample corpus: its DATASET, in
// the results' records and the configuration fingerprint, says so.
func (c *config) onDemoDataset() (*config, error) {
	return c.with(demoDatasetSource, map[string]string{"DATASET": sampleDataset})
}

// get returns a key's value.
func (c *config) get(key string) string {
	if _, ok := specFor(key); !ok {
		panic("tasks: unknown config key " + key) // programming error, not input
	}
	return c.values[key]
}

// int returns an integer key (validated at load).
func (c *config) int(key string) int {
	n, _ := strconv.Atoi(c.get(key))
	return n
}

// float returns a numeric key (validated at load).
func (c *config) float(key string) float64 {
	f, _ := strconv.ParseFloat(c.get(key), 64)
	return f
}

// bool returns a boolean key (validated at load).
func (c *config) bool(key string) bool {
	b, _ := strconv.ParseBool(c.get(key))
	return b
}

// list returns a comma-separated key's items.
func (c *config) list(key string) []string {
	var out []string
	for _, s := range strings.Split(c.get(key), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// secret returns a secret (HF_TOKEN) for use in a request; it is never part
// of a key, a record, a result or a log.
func (c *config) secret(name string) string { return c.secrets[name] }

// trainingValues returns the keys that define a training configuration,
// sorted, for results and fingerprints.
func (c *config) trainingValues() map[string]string {
	out := map[string]string{}
	for _, k := range configKeys {
		if k.train {
			out[k.name] = c.values[k.name]
		}
	}
	// Without evaluation its keys change nothing a run does, so they stay out of the fingerprint and
	// runs from before they existed keep their keys.
	if out["EVAL_INTERVAL_SAMPLES"] == "0" {
		delete(out, "EVAL_INTERVAL_SAMPLES")
		delete(out, "EVAL_SAMPLES")
	}
	return out
}

// fingerprint is BLAKE3 over the canonical training configuration: two
// runs with one fingerprint used the same fair configuration.
func (c *config) fingerprint() cache.Digest {
	vals := c.trainingValues()
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("rival-config/v1\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, vals[k])
	}
	return cache.HashBytes([]byte(b.String()))
}

// String lists the configuration without secrets.
func (c *config) String() string {
	var b strings.Builder
	for _, k := range configKeys {
		fmt.Fprintf(&b, "%s=%s\n", k.name, c.values[k.name])
	}
	return b.String()
}

// fairFromConfig converts config.env's training keys into the frameworks'
// Fair configuration.
func fairFromConfig(c *config) core.Fair {
	var ranks []int
	for _, r := range c.list("PROFILE_RANKS") {
		if n, err := strconv.Atoi(r); err == nil {
			ranks = append(ranks, n)
		}
	}
	return core.Fair{
		Seed: c.int("SEED"), MBS: c.int("MBS"), SL: c.int("SL"), GA: c.int("GA"), GBS: c.int("GBS"),
		TP: c.int("TP"), PP: c.int("PP"), DP: c.int("DP"), TrainIters: c.int("TRAIN_ITERS"), WarmupSteps: c.int("WARMUP_STEPS"),
		LR: c.float("LR"), MinLR: c.float("MIN_LR"), WeightDecay: c.float("WEIGHT_DECAY"), Beta1: c.float("BETA1"), Beta2: c.float("BETA2"),
		Precision: c.get("PRECISION"), Profile: c.bool("PROFILE"), ProfileStepStart: c.int("PROFILE_STEP_START"),
		ProfileStepEnd: c.int("PROFILE_STEP_END"), ProfileRanks: ranks,
		EvalIntervalSamples: c.int("EVAL_INTERVAL_SAMPLES"), EvalSamples: c.int("EVAL_SAMPLES"),
	}
}
