package hw

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// NvidiaQueryFields is the --query-gpu list Detect asks for, in order; a CSV
// without a header is read in this order.
var NvidiaQueryFields = []string{
	"name", "uuid", "memory.total", "driver_version", "pci.bus_id",
	"power.limit", "clocks.max.sm", "index", "mig.mode.current", "pci.device_id",
}

// NvidiaBaseQueryFields is the narrower query every nvidia-smi since the
// 400-series drivers answers; Detect retries with it when an older driver
// rejects a field of NvidiaQueryFields ("is not a valid field to query").
var NvidiaBaseQueryFields = NvidiaQueryFields[:7]

// NvidiaQueryArgs are the arguments Detect passes to nvidia-smi.
func NvidiaQueryArgs() []string { return nvidiaQueryArgs(NvidiaQueryFields) }

// NvidiaBaseQueryArgs are the arguments of the fallback query.
func NvidiaBaseQueryArgs() []string { return nvidiaQueryArgs(NvidiaBaseQueryFields) }

func nvidiaQueryArgs(fields []string) []string {
	return []string{"--query-gpu=" + strings.Join(fields, ","), "--format=csv,noheader,nounits"}
}

// unitSuffix strips the units nvidia-smi appends without "nounits" and the
// bracketed units of a header ("memory.total [MiB]").
var headerUnit = regexp.MustCompile(`\s*\[[^\]]*\]$`)

func isNA(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || strings.HasPrefix(v, "[") || strings.EqualFold(v, "N/A")
}

func stripUnit(v string) string {
	v = strings.TrimSpace(v)
	for _, u := range []string{" MiB", " W", " MHz", " %"} {
		v = strings.TrimSuffix(v, u)
	}
	return v
}

// ParseNvidiaSMICSV reads `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]`.
// With a header line the columns are found by name (any order, any extra
// columns, units in brackets); without one they must be NvidiaQueryFields or
// NvidiaBaseQueryFields, told apart by the first row's field count.
// Values like "[N/A]" or "[Not Supported]" leave the field unset.
func ParseNvidiaSMICSV(data []byte) ([]GPU, []string, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	r.ReuseRecord = false

	var cols map[string]int
	var gpus []GPU
	var warnings []string
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			return nil, nil, fmt.Errorf("nvidia-smi csv line %d: %w", line, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if cols == nil {
			cols = map[string]int{}
			if isNvidiaHeader(rec) {
				for i, h := range rec {
					cols[headerUnit.ReplaceAllString(strings.TrimSpace(h), "")] = i
				}
				if _, ok := cols["name"]; !ok {
					return nil, nil, fmt.Errorf("nvidia-smi csv line %d: header has no name column; query at least name and memory.total", line)
				}
				continue
			}
			fields := NvidiaQueryFields
			if len(rec) == len(NvidiaBaseQueryFields) {
				fields = NvidiaBaseQueryFields
			}
			for i, f := range fields {
				cols[f] = i
			}
		}
		if len(rec) < len(cols) {
			return nil, nil, fmt.Errorf("nvidia-smi csv line %d: %d fields, want %d (%s); is this nvidia-smi output? it starts %q",
				line, len(rec), len(cols), strings.Join(NvidiaQueryFields, ","), truncate(strings.Join(rec, ","), 80))
		}
		g, w, err := nvidiaRow(rec, cols, len(gpus))
		if err != nil {
			return nil, nil, fmt.Errorf("nvidia-smi csv line %d: %w", line, err)
		}
		warnings = append(warnings, w...)
		gpus = append(gpus, g)
	}
	if len(gpus) == 0 {
		return nil, warnings, fmt.Errorf("nvidia-smi csv: no GPU rows in %d bytes of output", len(data))
	}
	return gpus, warnings, nil
}

func isNvidiaHeader(rec []string) bool {
	for _, f := range rec {
		switch headerUnit.ReplaceAllString(strings.TrimSpace(f), "") {
		case "name", "uuid", "memory.total", "index", "timestamp":
			return true
		}
	}
	return false
}

func nvidiaRow(rec []string, cols map[string]int, row int) (GPU, []string, error) {
	get := func(k string) string {
		if i, ok := cols[k]; ok && i < len(rec) {
			if isNA(rec[i]) {
				return ""
			}
			return stripUnit(rec[i])
		}
		return ""
	}
	g := GPU{Vendor: VendorNVIDIA, Index: row}
	var warnings []string
	g.Name = get("name")
	if g.Name == "" {
		return g, nil, fmt.Errorf("GPU row %d has no name", row)
	}
	g.UUID = get("uuid")
	g.Driver = get("driver_version")
	g.PCIBusID = get("pci.bus_id")
	if v := get("index"); v != "" {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			return g, nil, fmt.Errorf("index %q is not a GPU index", v)
		}
		g.Index = i
	}
	if v := get("memory.total"); v != "" {
		m, err := strconv.ParseInt(v, 10, 64)
		if err != nil || m < 0 {
			return g, nil, fmt.Errorf("memory.total %q is not a MiB count", v)
		}
		g.MemoryMiB = m
	} else {
		warnings = append(warnings, fmt.Sprintf("GPU %d (%s): nvidia-smi reported no memory.total", g.Index, g.Name))
	}
	if v := get("power.limit"); v != "" {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || p < 0 || p != p {
			return g, nil, fmt.Errorf("power.limit %q is not watts", v)
		}
		g.PowerLimitW = p
	}
	if v := get("clocks.max.sm"); v != "" {
		c, err := strconv.Atoi(v)
		if err != nil || c < 0 {
			return g, nil, fmt.Errorf("clocks.max.sm %q is not MHz", v)
		}
		g.MaxSMClockMHz = c
	}
	if strings.EqualFold(get("mig.mode.current"), "Enabled") {
		g.Partition = "MIG enabled"
	}
	var dev uint16
	if v := get("pci.device_id"); v != "" {
		dev = parseDeviceID(v)
		g.PCIDeviceID = fmt.Sprintf("0x%04x", dev)
	}
	g.Model = CanonicalModel(VendorNVIDIA, g.Name, dev)
	return g, warnings, nil
}

// MIGDevice is one MIG instance as `nvidia-smi -L` lists it.
type MIGDevice struct {
	Profile string // "3g.40gb"
	Device  int
	UUID    string
}

var (
	listGPU = regexp.MustCompile(`^GPU (\d+): (.+?) \(UUID: ([^)]*)\)\s*$`)
	listMIG = regexp.MustCompile(`^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]*)\)\s*$`)
)

// ParseNvidiaSMIList reads `nvidia-smi -L` and returns the MIG instances under
// each physical GPU, keyed by the GPU's UUID.
func ParseNvidiaSMIList(data []byte) (map[string][]MIGDevice, error) {
	out := map[string][]MIGDevice{}
	current := ""
	for n, line := range strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if m := listGPU.FindStringSubmatch(line); m != nil {
			current = m[3]
			out[current] = out[current][:0:0]
			continue
		}
		if m := listMIG.FindStringSubmatch(line); m != nil {
			if current == "" {
				return nil, fmt.Errorf("nvidia-smi -L line %d: MIG device before any GPU line", n+1)
			}
			dev, err := strconv.Atoi(m[2])
			if err != nil {
				return nil, fmt.Errorf("nvidia-smi -L line %d: device %q: %w", n+1, m[2], err)
			}
			out[current] = append(out[current], MIGDevice{Profile: m[1], Device: dev, UUID: m[3]})
			continue
		}
		return nil, fmt.Errorf("nvidia-smi -L line %d: unexpected %q", n+1, truncate(line, 80))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("nvidia-smi -L: no GPU lines")
	}
	return out, nil
}

func describeMIG(devs []MIGDevice) string {
	if len(devs) == 0 {
		return "MIG enabled, no instances"
	}
	p := make([]string, len(devs))
	for i, d := range devs {
		p[i] = d.Profile
	}
	return fmt.Sprintf("MIG enabled: %d instances (%s)", len(devs), strings.Join(p, ", "))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
