// Package conformance proves with numbers that the frameworks train the same workload: one initial
// checkpoint in Hugging Face layout (written here, fp32) and the same global batches (Rival's sample
// order) go through each framework's own model code, loss, optimizer and LR schedule on the CPU
// (rival_conform.py), and every step's loss, gradient norm, learning rate and per-parameter gradient
// norms must agree within Tolerance. A field a read-back forgot to list cannot hide from a loss.
package conformance

import (
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rivalbench/rival/cache"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

//go:embed rival_conform.py
var script []byte

// ScriptName is the conformance runner's file name.
const ScriptName = "rival_conform.py"

// Script is rival_conform.py.
func Script() []byte { return script }

// The conformance workload: a proxy model in fp32, short sequences and few steps, so every framework
// runs it on two CPU cores in seconds; warm-up and decay both fall inside the steps. SeqLen is the
// sequence length of a model without a sliding window (SeqLenOf).
const (
	SeqLen = 32
	GBS    = 4
	Steps  = 6
	Warmup = 2
	Seed   = 1234
)

// SeqLenOf is the conformance's sequence length for m: SeqLen, or twice a sliding window (up to the
// model's positions), so that half the queries attend through the window and the windowed attention
// of every framework is what the numbers compare.
func SeqLenOf(m models.Model) int {
	if m.SlidingWindow > 0 && m.SlidingWindow+1 < m.MaxPositions {
		return min(2*m.SlidingWindow, m.MaxPositions)
	}
	return SeqLen
}

// Request is the conformance request of framework on platform for model: one process, MBS 1,
// GBS 4, fp32, SeqLenOf the model, the Steps-step schedule. The launch's model, optimizer and schedule settings reach
// the runners; rival_conform.py feeds each global batch as one micro-batch, in fp32 with the fused
// kernels off, so batch shape, accumulation, precision and data loading are not what it compares
// (the read-back and the sample digests are).
func Request(platform, framework, model string) core.Request {
	sl := SeqLen
	if m, err := models.Lookup(model); err == nil {
		sl = SeqLenOf(m)
	}
	gpus := 1
	host := hw.Host{Platform: platform, GPUs: []hw.GPU{{Index: 0}}}
	if platform == hw.PlatformCPU {
		gpus, host = 0, hw.Host{Platform: platform}
	}
	return core.Request{
		Platform: platform, Framework: framework, Model: model, Host: host, GPUs: gpus,
		Fair: core.Fair{Seed: Seed, MBS: 1, SL: sl, GA: GBS, GBS: GBS, TP: 1, PP: 1, DP: 1,
			TrainIters: Steps, WarmupSteps: Warmup, LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95,
			Precision: core.FP32, ProfileStepStart: 1, ProfileStepEnd: 2, ProfileRanks: []int{0}},
		DataPrefix: "/rival/data/corpus", DataCacheDir: "/rival/data/cache", TokenizerPath: "/rival/tokenizer",
		OutputDir: "/rival/out/" + framework,
	}
}

// WriteBatches writes the samples (each seqLen + 1 tokens) as little-endian int64, in order.
func WriteBatches(path string, seqLen int, samples [][]int32) error {
	var b []byte
	for i, s := range samples {
		if len(s) != seqLen+1 {
			return fmt.Errorf("conformance: sample %d has %d tokens, want %d", i, len(s), seqLen+1)
		}
		for _, t := range s {
			b = binary.LittleEndian.AppendUint64(b, uint64(int64(t)))
		}
	}
	return cache.WriteFileAtomic(path, b, 0o644)
}

// Step is one step of one framework as rival_conform.py reports it.
type Step struct {
	Framework string             `json:"framework"`
	Step      int                `json:"step"`
	Loss      float64            `json:"loss"`
	GradNorm  float64            `json:"grad_norm"`
	LR        float64            `json:"lr"`
	Grads     map[string]float64 `json:"grads"`
	// Layout, on the first step, is every parameter of the built model under its canonical name,
	// as dtype and shape ("float32[256,256]"): the model each framework built, not a list of fields.
	Layout map[string]string `json:"layout,omitempty"`
}

// LinePrefix starts each step's line.
const LinePrefix = "conform: "

// ParseSteps reads the steps in a run's output lines, in order; a malformed line is an error
// naming it.
func ParseSteps(lines []string) ([]Step, error) {
	var out []Step
	err := eachPrefixed(lines, LinePrefix, func(i int, s *Step) error {
		if s.Step != len(out)+1 {
			return fmt.Errorf("conformance: line %d: step %d follows step %d", i, s.Step, len(out))
		}
		out = append(out, *s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachPrefixed decodes the JSON after prefix on every line that starts with it, in order, and
// hands it to use with the line's number; a line that does not decode is an error naming it.
func eachPrefixed[T any](lines []string, prefix string, use func(line int, v *T) error) error {
	for i, l := range lines {
		j, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(j), &v); err != nil {
			return fmt.Errorf("conformance: line %d: %w", i+1, err)
		}
		if err := use(i+1, &v); err != nil {
			return err
		}
	}
	return nil
}

// ConfigPrefix starts the lines where a runner prints one of its config objects whole: a runner on
// Megatron Core its model's TransformerConfig, every runner the other objects that shape its model,
// optimizer and schedule.
const ConfigPrefix = "conform config: "

// TransformerConfig is the Object of a model's Megatron Core TransformerConfig.
const TransformerConfig = "TransformerConfig"

// Config is one config object of a run: every field, its value as text.
type Config struct {
	Framework string `json:"framework"`
	// Object names the config object; empty in the line means TransformerConfig.
	Object string            `json:"object"`
	Fields map[string]string `json:"fields"`
}

// ParseConfigs reads every config object a run printed, by Object; an object printed twice or a
// malformed line is an error naming the line.
func ParseConfigs(lines []string) (map[string]Config, error) {
	out := map[string]Config{}
	err := eachPrefixed(lines, ConfigPrefix, func(i int, c *Config) error {
		if c.Object == "" {
			c.Object = TransformerConfig
		}
		if _, dup := out[c.Object]; dup {
			return fmt.Errorf("conformance: line %d: %s printed twice", i, c.Object)
		}
		out[c.Object] = *c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ConfigDiff is one TransformerConfig field whose value differs between two runs ("absent" where a
// run's Megatron Core has no such field).
type ConfigDiff struct {
	Field, A, B string
}

// CompareConfigs lists every field where b differs from a, in field order.
func CompareConfigs(a, b Config) []ConfigDiff {
	var out []ConfigDiff
	names := map[string]bool{}
	for n := range a.Fields {
		names[n] = true
	}
	for n := range b.Fields {
		names[n] = true
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		x, okA := a.Fields[n]
		y, okB := b.Fields[n]
		if !okA {
			x = "absent"
		}
		if !okB {
			y = "absent"
		}
		if x != y || okA != okB {
			out = append(out, ConfigDiff{Field: n, A: x, B: y})
		}
	}
	return out
}

// Tolerance is the largest relative difference two frameworks' fp32 numbers may show at one step.
// Summation order differs (fused QKV, GEMM blocking, the norm's reduction), so fp32 agrees to a few
// units in the 6th digit at step 1; Adam's division by √v amplifies tiny gradients over steps.
type Tolerance struct {
	Loss, GradNorm, LR, Grad float64
}

// DefaultTolerance holds for the conformance workload in fp32 on the CPU.
var DefaultTolerance = Tolerance{Loss: 2e-6, GradNorm: 1e-5, LR: 1e-9, Grad: 1e-5}

// BF16Tolerance holds for the conformance workload in bf16 with fp32 master weights. bf16 keeps 8
// bits of mantissa, and the frameworks round at different places (the fused QKV, the norm's output,
// where the residual adds): on the CPU the largest differences over the three families were 6.2e-5
// (loss), 4.7e-4 (gradient norm) and 1.0e-2 (a per-parameter gradient norm); the tolerance leaves
// room for the GPU's kernels (cuBLAS's and the fused attention's own summation orders).
var BF16Tolerance = Tolerance{Loss: 1e-3, GradNorm: 5e-3, LR: 1e-9, Grad: 5e-2}

// Mismatch is one quantity at one step where two frameworks differ beyond the tolerance.
type Mismatch struct {
	Step     int
	Quantity string // loss, grad_norm, lr, or grad <canonical parameter>
	A, B     float64
	Rel      float64
}

func (m Mismatch) String() string {
	return fmt.Sprintf("step %d, %s: %.9g vs %.9g (relative %.2g)", m.Step, m.Quantity, m.A, m.B, m.Rel)
}

func rel(a, b float64) float64 {
	d := math.Abs(a - b)
	if d == 0 {
		return 0
	}
	return d / math.Max(math.Abs(a), math.Abs(b))
}

// Compare returns every quantity where b differs from a beyond tol, step by step (per-parameter
// gradients in canonical-name order), and an error when the runs do not cover the same steps or
// parameters.
func Compare(a, b []Step, tol Tolerance) ([]Mismatch, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("conformance: %d steps against %d", len(a), len(b))
	}
	if err := compareLayouts(a, b); err != nil {
		return nil, err
	}
	var out []Mismatch
	check := func(step int, q string, x, y, t float64) {
		if r := rel(x, y); r > t || math.IsNaN(x) != math.IsNaN(y) {
			out = append(out, Mismatch{Step: step, Quantity: q, A: x, B: y, Rel: r})
		}
	}
	for i := range a {
		sa, sb := a[i], b[i]
		check(sa.Step, "loss", sa.Loss, sb.Loss, tol.Loss)
		check(sa.Step, "grad_norm", sa.GradNorm, sb.GradNorm, tol.GradNorm)
		check(sa.Step, "lr", sa.LR, sb.LR, tol.LR)
		var names []string
		for n := range sa.Grads {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(sa.Grads) != len(sb.Grads) {
			return out, fmt.Errorf("conformance: step %d: %d parameters against %d (%s)", sa.Step, len(sa.Grads), len(sb.Grads), diffNames(sa.Grads, sb.Grads))
		}
		for _, n := range names {
			y, ok := sb.Grads[n]
			if !ok {
				return out, fmt.Errorf("conformance: step %d: parameter %s is missing on one side (%s)", sa.Step, n, diffNames(sa.Grads, sb.Grads))
			}
			check(sa.Step, "grad "+n, sa.Grads[n], y, tol.Grad)
		}
	}
	return out, nil
}

// compareLayouts requires the same parameters with the same dtypes and shapes on both sides, when
// either side reports a layout.
func compareLayouts(a, b []Step) error {
	var la, lb map[string]string
	if len(a) > 0 {
		la = a[0].Layout
	}
	if len(b) > 0 {
		lb = b[0].Layout
	}
	if la == nil && lb == nil {
		return nil
	}
	if la == nil || lb == nil {
		return fmt.Errorf("conformance: only one side reports the model's layout")
	}
	var diffs []string
	for _, n := range slices.Sorted(maps.Keys(la)) {
		switch y, ok := lb[n]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s %s against none", n, la[n]))
		case y != la[n]:
			diffs = append(diffs, fmt.Sprintf("%s %s against %s", n, la[n], y))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(lb)) {
		if _, ok := la[n]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s none against %s", n, lb[n]))
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("conformance: the models differ in their parameters: %s", strings.Join(diffs, "; "))
	}
	return nil
}

func diffNames(a, b map[string]float64) string {
	var only []string
	for n := range a {
		if _, ok := b[n]; !ok {
			only = append(only, "-"+n)
		}
	}
	for n := range b {
		if _, ok := a[n]; !ok {
			only = append(only, "+"+n)
		}
	}
	sort.Strings(only)
	return strings.Join(only, " ")
}

// Error is a failed conformance: the first mismatches of framework B against A.
type Error struct {
	A, B       string
	Mismatches []Mismatch
}

func (e *Error) Error() string {
	n := min(len(e.Mismatches), 5)
	var parts []string
	for _, m := range e.Mismatches[:n] {
		parts = append(parts, m.String())
	}
	more := ""
	if len(e.Mismatches) > n {
		more = fmt.Sprintf(" (and %d more)", len(e.Mismatches)-n)
	}
	return fmt.Sprintf("%s and %s compute different numbers: %s%s", e.A, e.B, strings.Join(parts, "; "), more)
}

// Check compares b's steps with a's and returns an *Error naming the first mismatches.
func Check(nameA string, a []Step, nameB string, b []Step, tol Tolerance) error {
	ms, err := Compare(a, b, tol)
	if err != nil {
		return fmt.Errorf("%s against %s: %w", nameB, nameA, err)
	}
	if len(ms) > 0 {
		return &Error{A: nameA, B: nameB, Mismatches: ms}
	}
	return nil
}
