package core

import "encoding/json"

// MegatronKnobs are the knobs that change speed or the loss in a Megatron-family run beyond the fair
// configuration and the model's own facts (models.Model: RMSNorm ε, init, window, biases). Every mega, prim and nemo launch sets each of them explicitly to the value here, so
// no framework's defaults, Primus's stock experiment or Bridge's config defaults decide them;
// docs/frameworks.md lists them with the defaults they replace.
type MegatronKnobs struct {
	OverlapGradReduce    bool   `json:"overlap_grad_reduce"`   // overlap the data-parallel gradient reduce-scatter with backward
	OverlapParamGather   bool   `json:"overlap_param_gather"`  // overlap the distributed optimizer's parameter all-gather with forward
	DistributedOptimizer bool   `json:"distributed_optimizer"` // shard optimizer state across data-parallel ranks
	GradReduceInBF16     bool   `json:"grad_reduce_in_bf16"`   // false: gradients are reduced in fp32
	Recompute            string `json:"recompute"`             // "" (none) | selective | full
	EODMaskLoss          bool   `json:"eod_mask_loss"`         // false: the token after an end-of-document counts in the loss
	AttentionBackend     string `json:"attention_backend"`     // Megatron's --attention-backend
	GradAccumFusion      bool   `json:"grad_accum_fusion"`     // fused weight-gradient accumulation (TE/APEX wgrad kernels)
	MaskedSoftmaxFusion  bool   `json:"masked_softmax_fusion"`
	BiasSwiGLUFusion     bool   `json:"bias_swiglu_fusion"`
	RopeFusion           bool   `json:"rope_fusion"`
	BiasDropoutFusion    bool   `json:"bias_dropout_fusion"`
	CrossEntropyFusion   bool   `json:"cross_entropy_fusion"` // fused cross-entropy (Megatron's --cross-entropy-loss-fusion)
	DataloaderType       string `json:"dataloader_type"`      // single: one pass in Megatron's sample order
	NumWorkers           int    `json:"num_workers"`          // data-loader workers per rank
	PrimusTurbo          bool   `json:"primus_turbo"`         // Primus Turbo kernels (GEMM, attention, grouped MLP): prim only
	// RerunMode is Megatron's rerun state machine: "disabled" skips the per-iteration result
	// validation that Megatron-LM's command line enables by default (validate_results).
	RerunMode string `json:"rerun_mode"`
	// AttentionSoftmaxInFP32 computes the unfused attention softmax in fp32 (Primus's Llama 3.1
	// model file turns it on; Megatron-LM's and Bridge's defaults leave it off).
	AttentionSoftmaxInFP32 bool `json:"attention_softmax_in_fp32"`
}

// Fairness is the one set of MegatronKnobs every mega, prim and nemo launch uses (nemo.Fairness maps it
// onto Megatron-Bridge's fields).
var Fairness = MegatronKnobs{
	OverlapGradReduce: true, OverlapParamGather: true, DistributedOptimizer: true,
	GradReduceInBF16: false, Recompute: "", EODMaskLoss: false,
	AttentionBackend: "auto", GradAccumFusion: false, MaskedSoftmaxFusion: true,
	BiasSwiGLUFusion: true, RopeFusion: true, BiasDropoutFusion: true, CrossEntropyFusion: false,
	DataloaderType: "single", NumWorkers: 2, PrimusTurbo: false,
	RerunMode: "disabled", AttentionSoftmaxInFP32: false,
}

// KnobsFile is the file, beside a Megatron-family preflight's preflight.py, that carries the knobs
// the launch sets (Fairness as JSON); the preflight reads back what the framework built and fails on
// any knob that differs.
const KnobsFile = "knobs.json"

// KnobsJSON is Fairness as the preflight reads it (KnobsFile).
func KnobsJSON() []byte {
	b, err := json.Marshal(Fairness)
	if err != nil {
		panic("core: MegatronKnobs does not marshal: " + err.Error()) // a build defect, not input
	}
	return b
}
