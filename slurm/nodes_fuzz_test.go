package slurm

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadNodeHardware writes arbitrary tool output where a node records
// its hardware (seeded with real nvidia-smi, amd-smi and rocm-smi
// captures): every node is listed with its hostname, a parser that cannot
// read the output says so in Warnings, nothing panics.
func FuzzReadNodeHardware(f *testing.F) {
	for _, p := range []string{"../hw/testdata/nvidia/h100-sxm/query-gpu.csv", "../hw/testdata/amd-smi/mi300x-x8-wrapped.json", "../hw/testdata/rocm-smi/mi300x-x8-upper.json"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for file := uint8(0); file < 3; file++ {
			f.Add(file, data, "node-a\n")
		}
	}
	f.Add(uint8(0), []byte("index, name\n0,\n"), "")
	f.Fuzz(func(t *testing.T, file uint8, data []byte, hostname string) {
		out := t.TempDir()
		dir := filepath.Join(out, "nodes", "node-a")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		name := []string{"nvidia-smi.csv", "amd-smi-static.json", "rocm-smi.json"}[file%3]
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hostname.txt"), []byte(hostname), 0o644); err != nil {
			t.Fatal(err)
		}
		nodes, err := ReadNodeHardware(out)
		if err != nil {
			return
		}
		if len(nodes) != 1 || nodes[0].Node != "node-a" {
			t.Fatalf("want node-a listed, got %+v", nodes)
		}
	})
}
