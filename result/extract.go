package result

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/frameworks/logparse"
)

// ExtractEnv lists the environment variables Extract reads, for help texts.
var ExtractEnv = []string{"GPUS", "SL", "GBS", "MBS", "PRECISION", "MODEL", "FRAMEWORK", "PLATFORM", "GPU"}

// Extract reads a training log Rival did not launch and builds its result ("log
// analysis mode"). Facts the log lacks come from env (os.Getenv in the mage target):
// GPUS, SL, GBS, MBS (integers), PRECISION (bf16|fp16|fp8), MODEL (registry key),
// FRAMEWORK (empty detects it), PLATFORM (nvd|amd|cpu) and GPU (GPU model name).
func Extract(path string, env func(string) string) (*Result, error) {
	return ExtractTraced(path, env, nil)
}

// ExtractTraced is Extract that also reports every decision the parser makes about
// step lines to trace (nil reports nothing).
func ExtractTraced(path string, env func(string) string, trace func(logparse.Event)) (*Result, error) {
	if env == nil {
		env = func(string) string { return "" }
	}
	facts := Facts{
		Precision: strings.TrimSpace(env("PRECISION")),
		Model:     strings.TrimSpace(env("MODEL")),
		Platform:  strings.TrimSpace(env("PLATFORM")),
		GPUModel:  strings.TrimSpace(env("GPU")),
	}
	for _, v := range []struct {
		name string
		dst  *int
	}{{"GPUS", &facts.GPUs}, {"SL", &facts.SeqLen}, {"GBS", &facts.GBS}, {"MBS", &facts.MBS}} {
		limit := factLimit[v.name]
		raw := strings.TrimSpace(env(v.name))
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("extract %s: %s=%q is not a positive integer", path, v.name, raw)
		}
		if n > limit {
			return nil, fmt.Errorf("extract %s: %s=%d is above %d, more than any training run uses; check the value", path, v.name, n, limit)
		}
		*v.dst = n
	}
	switch p := strings.ToLower(facts.Precision); p {
	case "", "bf16", "fp16", "fp8":
		facts.Precision = p
	default:
		return nil, fmt.Errorf("extract %s: PRECISION=%q: use bf16, fp16 or fp8", path, facts.Precision)
	}
	log, err := logparse.ParseFileTraced(path, env("FRAMEWORK"), trace)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	r, err := Build(log, facts)
	if err != nil {
		return nil, fmt.Errorf("extract %s: %w", path, err)
	}
	return r, nil
}
