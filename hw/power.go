package hw

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// PowerSample is one reading of every GPU's power draw and memory in use.
type PowerSample struct {
	PowerWatts    []float64
	MemoryUsedMiB []float64
}

// PowerQuery is the tool and arguments that read power and memory on a
// platform; an empty tool means the platform has none (cpu).
func PowerQuery(platform string) (tool string, args []string) {
	switch platform {
	case PlatformNVIDIA:
		return "nvidia-smi", []string{"--query-gpu=index,power.draw,memory.used", "--format=csv,noheader,nounits"}
	case PlatformAMD:
		return "amd-smi", []string{"metric", "--power", "--mem-usage", "--json"}
	}
	return "", nil
}

// ParsePowerSample reads the output of PowerQuery's command.
func ParsePowerSample(platform string, out []byte) (PowerSample, error) {
	switch platform {
	case PlatformNVIDIA:
		return parseNvidiaPower(out)
	case PlatformAMD:
		return parseAMDPower(out)
	}
	return PowerSample{}, fmt.Errorf("power sample: no tool for platform %q", platform)
}

// parseNvidiaPower reads "index, power.draw, memory.used" CSV lines;
// "[N/A]" fields (power on some MIG and passive boards) are skipped.
func parseNvidiaPower(out []byte) (PowerSample, error) {
	var s PowerSample
	sc := bufio.NewScanner(bytes.NewReader(out))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != 3 {
			return s, fmt.Errorf("nvidia-smi power line %d: want 3 fields (index, power.draw, memory.used), got %q", line, text)
		}
		if w, err := strconv.ParseFloat(strings.TrimSpace(f[1]), 64); err == nil {
			s.PowerWatts = append(s.PowerWatts, w)
		}
		if m, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64); err == nil {
			s.MemoryUsedMiB = append(s.MemoryUsedMiB, m)
		}
	}
	if len(s.PowerWatts) == 0 && len(s.MemoryUsedMiB) == 0 {
		return s, fmt.Errorf("nvidia-smi power: no readings in %q", truncate(string(out), 80))
	}
	return s, nil
}

// parseAMDPower reads `amd-smi metric --power --mem-usage --json`, bare
// list or wrapped in {"gpu_data": [...]}, with values as numbers, strings
// or {"value", "unit"} objects; power keys differ between amd-smi releases.
func parseAMDPower(out []byte) (PowerSample, error) {
	var s PowerSample
	var raw any
	if err := json.Unmarshal(out, &raw); err != nil {
		return s, fmt.Errorf("amd-smi power: %w", err)
	}
	if m, ok := raw.(map[string]any); ok {
		if g, ok := m["gpu_data"]; ok {
			raw = g
		} else {
			raw = []any{m}
		}
	}
	gpus, ok := raw.([]any)
	if !ok {
		return s, fmt.Errorf("amd-smi power: expected a list of GPUs")
	}
	for _, g := range gpus {
		obj, _ := g.(map[string]any)
		power, _ := obj["power"].(map[string]any)
		for _, k := range []string{"socket_power", "current_socket_power", "average_socket_power"} {
			if w, ok := amdNumber(power[k]); ok {
				s.PowerWatts = append(s.PowerWatts, w)
				break
			}
		}
		mem, _ := obj["mem_usage"].(map[string]any)
		if m, ok := amdNumber(mem["used_vram"]); ok {
			s.MemoryUsedMiB = append(s.MemoryUsedMiB, m)
		}
	}
	if len(s.PowerWatts) == 0 && len(s.MemoryUsedMiB) == 0 {
		return s, fmt.Errorf("amd-smi power: no readings")
	}
	return s, nil
}

func amdNumber(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.Fields(x + " ")[0], 64)
		return f, err == nil
	case map[string]any:
		return amdNumber(x["value"])
	}
	return 0, false
}
