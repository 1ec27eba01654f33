package compare

import (
	"fmt"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/models"
)

// Anchors are published figures a reader can hold results against, each with
// its source, date and how it differs from a Rival run. The TFLOP/s and MFU
// in them are computed with the formula and peaks the report uses.
var Anchors = anchors()

func anchors() []string {
	rival := func(tps float64, gpu string) string {
		m, err := models.Lookup("llama")
		if err != nil {
			return ""
		}
		tf := m.TrainFLOPsPerToken(8192) * tps / 1e12
		peak, err := hw.PeakTFLOPs(gpu, "fp8")
		if err != nil {
			return fmt.Sprintf("Rival's formula gives %s TFLOP/s/GPU at %s tokens/s/GPU.", num(tf, 0), num(tps, 0))
		}
		return fmt.Sprintf("Rival's formula gives %s TFLOP/s/GPU at %s tokens/s/GPU, %s%% MFU of the %s FP8 dense peak (%s TFLOP/s).", num(tf, 0), num(tps, 0), num(100*tf/peak, 1), gpu, num(peak, 1))
	}
	return []string{
		"NVIDIA Megatron-Bridge performance summary (https://docs.nvidia.com/nemo/megatron-bridge/latest/performance-summary.html; the 25.09 figures are on performance-summary-archive.html; source docs/performance-summary.md of NVIDIA-NeMo/Megatron-Bridge): DGX-H100, LLAMA3_8B pretraining, 8 GPUs, FP8 current scaling, GBS 128, MBS 1, sequence length 8192, TP/PP/CP 1, Megatron-FSDP (FSDP = 1) with 16 gradient accumulations (GA 16): 14,079 tokens/s/GPU and 725 model TFLOP/s/GPU with the 25.09 NeMo container (September 2025), 14,451 tokens/s/GPU and 744 TFLOP/s/GPU with 25.11 (November 2025). " + rival(14451, "H100 SXM") +
			" How it differs from a Rival run: parameters, gradients and optimizer state sharded by Megatron-FSDP rather than replicated (DDP), FP8 current scaling rather than BF16, the recipe's activation recompute, and throughput timed over iterations 35-44 of 50 rather than after Rival's warm-up rule.",
		"AMD ROCm performance results for MI325X, quoted in the Primus repository (github.com/AMD-AGI/Primus, docs_deprecated/tech_blogs/projection/projection.md, table \"MI325X — Dense Models (Llama 3.1)\", from https://www.amd.com/en/developer/resources/rocm-hub/dev-ai/performance-results.html#ai-training): Llama 3.1 8B, FP8, batch 2 per GPU, sequence length 8192, no FSDP, TP/PP/CP/EP 1: 16,224 tokens/s/GPU on one node (8 GPUs) and 16,186 tokens/s/GPU measured on eight nodes. " + rival(16224, "MI325X") +
			" How it differs from a Rival run: an MI325X (256 GiB, 1,000 W) rather than an MI300X, FP8 rather than BF16, micro-batch 2, and AMD's tuned Primus/Megatron stack.",
	}
}
