// Package effective is the effective configuration of a training run: what the framework built after
// all its defaults, config merges and validation, read back from the framework's own objects by the
// preflight (Megatron's args and TransformerConfig for mega and prim, Megatron-Bridge's validated
// ConfigContainer for nemo, TorchTitan's job config, model args and optimizer for titan, the fsdp
// trainer's own model and optimizer), in one shape for every framework.
//
// Want derives the same shape from Rival's workload (the model registry and config.env's recipe);
// Compare lists every field where the two differ, with both values. train:check fails on any
// difference, every result records the run's effective configuration, and compare's fairness table
// is built from them.
package effective

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/rivalbench/rival/frameworks/core"
)

// LinePrefix starts the preflight's line that carries the effective configuration as JSON.
const LinePrefix = "preflight effective: "

// Parameter kinds the weight-decay rule is stated over (NoDecay lists those without decay).
const (
	KindEmbedding = "embedding"
	KindNorm      = "norm"
	KindBias      = "bias"
	KindLinear    = "linear"
	KindOutput    = "output"
)

// Config is one run's effective configuration. JSON names are the result file's (snake_case, flat,
// so a results table loads it as columns).
type Config struct {
	// Model shape.
	Hidden  int `json:"hidden"`
	Layers  int `json:"layers"`
	Heads   int `json:"heads"`
	KVHeads int `json:"kv_heads"`
	FFN     int `json:"ffn"`
	// HeadDim is the width of one attention head (Megatron's kv_channels).
	HeadDim    int     `json:"head_dim"`
	Vocab      int     `json:"vocab"` // rows of the embedding matrix, after any padding the framework applies
	Activation string  `json:"activation"`
	Norm       string  `json:"norm"`
	NormEps    float64 `json:"norm_eps"`
	RopeTheta  float64 `json:"rope_theta"`
	// RotaryPercent is the share of each head's channels RoPE rotates (1: all).
	RotaryPercent float64 `json:"rotary_percent"`
	// QKNorm is a norm on the queries and keys before attention (Megatron's qk_layernorm).
	QKNorm bool `json:"qk_norm"`
	// RopeScaling is the RoPE frequency scaling factor; 1 is none. The bands of Llama 3's scaling
	// (models.RopeScaling) follow it; all three are 0 without scaling.
	RopeScaling                  float64 `json:"rope_scaling"`
	RopeScalingLowFreqFactor     float64 `json:"rope_scaling_low_freq_factor"`
	RopeScalingHighFreqFactor    float64 `json:"rope_scaling_high_freq_factor"`
	RopeScalingOriginalPositions int     `json:"rope_scaling_original_positions"`
	// Window is the sliding-window size in tokens when it masks anything at SeqLen; 0: full causal.
	Window         int  `json:"window"`
	QKVBias        bool `json:"qkv_bias"`
	LinearBias     bool `json:"linear_bias"`
	TiedEmbeddings bool `json:"tied_embeddings"`
	// Initialisation: every weight N(0, InitStd) except the embedding, the output projections of
	// each residual branch (attention out, MLP down) and the output layer.
	InitStd          float64 `json:"init_std"`
	EmbeddingInitStd float64 `json:"embedding_init_std"`
	ResidualInitStd  float64 `json:"residual_init_std"`
	OutputInitStd    float64 `json:"output_init_std"`
	HiddenDropout    float64 `json:"hidden_dropout"`
	AttentionDropout float64 `json:"attention_dropout"`
	Precision        string  `json:"precision"`  // bf16 | fp8 | fp32
	FP8Recipe        string  `json:"fp8_recipe"` // format/recipe, e.g. hybrid/delayed; "" without fp8
	// Optimizer (AdamW).
	AdamBeta1   float64  `json:"adam_beta1"`
	AdamBeta2   float64  `json:"adam_beta2"`
	AdamEps     float64  `json:"adam_eps"`
	WeightDecay float64  `json:"weight_decay"`
	NoDecay     []string `json:"no_decay"` // parameter kinds without weight decay, sorted
	// LR schedule.
	LR            float64 `json:"lr"`
	MinLR         float64 `json:"min_lr"`
	LRDecayStyle  string  `json:"lr_decay_style"`
	LRWarmupIters int     `json:"lr_warmup_iters"`
	// LRWarmupInit is the rate warm-up starts from: the rate of the first iteration with warm-up.
	LRWarmupInit float64 `json:"lr_warmup_init"`
	LRDecayIters int     `json:"lr_decay_iters"`
	ClipGrad     float64 `json:"clip_grad"`
	// Batch and data.
	GBS         int  `json:"gbs"`
	MBS         int  `json:"mbs"`
	SeqLen      int  `json:"seq_len"`
	EODMaskLoss bool `json:"eod_mask_loss"`
	// ResetPositionIDs and ResetAttentionMask are Megatron's document masking: positions restart and
	// attention stops at each end-of-document token inside a sample.
	ResetPositionIDs   bool `json:"reset_position_ids"`
	ResetAttentionMask bool `json:"reset_attention_mask"`
	TrainIters         int  `json:"train_iters"`
	Seed               int  `json:"seed"`
	// Unread names the fields the framework's objects did not decide, each with the reason
	// ("vocab: no tokenizer.json at ..."). An unread field is a difference.
	Unread []string `json:"unread,omitempty"`
}

// Later are the fields added after results began to record effective_config: a stored result
// without them still validates (result.schema.json does not require them) and reads them as unread.
var Later = []string{"rope_scaling_low_freq_factor", "rope_scaling_high_freq_factor", "rope_scaling_original_positions",
	"lr_warmup_init", "reset_position_ids", "reset_attention_mask", "head_dim", "rotary_percent", "qk_norm"}

// Fields lists Config's JSON field names in declaration order (Unread excluded).
func Fields() []string {
	t := reflect.TypeOf(Config{})
	var out []string
	for i := 0; i < t.NumField(); i++ {
		n := jsonName(t.Field(i))
		if n != "unread" {
			out = append(out, n)
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return n
}

// Parse reads the JSON of an effective configuration (a preflight's line after LinePrefix, or a
// result's field). Unknown fields are an error (the two sides disagree on the shape); a field the
// JSON does not carry is added to Unread.
func Parse(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("effective: configuration JSON: %w", err)
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(b, &present); err != nil {
		return Config{}, fmt.Errorf("effective: configuration JSON: %w", err)
	}
	for _, n := range Fields() {
		if _, ok := present[n]; !ok && !c.unread(n) {
			c.Unread = append(c.Unread, n+": not reported")
		}
	}
	sort.Strings(c.NoDecay)
	return c, nil
}

// FromLines returns the effective configuration in a preflight's output lines (the last line that
// starts with LinePrefix); found is false when there is none.
func FromLines(lines []string) (c Config, found bool, err error) {
	for i := len(lines) - 1; i >= 0; i-- {
		if j, ok := strings.CutPrefix(lines[i], LinePrefix); ok {
			c, err = Parse([]byte(j))
			return c, true, err
		}
	}
	return Config{}, false, nil
}

func (c Config) unread(field string) bool {
	for _, u := range c.Unread {
		if u == field || strings.HasPrefix(u, field+":") {
			return true
		}
	}
	return false
}

// Want is the effective configuration Rival's workload asks of every framework: the model
// registry's shape, config.env's recipe, and the fixed settings every Megatron-family launch sets
// (core.Fairness): Megatron's initialisation (N(0, 0.02); residual-branch outputs 0.02/√(2L)) and its
// weight-decay rule (none on norms and biases; embeddings and the output layer are decayed).
func Want(p core.Plan) (Config, error) {
	m, f := p.Model, p.Fair
	eps, std := m.NormEps, m.InitStd
	c := Config{
		Hidden: m.Hidden, Layers: m.Layers, Heads: m.Heads, KVHeads: m.KVHeads, FFN: m.FFN, HeadDim: m.HeadDim(), Vocab: m.Vocab,
		RotaryPercent: 1,
		Activation:    "swiglu", Norm: "RMSNorm", NormEps: eps, RopeTheta: m.RopeTheta, RopeScaling: 1,
		QKVBias: m.QKVBias, InitStd: std, EmbeddingInitStd: std, OutputInitStd: std,
		ResidualInitStd: std / math.Sqrt(2*float64(m.Layers)),
		Precision:       f.Precision,
		AdamBeta1:       f.Beta1, AdamBeta2: f.Beta2, AdamEps: p.AdamEpsilon(), WeightDecay: f.WeightDecay,
		NoDecay: []string{KindBias, KindNorm},
		LR:      f.LR, MinLR: f.MinLR, LRDecayStyle: "cosine", LRWarmupIters: f.WarmupSteps, LRDecayIters: f.TrainIters,
		ClipGrad: core.ClipGrad, GBS: f.GBS, MBS: f.MBS, SeqLen: f.SL, EODMaskLoss: core.Fairness.EODMaskLoss,
		TrainIters: f.TrainIters, Seed: f.Seed,
	}
	if p.WindowActive() {
		c.Window = m.SlidingWindow
	}
	if r := m.RopeScaling; r != nil {
		c.RopeScaling, c.RopeScalingLowFreqFactor, c.RopeScalingHighFreqFactor = r.Factor, r.LowFreqFactor, r.HighFreqFactor
		c.RopeScalingOriginalPositions = r.OriginalPositions
	}
	if f.Precision == core.FP8 {
		c.FP8Recipe = FP8Recipe
	}
	return c, nil
}

// FP8Recipe is the FP8 recipe every Megatron-family launch sets (format/recipe).
const FP8Recipe = "hybrid/delayed"

// Normalize states c so that equal training is equal data: a window at least as long as the
// sequence masks nothing (0), NoDecay sorted.
func (c Config) Normalize() Config {
	if c.Window >= c.SeqLen && c.SeqLen > 0 {
		c.Window = 0
	}
	c.NoDecay = append([]string(nil), c.NoDecay...)
	sort.Strings(c.NoDecay)
	return c
}

// Diff is one field where a framework's effective configuration differs from Rival's workload.
type Diff struct {
	Field     string `json:"field"`
	Framework string `json:"framework"` // the framework's value
	Rival     string `json:"rival"`     // the workload's value
}

func (d Diff) String() string {
	return fmt.Sprintf("%s: the framework built %s, Rival's workload is %s", d.Field, d.Framework, d.Rival)
}

// Compare lists the fields where got (a framework's effective configuration) differs from want
// (Rival's workload), in field order. Floats are equal within a relative 1e-9 (JSON round trips);
// a field got leaves unread differs whatever want is.
func Compare(got, want Config) []Diff {
	got, want = got.Normalize(), want.Normalize()
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	t := gv.Type()
	var out []Diff
	for i := 0; i < t.NumField(); i++ {
		name := jsonName(t.Field(i))
		if name == "unread" {
			continue
		}
		w := Format(wv.Field(i).Interface())
		if got.unread(name) {
			out = append(out, Diff{Field: name, Framework: "unread (" + got.reason(name) + ")", Rival: w})
			continue
		}
		if !equal(gv.Field(i), wv.Field(i)) {
			out = append(out, Diff{Field: name, Framework: Format(gv.Field(i).Interface()), Rival: w})
		}
	}
	return out
}

func (c Config) reason(field string) string {
	for _, u := range c.Unread {
		if r, ok := strings.CutPrefix(u, field+":"); ok {
			return strings.TrimSpace(r)
		}
	}
	return "not reported"
}

func equal(a, b reflect.Value) bool {
	if a.Kind() == reflect.Float64 {
		x, y := a.Float(), b.Float()
		if x == y {
			return true
		}
		return math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// Format writes one field's value as the fairness table and error messages show it.
func Format(v any) string {
	switch x := v.(type) {
	case float64:
		return fmt.Sprintf("%g", x)
	case []string:
		if len(x) == 0 {
			return "none"
		}
		return strings.Join(x, ", ")
	case string:
		if x == "" {
			return `""`
		}
		return x
	}
	return fmt.Sprint(v)
}

// Value returns one field's value by its JSON name, formatted (ok false for an unknown name or an
// unread field).
func (c Config) Value(field string) (string, bool) {
	v := reflect.ValueOf(c)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if jsonName(t.Field(i)) == field && field != "unread" {
			if c.unread(field) {
				return "", false
			}
			return Format(v.Field(i).Interface()), true
		}
	}
	return "", false
}

// Error is a framework's effective configuration that differs from the workload.
type Error struct {
	Framework string
	Diffs     []Diff
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Diffs))
	for i, d := range e.Diffs {
		parts[i] = d.String()
	}
	return fmt.Sprintf("%s does not build Rival's workload (%d field(s)): %s", e.Framework, len(e.Diffs), strings.Join(parts, "; "))
}

// Check compares a framework's effective configuration with the plan's workload, leaving out the
// differences Declared for that framework, and returns an *Error naming every other field.
func Check(framework string, p core.Plan, got Config) error {
	want, err := Want(p)
	if err != nil {
		return err
	}
	return CheckAgainst(framework, got, want)
}

// CheckAgainst is Check with the workload's configuration given (core.Launch.Workload).
func CheckAgainst(framework string, got, want Config) error {
	var bad []Diff
	for _, d := range Compare(got, want) {
		if _, ok := DeclaredFor(framework, d.Field); !ok {
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		return &Error{Framework: framework, Diffs: bad}
	}
	return nil
}
