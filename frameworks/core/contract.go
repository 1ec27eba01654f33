// Package core is the frameworks' core: the contract every launch builder works to (the fair
// configuration, a launch request, the validated plan each builder starts from and the launch it
// returns: contract.go), the framework table (table.go), the pinned images (pins.go), the
// Megatron-family knobs every launch sets (fairness.go), the platform environment (platformenv.go)
// and the multi-node rendezvous (rendezvous.go). Package frameworks (the registry) and the
// per-framework packages share it without an import cycle.
package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/safefile"
)

// Framework names, as used in mage targets and result files.
const (
	Mega  = "mega"  // Megatron-LM pretrain_gpt.py
	Prim  = "prim"  // Primus (AMD), Megatron backend
	Nemo  = "nemo"  // NVIDIA NeMo LLM training: Megatron-Bridge in the NeMo image
	Titan = "titan" // TorchTitan (Primus backend on AMD, upstream on NVIDIA)
	FSDP  = "fsdp"  // Rival's plain-PyTorch FSDP trainer
)

// Precision names (config.env PRECISION).
const (
	BF16 = "bf16"
	FP8  = "fp8"
	FP32 = "fp32"
)

// Fair is the one fair configuration (config.env), in the units config.env uses.
type Fair struct {
	Seed, MBS, SL, GA, GBS, TP, PP, DP, TrainIters, WarmupSteps int
	LR, MinLR, WeightDecay, Beta1, Beta2                        float64
	// AdamEps is AdamW's ε; 0 means AdamEps, the value every framework is given (Plan.AdamEpsilon).
	AdamEps                          float64
	Precision                        string // bf16 | fp8 | fp32
	Profile                          bool
	ProfileStepStart, ProfileStepEnd int
	ProfileRanks                     []int
	// EvalIntervalSamples is the held-out evaluation interval in training samples (a multiple of
	// GBS); 0: no evaluation. EvalSamples is how many held-out sequences each evaluation reads, the
	// same ones from the first every time (HeldOutName).
	EvalIntervalSamples, EvalSamples int
}

// HeldOutName is the file stem, in the run's data cache folder (Request.DataCacheDir), of the
// held-out set Rival writes for n sequences of sl tokens: one document of n·sl+1 tokens, the encoded
// test split's first documents joined in file order, whose sl+1-token windows k·sl.. are sequence k.
// One document, because Megatron's GPTDataset shuffles documents, which would move the windows.
func HeldOutName(n, sl int) string { return fmt.Sprintf("rival-heldout-n%d-sl%d", n, sl) }

// Request asks for the launch of one benchmark run.
type Request struct {
	Platform      string // amd | nvd | cpu
	Framework     string // mega | prim | nemo | titan | fsdp
	Stack         string // StackCurrent | StackPrevious on amd and nvd; "" is current (STACK)
	Model         string // registry name, proxies allowed
	Fair          Fair
	Host          hw.Host
	GPUs          int    // processes (GPUs) per node; 0: the host's detected GPU count
	NNodes        int    // 0: 1
	DataPrefix    string // encoded train dataset inside the container, without .bin/.idx
	DataCacheDir  string // the writable index cache for this dataset (one folder per dataset fingerprint)
	TokenizerPath string // directory holding the model's tokenizer.json
	OutputDir     string
}

// Launch is the exact launch of one run.
type Launch struct {
	Framework         string            // the framework actually run
	Requested         string            // the framework asked for
	Remapped          string            // why Framework differs from Requested; empty if it does not
	Command           []string          // argv; Command[0] is the executable
	Env               map[string]string // added to the container's environment
	WorkDir           string
	Files             map[string][]byte // files to write next to the run (relative to OutputDir), e.g. entry scripts, patched yaml
	EntryScriptDigest string            // BLAKE3 hex of the entry script(s) in Files; empty when there are none
	FrameworkVersion  string            // the pinned version the arguments were checked against
	Stack             string            // the pinned image's name (Pin.Name) on amd and nvd; empty on cpu
	LogFamily         string            // logparse family of the run's log; empty: the framework's name
	RanFile           string            // file (relative to OutputDir) where the run records what ran; empty: none
	Rendezvous        Rendezvous        // what the launch needs to know about its nodes (see rendezvous.go)
	// PlatformEnv is the platform's communication environment the launch carries in Env, the same
	// for every framework on the platform (ApplyPlatformEnv), for the run's provenance.
	PlatformEnv map[string]string `json:",omitempty"`
	// Preflight, when set, runs the framework's own argument parsing and config validation on this
	// exact launch, in the same image and mounts, without GPUs; it exits non-zero with the framework's
	// error on its last line ("preflight failed: ...").
	Preflight *Launch `json:",omitempty"`
	// Devices, on a preflight, asks for the run's GPU devices and driver: the preflight imports the
	// image's real GPU stack (nemo's imports Transformer Engine, whose library may need libcuda),
	// where mega's and prim's run on stand-ins in a container without devices. It uses no GPU memory.
	Devices bool `json:",omitempty"`
	// Workload is the effective configuration Rival's workload asks of the framework (the JSON of
	// frameworks/effective.Config), set by frameworks.Build: the preflight's read-back of what the
	// framework built is compared with it.
	Workload []byte `json:",omitempty"`
	// Samples is Rival's digest of the first samples of the run's order, set when the run's order is
	// written (after its key is taken: the dataset's fingerprint and the fair settings already key
	// it); a preflight that prints another ("preflight samples: {json}") stops the run. nil: no check.
	Samples *SampleDigest `json:"-"`
	// HeldOut is Rival's digest of the held-out sequences (HeldOutName), set when the run evaluates;
	// a preflight that reads them must print the same ("preflight held-out: {json}").
	HeldOut *SampleDigest `json:"-"`
	// Evaluation says how the launch evaluates Rival's held-out set (HeldOutName), for the result;
	// empty: it does not (no evaluation asked for, or the framework's launch cannot yet). A launch
	// that evaluates has its preflight digest the held-out sequences its framework reads.
	Evaluation string `json:",omitempty"`
	// NoEvaluation says why a launch asked to evaluate (Fair.EvalIntervalSamples) does not; empty
	// when it does, or when nothing more precise than "not yet" is known.
	NoEvaluation string `json:",omitempty"`
}

// SampleDigest is a SHA-256 over the first Samples samples a run reads, in training order (global
// batch by global batch, data-parallel rank by rank), each as sequence length + 1 little-endian int64
// token ids: what a preflight prints after "preflight samples: ".
type SampleDigest struct {
	Samples int64  `json:"samples"`
	SHA256  string `json:"sha256"`
}

// LogFamilyName is the logparse family to read the run's log as.
func (l Launch) LogFamilyName() string {
	if l.LogFamily != "" {
		return l.LogFamily
	}
	return l.Framework
}

// Ran reads RanFile under the run's directory on this host (a JSON object of names to versions that
// the entry script wrote inside the container, with "framework" and "version" first) and describes
// it in one line, e.g. "megatron-bridge 0.3.0, megatron_core 0.16.0, torch 2.10.0a0".
func (l Launch) Ran(runDir string) (string, error) {
	if l.RanFile == "" {
		return "", errors.New("the launch records no run-time versions")
	}
	p := filepath.Join(runDir, filepath.FromSlash(l.RanFile))
	b, err := safefile.ReadFile(context.Background(), p, safefile.LimitConfig)
	if err != nil {
		return "", fmt.Errorf("what ran: %w (the entry script writes it on rank 0 before training; a non-regular or oversized file there is not its, remove it and train again)", err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("what ran: %s is not a JSON object of strings: %w", p, err)
	}
	if m["framework"] == "" || m["version"] == "" {
		return "", fmt.Errorf("what ran: %s lacks \"framework\" or \"version\"", p)
	}
	parts := []string{m["framework"] + " " + m["version"]}
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "framework" && k != "version" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+" "+m[k])
	}
	return strings.Join(parts, ", "), nil
}

// Plan is a validated Request with everything derived: the model's shape, the process layout and the
// global batch. Builders take a Plan and never re-validate what the registry checked.
type Plan struct {
	Request
	Model       models.Model
	GPUsPerNode int // processes per node (>= 1)
	NNodes      int // >= 1
	World       int // GPUsPerNode × NNodes = TP × PP × DP
}

// Pin returns the pinned image of the plan's platform and stack.
func (p Plan) Pin() (Pin, error) { return PinFor(p.Platform, p.Stack) }

// HeldOutPath is where a launch reads the plan's held-out set: HeldOutName in the data cache folder,
// where the run writes it before training.
func (p Plan) HeldOutPath() string {
	return path.Join(p.DataCacheDir, HeldOutName(p.Fair.EvalSamples, p.Fair.SL))
}

// Int formats an integer argument.
func Int(v int) string { return strconv.Itoa(v) }

// Float formats a float argument with 12 significant digits: exact for any value a person writes, and
// LR/10 prints as 3e-05, not 2.9999999999999997e-05.
func Float(v float64) string { return strconv.FormatFloat(v, 'g', 12, 64) }

// SequenceParallel is the one rule every framework follows: sequence parallelism on exactly when
// tensor parallelism is, so no framework gets activation-memory savings another is denied.
func (p Plan) SequenceParallel() bool { return p.Fair.TP > 1 }

// WindowActive reports whether the model's sliding window masks anything at this sequence length:
// a query sees itself and the window keys before it, so the last query (SL - 1) loses keys only when
// SL - 1 > window. Otherwise a sliding window equals full causal attention, so every framework runs
// full causal attention and the same kernels.
func (p Plan) WindowActive() bool {
	return p.Model.SlidingWindow > 0 && p.Fair.SL-1 > p.Model.SlidingWindow
}

// AdamEpsilon is the AdamW ε of the plan: Fair.AdamEps, or AdamEps when it is 0.
func (p Plan) AdamEpsilon() float64 {
	if p.Fair.AdamEps > 0 {
		return p.Fair.AdamEps
	}
	return AdamEps
}

// MegatronRopeScaling is the RoPE scaling Megatron's --use-rope-scaling applies besides its
// factor: RotaryEmbedding._apply_scaling's fixed low_freq_factor 1, high_freq_factor 4 and 8192
// original positions (Megatron-LM b0cc2706, 3bec9aa9, d0b3b775, d3528a21), Llama 3.1's own.
var MegatronRopeScaling = models.RopeScaling{LowFreqFactor: 1, HighFreqFactor: 4, OriginalPositions: 8192}

// MegatronRopeFactor returns the factor of --rope-scaling-factor when the model scales its RoPE
// (on), and refuses a scaling Megatron's fixed bands cannot express; the Megatron family's
// builders (mega, prim) call it.
func (p Plan) MegatronRopeFactor(framework string) (factor float64, on bool, err error) {
	r := p.Model.RopeScaling
	if r == nil {
		return 0, false, nil
	}
	fixed := MegatronRopeScaling
	if r.LowFreqFactor != fixed.LowFreqFactor || r.HighFreqFactor != fixed.HighFreqFactor || r.OriginalPositions != fixed.OriginalPositions {
		return 0, false, fmt.Errorf("%s: model %s asks for RoPE scaling %s; Megatron's --use-rope-scaling takes only the factor and fixes low %g, high %g, original %d", framework, p.Model.Name, r, fixed.LowFreqFactor, fixed.HighFreqFactor, fixed.OriginalPositions)
	}
	if !(r.Factor > 0) {
		return 0, false, fmt.Errorf("%s: model %s: RoPE scaling factor %g must be positive", framework, p.Model.Name, r.Factor)
	}
	return r.Factor, true, nil
}

// CheckRopeScaling refuses a RoPE scaling that no framework can build: bands that do not order
// (low below high), or a factor or original length that is not positive.
func (p Plan) CheckRopeScaling(framework string) error {
	r := p.Model.RopeScaling
	if r != nil && !(r.Factor > 0 && r.LowFreqFactor > 0 && r.HighFreqFactor > r.LowFreqFactor && r.OriginalPositions > 0) {
		return fmt.Errorf("%s: model %s: RoPE scaling %s needs factor > 0, 0 < low < high and original positions > 0", framework, p.Model.Name, r)
	}
	return nil
}

// AdamEps is the Adam epsilon every framework is given explicitly (Megatron's and TorchTitan's
// default and Megatron-Bridge's; NeMo 2's recipes used 1e-5).
const AdamEps = 1e-8

// ClipGrad is the gradient-norm clip every framework is given explicitly.
const ClipGrad = 1.0
