package hw

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rivalbench/rival/safefile"
)

// KFDNode is one node of /sys/class/kfd/kfd/topology/nodes: a CPU socket, a
// whole GPU, or one compute partition of a GPU.
type KFDNode struct {
	ID               int
	Props            map[string]uint64
	MemoryBanksBytes uint64 // sum of the node's frame-buffer memory banks
}

// ParseKFDProperties reads a KFD "properties" file: one "name value" pair per
// line, values unsigned decimal integers.
func ParseKFDProperties(data []byte) (map[string]uint64, error) {
	props := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want \"name value\", got %q", n, truncate(line, 80))
		}
		v, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s value %q is not an unsigned integer", n, fields[0], truncate(fields[1], 40))
		}
		props[fields[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", n+1, err)
	}
	return props, nil
}

// ReadKFDNodes reads every node under root (a KFD "topology" directory).
func ReadKFDNodes(root string) ([]KFDNode, error) {
	dir := filepath.Join(root, "nodes")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read KFD topology %s: %w", dir, err)
	}
	var nodes []KFDNode
	for _, e := range entries {
		id, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name(), "properties")
		data, err := safefile.ReadFile(context.Background(), path, safefile.LimitSysfs)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		props, err := ParseKFDProperties(data)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		node := KFDNode{ID: id, Props: props}
		banks, err := filepath.Glob(filepath.Join(dir, e.Name(), "mem_banks", "*", "properties"))
		if err != nil {
			return nil, fmt.Errorf("list memory banks of KFD node %d: %w", id, err)
		}
		for _, b := range banks {
			data, err := safefile.ReadFile(context.Background(), b, safefile.LimitSysfs)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", b, err)
			}
			bp, err := ParseKFDProperties(data)
			if err != nil {
				return nil, fmt.Errorf("parse %s: %w", b, err)
			}
			// heap_type 1 and 2 are public and private frame buffer (VRAM).
			if ht := bp["heap_type"]; ht == 1 || ht == 2 {
				node.MemoryBanksBytes += bp["size_in_bytes"]
			}
		}
		nodes = append(nodes, node)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	return nodes, nil
}

// GFXTarget turns KFD's gfx_target_version (major·10000 + minor·100 + stepping)
// into the LLVM target name: 90402 is gfx942, 90010 is gfx90a.
func GFXTarget(version uint64) string {
	if version == 0 {
		return ""
	}
	return fmt.Sprintf("gfx%d%x%x", version/10000, (version/100)%100, version%100)
}

// ParseKFDTopology reads a KFD topology directory (normally
// /sys/class/kfd/kfd/topology) and returns its physical GPUs. CPU nodes (no
// SIMDs) are skipped; nodes that are partitions of one GPU share a unique_id
// and are counted once; a node repeated with the same location is a duplicate.
// Memory is the sum of the partitions' frame-buffer banks, since the driver
// divides a GPU's memory among its partitions.
func ParseKFDTopology(root string) ([]GPU, []string, error) {
	nodes, err := ReadKFDNodes(root)
	if err != nil {
		return nil, nil, err
	}
	return kfdGPUs(nodes)
}

func kfdGPUs(nodes []KFDNode) ([]GPU, []string, error) {
	type group struct {
		gpu       GPU
		parts     int
		mem       uint64
		locations map[[2]uint64]bool
	}
	var order []string
	groups := map[string]*group{}
	var warnings []string
	for _, n := range nodes {
		p := n.Props
		if p["simd_count"] == 0 {
			continue // CPU node
		}
		loc := [2]uint64{p["domain"], p["location_id"]}
		key := fmt.Sprintf("uid:%d", p["unique_id"])
		if p["unique_id"] == 0 {
			// No unique id: a device is a PCI bus/device; partitions differ in function.
			key = fmt.Sprintf("pci:%04x:%04x", p["domain"], p["location_id"]>>3)
		}
		g, ok := groups[key]
		if !ok {
			dev := uint16(p["device_id"])
			g = &group{locations: map[[2]uint64]bool{}, gpu: GPU{
				Vendor:      VendorAMD,
				PCIDeviceID: fmt.Sprintf("0x%04x", dev),
				PCIBusID:    kfdBusID(p["domain"], p["location_id"]),
				GFXTarget:   GFXTarget(p["gfx_target_version"]),
				Name:        amdPCINames[dev],
				Model:       CanonicalModel(VendorAMD, "", dev),
			}}
			if p["unique_id"] != 0 {
				g.gpu.UUID = fmt.Sprintf("0x%x", p["unique_id"])
			}
			if p["vendor_id"] != 0x1002 {
				warnings = append(warnings, fmt.Sprintf("KFD node %d has vendor id 0x%04x, not AMD", n.ID, p["vendor_id"]))
			}
			groups[key] = g
			order = append(order, key)
		}
		if g.locations[loc] {
			warnings = append(warnings, fmt.Sprintf("KFD node %d repeats the location of an earlier node of GPU %s; counted once", n.ID, g.gpu.PCIBusID))
			continue
		}
		g.locations[loc] = true
		g.parts++
		mem := n.MemoryBanksBytes
		if mem == 0 {
			mem = p["local_mem_size"]
		}
		g.mem += mem
	}
	gpus := make([]GPU, 0, len(order))
	owner := map[[2]uint64]string{}
	partCounts := map[int]int{}
	for _, key := range order {
		g := groups[key]
		partCounts[g.parts]++
		for loc := range g.locations {
			if other, ok := owner[loc]; ok && other != key {
				warnings = append(warnings, fmt.Sprintf("two GPUs (unique ids %s and %s) claim PCI location %s: the topology may be copied or corrupt",
					groups[other].gpu.UUID, g.gpu.UUID, kfdBusID(loc[0], loc[1])))
			}
			owner[loc] = key
		}
	}
	if len(partCounts) > 1 {
		warnings = append(warnings, "GPUs show different numbers of KFD partition nodes; a partition may be missing or offline")
	}
	for i, key := range order {
		g := groups[key]
		g.gpu.Index = i
		g.gpu.MemoryMiB = int64(g.mem / (1 << 20))
		if g.parts > 1 {
			g.gpu.Partition = fmt.Sprintf("%d partitions", g.parts)
		}
		if g.mem == 0 {
			warnings = append(warnings, fmt.Sprintf("KFD topology gives no memory size for GPU %s (no mem_banks, local_mem_size 0)", g.gpu.PCIBusID))
		}
		gpus = append(gpus, g.gpu)
	}
	return gpus, warnings, nil
}

func kfdBusID(domain, location uint64) string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", domain&0xffff, (location>>8)&0xff, (location>>3)&0x1f, location&0x7)
}

// PCIDevice is one function under /sys/bus/pci/devices.
type PCIDevice struct {
	Address string
	Vendor  uint16
	Device  uint16
	Class   uint32
}

// IsNVIDIAGPU: NVIDIA vendor, display-controller class (0x03xxxx). NVSwitches
// and bridges with NVIDIA's vendor id have other classes.
func (d PCIDevice) IsNVIDIAGPU() bool { return d.Vendor == 0x10de && d.Class>>16 == 0x03 }

// IsAMDGPU: AMD/ATI vendor with a display class (Radeon) or processing
// accelerator class 0x12xxxx (Instinct cards).
func (d PCIDevice) IsAMDGPU() bool {
	return d.Vendor == 0x1002 && (d.Class>>16 == 0x03 || d.Class>>16 == 0x12)
}

// ParsePCIHex reads a sysfs hex attribute such as "0x10de\n".
func ParsePCIHex(data []byte, bits int) (uint64, error) {
	s := strings.TrimSpace(string(data))
	t, ok := strings.CutPrefix(strings.ToLower(s), "0x")
	if !ok {
		return 0, fmt.Errorf("%q is not a 0x-prefixed hex value", truncate(s, 40))
	}
	v, err := strconv.ParseUint(t, 16, bits)
	if err != nil {
		return 0, fmt.Errorf("%q is not a %d-bit hex value", truncate(s, 40), bits)
	}
	return v, nil
}

// ScanPCI lists the PCI functions under dir (normally /sys/bus/pci/devices).
// A missing directory is not an error: containers often lack it.
func ScanPCI(dir string) ([]PCIDevice, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var out []PCIDevice
	for _, e := range entries {
		base := filepath.Join(dir, e.Name())
		var vals [3]uint64
		for i, attr := range []struct {
			name string
			bits int
		}{{"vendor", 16}, {"device", 16}, {"class", 24}} {
			path := filepath.Join(base, attr.name)
			data, err := safefile.ReadFile(context.Background(), path, safefile.LimitSysfs)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", path, err)
			}
			v, err := ParsePCIHex(data, attr.bits)
			if err != nil {
				return nil, fmt.Errorf("parse %s: %w", path, err)
			}
			vals[i] = v
		}
		out = append(out, PCIDevice{Address: e.Name(), Vendor: uint16(vals[0]), Device: uint16(vals[1]), Class: uint32(vals[2])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}
