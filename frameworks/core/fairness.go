package core

// MegatronKnobs are the knobs that change speed or the loss in a Megatron-family run beyond the fair
// configuration and the model's own facts (models.Model: RMSNorm ε, init, window, biases). Every mega, prim and nemo launch sets each of them explicitly to the value here, so
// no framework's defaults, Primus's stock experiment or Bridge's config defaults decide them;
// docs/frameworks.md lists them with the defaults they replace.
type MegatronKnobs struct {
	OverlapGradReduce    bool   // overlap the data-parallel gradient reduce-scatter with backward
	OverlapParamGather   bool   // overlap the distributed optimizer's parameter all-gather with forward
	DistributedOptimizer bool   // shard optimizer state across data-parallel ranks
	GradReduceInBF16     bool   // false: gradients are reduced in fp32
	Recompute            string // "" (none) | selective | full
	EODMaskLoss          bool   // false: the token after an end-of-document counts in the loss
	AttentionBackend     string // Megatron's --attention-backend
	GradAccumFusion      bool   // fused weight-gradient accumulation (TE/APEX wgrad kernels)
	MaskedSoftmaxFusion  bool
	BiasSwiGLUFusion     bool
	RopeFusion           bool
	BiasDropoutFusion    bool
	CrossEntropyFusion   bool   // fused cross-entropy (Megatron's --cross-entropy-loss-fusion)
	DataloaderType       string // single: one pass in Megatron's sample order
	NumWorkers           int    // data-loader workers per rank
	PrimusTurbo          bool   // Primus Turbo kernels (GEMM, attention, grouped MLP): prim only
	// RerunMode is Megatron's rerun state machine: "disabled" skips the per-iteration result
	// validation that Megatron-LM's command line enables by default (validate_results).
	RerunMode string
	// AttentionSoftmaxInFP32 computes the unfused attention softmax in fp32 (Primus's Llama 3.1
	// model file turns it on; Megatron-LM's and Bridge's defaults leave it off).
	AttentionSoftmaxInFP32 bool
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
