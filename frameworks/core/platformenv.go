package core

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/rivalbench/rival/hw"
)

// platformEnv is the one communication and kernel environment of each platform: every launch of
// every framework on the platform carries it (Apply), so no framework runs with a collective or
// kernel setting another is denied.
//
// AMD: the values Primus's examples/run_pretrain.sh exports on every run it starts (v26.5.1 on the
// current stack; v26.2, 1ec29c67, on the previous one, where only NCCL_PXN_DISABLE differs: stackEnv),
// outside its AINIC and MaxText branches, for the variables that tune RCCL, the HSA runtime, the
// GPU queues, PyTorch's process group and Transformer Engine. prim and titan on AMD run through that
// script and get these values from it whatever Rival sets; mega and fsdp on AMD got none of them
// until the table. Host-specific ones the script detects (NCCL_IB_HCA, NCCL_SOCKET_IFNAME,
// GLOO_SOCKET_IFNAME) stay the cluster's. TestPlatformEnvIsRunPretrains reads the script and checks
// the table against it.
//
// NVIDIA: the one variable mega and nemo set (Megatron asserts it when tensor or sequence parallel
// communication overlaps compute); titan and fsdp now run with it too.
var platformEnv = map[string]map[string]string{
	hw.PlatformAMD: {
		"NCCL_CHECKS_DISABLE":                           "1",
		"NCCL_IB_GID_INDEX":                             "3",
		"NCCL_CROSS_NIC":                                "0",
		"HSA_ENABLE_SDMA":                               "1",
		"HSA_NO_SCRATCH_RECLAIM":                        "0",
		"RCCL_MSCCL_ENABLE":                             "0",
		"RCCL_MSCCLPP_ENABLE":                           "0",
		"RCCL_MSCCLPP_FORCE_ENABLE":                     "0",
		"RCCL_MSCCLPP_THRESHOLD":                        "1073741824",
		"MSCCLPP_DISABLE_CHANNEL_CACHE":                 "FALSE",
		"TORCH_NCCL_USE_TENSOR_REGISTER_ALLOCATOR_HOOK": "0",
		"GPU_MAX_HW_QUEUES":                             "2",
		"CUDA_DEVICE_MAX_CONNECTIONS":                   "1",
		"TORCH_NCCL_HIGH_PRIORITY":                      "1",
		"NCCL_PXN_DISABLE":                              "0",
		"NCCL_P2P_NET_CHUNKSIZE":                        "524288",
		"NVTE_USE_CAST_TRANSPOSE_TRITON":                "1",
		"NVTE_USE_OPTIMIZED_HIPIFIED_CAST_TRANSPOSE":    "0",
		"NVTE_ROCM_ENABLE_MXFP8":                        "1",
		"NVTE_CK_USES_BWD_V3":                           "1",
		"NVTE_DEBUG":                                    "0",
		"NVTE_DEBUG_LEVEL":                              "0",
		"NVTE_FUSED_ATTN_LOG_CONFIG":                    "0",
	},
	hw.PlatformNVIDIA: {
		"CUDA_DEVICE_MAX_CONNECTIONS": "1",
	},
}

// stackEnv is what another stack's script exports differently, by stack and platform: Primus v26.2
// forced PXN off (NCCL_PXN_DISABLE=1); v26.5.1 leaves it on unless the caller says otherwise.
var stackEnv = map[string]map[string]map[string]string{
	StackPrevious: {hw.PlatformAMD: {"NCCL_PXN_DISABLE": "1"}},
}

// PlatformEnv returns a copy of the communication environment of a platform on a stack ("" is
// current; empty for cpu).
func PlatformEnv(platform, stack string) map[string]string {
	env := maps.Clone(platformEnv[platform])
	maps.Copy(env, stackEnv[stack][platform])
	return env
}

// ApplyPlatformEnv adds the platform's communication environment to a launch and to its preflight,
// and records it in Launch.PlatformEnv. A launch that sets one of these variables to another value
// is an error: the table is the one place they are decided.
func ApplyPlatformEnv(platform, stack string, l *Launch) error {
	env := PlatformEnv(platform, stack)
	if len(env) == 0 {
		return nil
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, t := range []*Launch{l, l.Preflight} {
		if t == nil {
			continue
		}
		if t.Env == nil {
			t.Env = map[string]string{}
		}
		for _, k := range names {
			if v, ok := t.Env[k]; ok && v != env[k] {
				return fmt.Errorf("%s: the launch sets %s=%s, but every %s launch runs with %s=%s (frameworks/core/platformenv.go): drop it from the builder or change the platform's table", l.Framework, k, v, platform, k, env[k])
			}
			t.Env[k] = env[k]
		}
	}
	l.PlatformEnv = maps.Clone(env)
	return nil
}

// PlatformEnvMarkdown renders the platform table as docs/frameworks.md shows it between its
// platform-env markers (TestDocsPlatformEnv keeps the two equal).
func PlatformEnvMarkdown() string {
	var b strings.Builder
	b.WriteString("| platform | variable | value |\n|---|---|---|\n")
	platforms := make([]string, 0, len(platformEnv))
	for p := range platformEnv {
		platforms = append(platforms, p)
	}
	sort.Strings(platforms)
	for _, p := range platforms {
		names := make([]string, 0, len(platformEnv[p]))
		for k := range platformEnv[p] {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			v := "`" + platformEnv[p][k] + "`"
			for _, st := range StackNames {
				if o, ok := stackEnv[st][p][k]; ok {
					v += fmt.Sprintf(" (%s: `%s`)", st, o)
				}
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s |\n", p, k, v)
		}
	}
	return b.String()
}
