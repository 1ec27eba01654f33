package hw

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// AMDSMIStaticArgs are the arguments Detect passes to amd-smi.
func AMDSMIStaticArgs() []string { return []string{"static", "--json"} }

// ROCmSMIArgs are the arguments Detect passes to rocm-smi.
func ROCmSMIArgs() []string {
	return []string{"--showproductname", "--showmeminfo", "vram", "--showbus", "--showuniqueid",
		"--showdriverversion", "--showmaxpower", "--json"}
}

// ParseAMDSMIStatic reads `amd-smi static --json`, either the wrapped form
// {"gpu_data": [...]} (amd-smi 25 and later) or the bare list of earlier
// versions. Partitions of one physical GPU (CPX/DPX/QPX modes list each as a
// GPU) are folded by ASIC serial number.
func ParseAMDSMIStatic(data []byte) ([]GPU, []string, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("amd-smi static --json: empty output")
	}
	var warnings []string
	if data[0] != '[' && data[0] != '{' {
		// amd-smi prints "Permission needed to access required GPU device node(s): ..."
		// (and similar notes) on stdout before its JSON when device nodes are not
		// readable: the JSON starts at the first line that opens a valid document.
		if at := jsonStart(data); at > 0 {
			first, _, _ := bytes.Cut(data, []byte("\n"))
			warnings = append(warnings, "amd-smi printed text before its JSON: "+truncate(strings.TrimSpace(string(first)), 160))
			data = data[at:]
		}
	}
	var entries []map[string]any
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &entries); err != nil {
			return nil, nil, fmt.Errorf("amd-smi static --json (list form): %w", err)
		}
	case '{':
		var wrapped map[string]json.RawMessage
		if err := json.Unmarshal(data, &wrapped); err != nil {
			return nil, nil, fmt.Errorf("amd-smi static --json (object form): %w", err)
		}
		raw, ok := wrapped["gpu_data"]
		if !ok {
			return nil, nil, fmt.Errorf("amd-smi static --json: object without a gpu_data list (keys %s)", keysOf(wrapped))
		}
		if err := json.Unmarshal(raw, &entries); err != nil {
			return nil, nil, fmt.Errorf("amd-smi static --json: gpu_data: %w", err)
		}
	default:
		return nil, nil, fmt.Errorf("amd-smi static --json: output is not JSON, it starts %q", truncate(string(data), 80))
	}
	var parts []amdPart
	for i, e := range entries {
		if e == nil {
			return nil, nil, fmt.Errorf("amd-smi static --json: entry %d is null", i)
		}
		p := amdPart{GPU: GPU{Vendor: VendorAMD, Index: i}}
		if v, ok := numberOf(e["gpu"]); ok && v >= 0 && v < 1<<20 {
			p.Index = int(v)
		}
		asic := objectOf(e["asic"])
		p.Name = stringOf(asic["market_name"])
		dev := parseDeviceID(stringOf(asic["device_id"]))
		if dev != 0 {
			p.PCIDeviceID = fmt.Sprintf("0x%04x", dev)
		}
		p.GFXTarget = stringOf(asic["target_graphics_version"])
		p.group = stringOf(asic["asic_serial"])
		p.UUID = p.group
		p.PCIBusID = stringOf(objectOf(e["bus"])["bdf"])
		drv := objectOf(e["driver"])
		p.Driver = firstString(drv["version"], drv["driver_version"])
		vram := objectOf(e["vram"])
		mib, err := sizeMiB(firstPresent(vram["size"], vram["vram_size"]))
		if err != nil {
			return nil, nil, fmt.Errorf("amd-smi static --json: gpu %d vram size: %w", p.Index, err)
		}
		p.MemoryMiB = mib
		if mib == 0 {
			// MemoryMiB 0 means unknown; say so rather than let it read as no memory.
			warnings = append(warnings, fmt.Sprintf("amd-smi static --json: gpu %d (%s) prints no vram size; memory unknown", p.Index, firstNonEmpty(p.Name, "unnamed")))
		}
		limit := objectOf(e["limit"])
		if w, err := watts(firstPresent(limit["max_power"], limit["max_power_limit"], objectOf(limit["ppt0"])["max_power_limit"])); err == nil {
			p.PowerLimitW = w
		}
		part := objectOf(e["partition"])
		p.Partition = partitionMode(stringOf(part["compute_partition"]), stringOf(part["memory_partition"]))
		p.Model = CanonicalModel(VendorAMD, p.Name, dev)
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return nil, warnings, fmt.Errorf("amd-smi static --json: no GPUs listed")
	}
	gpus, w := foldPartitions(parts, "amd-smi")
	return gpus, append(warnings, w...), nil
}

// ParseROCmSMI reads `rocm-smi ... --json`: an object with one "cardN" entry
// per device and, in some versions, a "system" entry. Key names changed case
// between releases ("Card series" / "Card Series"), so keys are matched
// without regard to case.
func ParseROCmSMI(data []byte) ([]GPU, []string, error) {
	data = bytes.TrimSpace(data)
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, fmt.Errorf("rocm-smi --json: %w (output starts %q)", err, truncate(string(data), 80))
	}
	system := map[string]string{}
	cards := map[int]map[string]string{}
	for k, raw := range top {
		lk := strings.ToLower(k)
		fields := map[string]string{}
		var obj map[string]any
		if err := json.Unmarshal(raw, &obj); err != nil {
			if lk == "system" || strings.HasPrefix(lk, "card") {
				return nil, nil, fmt.Errorf("rocm-smi --json: %s is not an object: %w", k, err)
			}
			continue
		}
		for fk, fv := range obj {
			fields[strings.ToLower(strings.TrimSpace(fk))] = scalarString(fv)
		}
		if lk == "system" {
			system = fields
			continue
		}
		if n, ok := strings.CutPrefix(lk, "card"); ok {
			idx, err := strconv.Atoi(n)
			if err != nil || idx < 0 {
				return nil, nil, fmt.Errorf("rocm-smi --json: key %q is not cardN", k)
			}
			cards[idx] = fields
		}
	}
	if len(cards) == 0 {
		return nil, nil, fmt.Errorf("rocm-smi --json: no cardN entries (keys %s)", keysOf(top))
	}
	idxs := make([]int, 0, len(cards))
	for i := range cards {
		idxs = append(idxs, i)
	}
	sort.Ints(idxs)
	var parts []amdPart
	for _, i := range idxs {
		f := cards[i]
		p := amdPart{GPU: GPU{Vendor: VendorAMD, Index: i}}
		p.Name = firstNonEmpty(f["card series"], f["device name"], f["card sku"])
		dev := parseDeviceID(firstNonEmpty(f["device id"], f["card model"]))
		if dev != 0 {
			p.PCIDeviceID = fmt.Sprintf("0x%04x", dev)
		}
		p.GFXTarget = f["gfx version"]
		p.PCIBusID = f["pci bus"]
		p.group = f["unique id"]
		p.UUID = p.group
		p.Driver = firstNonEmpty(f["driver version"], system["driver version"])
		if v := f["vram total memory (b)"]; v != "" {
			b, err := strconv.ParseInt(v, 10, 64)
			if err != nil || b < 0 {
				return nil, nil, fmt.Errorf("rocm-smi --json: card%d VRAM Total Memory (B) %q is not a byte count", i, v)
			}
			p.MemoryMiB = b / (1 << 20)
		}
		if v := f["max graphics package power (w)"]; v != "" {
			if w, err := strconv.ParseFloat(v, 64); err == nil && w >= 0 && !math.IsInf(w, 0) {
				p.PowerLimitW = w
			}
		}
		p.Partition = partitionMode(f["compute partition"], f["memory partition"])
		p.Model = CanonicalModel(VendorAMD, p.Name, dev)
		parts = append(parts, p)
	}
	gpus, w := foldPartitions(parts, "rocm-smi")
	return gpus, w, nil
}

// amdPart is one device as a tool lists it, before partitions are folded.
type amdPart struct {
	GPU
	group string // ASIC serial or unique id; "" when the tool gave none
}

// foldPartitions merges entries that share an ASIC serial into one physical
// GPU. Tools report the whole device's memory on each partition, so the
// figure is kept, not summed.
func foldPartitions(parts []amdPart, tool string) ([]GPU, []string) {
	var gpus []GPU
	var warnings []string
	seen := map[string]int{}
	count := map[string]int{}
	for _, p := range parts {
		key := p.group
		if key == "" || strings.EqualFold(key, "N/A") || key == "0" {
			gpus = append(gpus, p.GPU)
			continue
		}
		if i, ok := seen[key]; ok {
			count[key]++
			if p.MemoryMiB > gpus[i].MemoryMiB {
				gpus[i].MemoryMiB = p.MemoryMiB
			}
			continue
		}
		seen[key] = len(gpus)
		count[key] = 1
		gpus = append(gpus, p.GPU)
	}
	for key, i := range seen {
		if n := count[key]; n > 1 {
			g := &gpus[i]
			if g.Partition == "" {
				g.Partition = fmt.Sprintf("%d partitions", n)
			} else {
				g.Partition = fmt.Sprintf("%s, %d partitions", g.Partition, n)
			}
			warnings = append(warnings, fmt.Sprintf("%s listed %d partitions of GPU %s (%s) as separate devices; counted once", tool, n, key, g.Name))
		}
	}
	for i := range gpus {
		gpus[i].Index = i
	}
	return gpus, warnings
}

func partitionMode(compute, memory string) string {
	c, m := strings.TrimSpace(compute), strings.TrimSpace(memory)
	if isNA(c) {
		c = ""
	}
	if isNA(m) {
		m = ""
	}
	switch {
	case c != "" && m != "":
		return c + "/" + m
	default:
		return c + m
	}
}

func objectOf(v any) map[string]any {
	if m, ok := v.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

func stringOf(v any) string {
	s := scalarString(v)
	if isNA(s) {
		return ""
	}
	return s
}

func scalarString(v any) string {
	switch t := v.(type) {
	case string:
		return strings.TrimSpace(t)
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(t)
	}
	return ""
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s := stringOf(v); s != "" {
			return s
		}
	}
	return ""
}

func firstPresent(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v = strings.TrimSpace(v); v != "" && !isNA(v) {
			return v
		}
	}
	return ""
}

func numberOf(v any) (float64, bool) {
	switch t := v.(type) {
	case float64:
		return t, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		return f, err == nil
	}
	return 0, false
}

var valueUnit = regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z/]*)\s*$`)

// valueAndUnit accepts {"value": 196592, "unit": "MB"}, "196592 MB" or 196592.
func valueAndUnit(v any) (float64, string, bool, error) {
	switch t := v.(type) {
	case nil:
		return 0, "", false, nil
	case float64:
		return t, "", true, nil
	case string:
		if isNA(t) {
			return 0, "", false, nil
		}
		m := valueUnit.FindStringSubmatch(t)
		if m == nil {
			return 0, "", false, fmt.Errorf("%q is not a number with a unit", truncate(t, 40))
		}
		f, err := strconv.ParseFloat(m[1], 64)
		return f, m[2], err == nil, err
	case map[string]any:
		val, unit := t["value"], stringOf(t["unit"])
		if s, ok := val.(string); ok && isNA(s) {
			return 0, "", false, nil
		}
		f, ok := numberOf(val)
		if !ok {
			return 0, "", false, fmt.Errorf("value %v is not a number", val)
		}
		return f, unit, true, nil
	}
	return 0, "", false, fmt.Errorf("unexpected %T", v)
}

// sizeMiB converts a memory size to MiB. amd-smi's "MB" is MiB: it divides
// bytes by 1024² (196592 "MB" on an MI300X is 206,141,652,992 bytes).
func sizeMiB(v any) (int64, error) {
	f, unit, ok, err := valueAndUnit(v)
	if err != nil || !ok {
		return 0, err
	}
	if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 1e18 {
		return 0, fmt.Errorf("size %v out of range", f)
	}
	switch strings.ToUpper(unit) {
	case "", "MB", "MIB":
		return int64(f), nil
	case "GB", "GIB":
		return int64(f * 1024), nil
	case "KB", "KIB":
		return int64(f / 1024), nil
	case "B":
		return int64(f / (1 << 20)), nil
	}
	return 0, fmt.Errorf("unknown memory unit %q", unit)
}

func watts(v any) (float64, error) {
	f, unit, ok, err := valueAndUnit(v)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("no value")
	}
	if f < 0 || math.IsInf(f, 0) {
		return 0, fmt.Errorf("power %v out of range", f)
	}
	switch strings.ToUpper(unit) {
	case "", "W":
		return f, nil
	case "MW":
		return f / 1000, nil
	}
	return 0, fmt.Errorf("unknown power unit %q", unit)
}

func keysOf(m map[string]json.RawMessage) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, strconv.Quote(k))
	}
	sort.Strings(ks)
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}

// jsonStart returns the offset of the first line of data that starts a valid JSON
// document (an object or a list), or -1.
func jsonStart(data []byte) int {
	for off := 0; off < len(data); {
		line := data[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		t := bytes.TrimLeft(line, " \t\r")
		if len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			start := off + len(line) - len(t)
			if json.Valid(data[start:]) {
				return start
			}
		}
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		off += i + 1
	}
	return -1
}
