package slurm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/safefile"
)

// NodeHardware is what the per-node step (Job.NodeHardware) recorded on one node.
type NodeHardware struct {
	Node     string   // Slurm's node name
	Hostname string   // the node's own hostname
	Tool     string   // "nvidia-smi", "amd-smi", "rocm-smi", or "" when the node had none
	GPUs     []hw.GPU // parsed with the hw package's parsers
	Warnings []string // what a parser could not read; the raw files stay under the node's directory
}

// ReadNodeHardware reads OutputDir/nodes/<node>/ for every node that recorded itself, sorted by
// node name. A node whose tool output does not parse keeps its hostname and says why in Warnings.
func ReadNodeHardware(outputDir string) ([]NodeHardware, error) {
	root := filepath.Join(outputDir, "nodes")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("slurm: read node hardware: %w", err)
	}
	var nodes []NodeHardware
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		host, err := safefile.ReadFile(context.Background(), filepath.Join(dir, "hostname.txt"), safefile.LimitNodeFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the node did not finish recording
		}
		if err != nil {
			return nil, fmt.Errorf("slurm: read node hardware: %w", err)
		}
		n := NodeHardware{Node: e.Name(), Hostname: strings.TrimSpace(string(host))}
		for _, src := range []struct {
			tool, file string
			parse      func([]byte) ([]hw.GPU, []string, error)
		}{
			{"nvidia-smi", "nvidia-smi.csv", hw.ParseNvidiaSMICSV},
			{"amd-smi", "amd-smi-static.json", hw.ParseAMDSMIStatic},
			{"rocm-smi", "rocm-smi.json", hw.ParseROCmSMI},
		} {
			data, err := safefile.ReadFile(context.Background(), filepath.Join(dir, src.file), safefile.LimitNodeFile)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("slurm: read node hardware: %w", err)
			}
			gpus, warns, err := src.parse(data)
			n.Warnings = append(n.Warnings, warns...)
			if err != nil {
				n.Warnings = append(n.Warnings, fmt.Sprintf("%s: %v", filepath.Join(dir, src.file), err))
				continue
			}
			n.Tool, n.GPUs = src.tool, gpus
			break
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, k int) bool { return nodes[i].Node < nodes[k].Node })
	return nodes, nil
}

// NodeImageID reads the image ID each docker-mode node recorded (NodeImageIDName) and returns the one
// they all ran, or "" when no node recorded one. Nodes that ran different images are an error naming
// each node's ID: the run mixed builds and its result would not say what ran.
func NodeImageID(outputDir string) (string, error) {
	root := filepath.Join(outputDir, "nodes")
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("slurm: read the nodes' image IDs: %w", err)
	}
	ids := map[string][]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(root, e.Name(), NodeImageIDName)
		data, err := safefile.ReadFile(context.Background(), path, safefile.LimitNodeFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("slurm: read the nodes' image IDs: %w", err)
		}
		id := strings.TrimSpace(string(data))
		if !strings.HasPrefix(id, "sha256:") || strings.ContainsAny(id, " \n") {
			return "", fmt.Errorf("slurm: %s holds %q, not an image ID (sha256:...)", path, id)
		}
		ids[id] = append(ids[id], e.Name())
	}
	if len(ids) > 1 {
		var parts []string
		for id, nodes := range ids {
			parts = append(parts, fmt.Sprintf("%s on %s", id, strings.Join(nodes, ", ")))
		}
		sort.Strings(parts)
		return "", fmt.Errorf("slurm: the nodes ran different images (%s): make every node's daemon hold the same build, or push it with `go run mage.go image:push PLATFORM REGISTRY/REPOSITORY[:TAG]` so that every node pulls one digest", strings.Join(parts, "; "))
	}
	for id := range ids {
		return id, nil
	}
	return "", nil
}
