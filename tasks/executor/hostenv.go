package executor

import (
	"strings"

	"github.com/rivalbench/rival/dag"
)

// hostEnvNames are the variables a trainer started on the host inherits
// from Rival's environment: what a shell, Python, the BLAS and the GPU
// runtimes need, and nothing else. Credentials (HF_TOKEN and every other
// token, key or password) never reach it, so they cannot land in a log,
// a profiler trace or a crash dump. The launch adds its own variables on
// top.
var hostEnvNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "TERM": true,
	"LANG": true, "LANGUAGE": true, "TZ": true, "TMPDIR": true,
	"LD_LIBRARY_PATH": true, "PYTHONPATH": true, "PYTHONHASHSEED": true, "VIRTUAL_ENV": true,
	"CUDA_HOME": true, "CUDA_PATH": true, "CUDA_VISIBLE_DEVICES": true, "CUDA_DEVICE_ORDER": true,
	"ROCM_PATH": true, "ROCM_HOME": true, "HIP_VISIBLE_DEVICES": true, "ROCR_VISIBLE_DEVICES": true,
	"OMP_NUM_THREADS": true, "MKL_NUM_THREADS": true, "OPENBLAS_NUM_THREADS": true,
	"MASTER_ADDR": true, "MASTER_PORT": true, "WORLD_SIZE": true, "RANK": true, "LOCAL_RANK": true,
	"HF_HOME": true, "HF_HUB_OFFLINE": true, "HF_DATASETS_OFFLINE": true, "TRANSFORMERS_OFFLINE": true,
}

// hostEnvPrefixes admit whole families of runtime settings.
var hostEnvPrefixes = []string{"LC_", "NCCL_", "RCCL_", "HSA_", "HIP_", "MIOPEN_", "TORCH_", "PYTORCH_", "SLURM_", "XDG_"}

// secretWords mark a variable as a credential whatever its family.
var secretWords = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "ACCESS_KEY", "PRIVATE_KEY"}

// hostEnv keeps the allow-listed entries of environ ("KEY=VALUE" pairs).
func hostEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !hostEnvAllowed(k) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func hostEnvAllowed(k string) bool {
	u := strings.ToUpper(k)
	if dag.IsSecretEnv(u) {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(u, w) {
			return false
		}
	}
	if hostEnvNames[k] {
		return true
	}
	for _, p := range hostEnvPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}
