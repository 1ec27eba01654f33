package hw

import (
	"os"
	"path/filepath"
	"testing"
)

// Every parser must return a result or an error for any input, never panic,
// and never report negative sizes.

func seedFiles(f *testing.F, glob string) {
	paths, err := filepath.Glob(glob)
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func checkGPUs(t *testing.T, gpus []GPU, err error) {
	if err != nil {
		return
	}
	for _, g := range gpus {
		if g.MemoryMiB < 0 || g.PowerLimitW < 0 || g.MaxSMClockMHz < 0 {
			t.Fatalf("negative fact in %+v", g)
		}
	}
}

func FuzzParseNvidiaSMICSV(f *testing.F) {
	seedFiles(f, "testdata/nvidia/*/query-gpu.csv")
	seedFiles(f, "testdata/nvidia-built/*/query-gpu.csv")
	f.Add([]byte("NVIDIA H100 80GB HBM3, GPU-a, 81559, 550.54.15, 00000000:18:00.0, 700.00, 1980, 0, Disabled, 0x233010DE\n"))
	f.Add([]byte("name, memory.total [MiB]\n\"NVIDIA, odd\", 5 MiB\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gpus, _, err := ParseNvidiaSMICSV(data)
		if err == nil && len(gpus) == 0 {
			t.Fatal("no error and no GPUs")
		}
		checkGPUs(t, gpus, err)
	})
}

func FuzzParseNvidiaSMIList(f *testing.F) {
	seedFiles(f, "testdata/nvidia/*/list.txt")
	seedFiles(f, "testdata/nvidia-built/*/list.txt")
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := ParseNvidiaSMIList(data)
		if err == nil && len(list) == 0 {
			t.Fatal("no error and no GPUs")
		}
	})
}

func FuzzParseAMDSMIStatic(f *testing.F) {
	seedFiles(f, "testdata/amd-smi/*.json")
	seedFiles(f, "testdata/amd-smi/*.txt")
	f.Add([]byte(`[{"gpu": 0, "vram": {"size": "256 GB"}, "limit": {"max_power": "1000 W"}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		gpus, _, err := ParseAMDSMIStatic(data)
		if err == nil && len(gpus) == 0 {
			t.Fatal("no error and no GPUs")
		}
		checkGPUs(t, gpus, err)
	})
}

func FuzzParseROCmSMI(f *testing.F) {
	seedFiles(f, "testdata/rocm-smi/*.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		gpus, _, err := ParseROCmSMI(data)
		if err == nil && len(gpus) == 0 {
			t.Fatal("no error and no GPUs")
		}
		checkGPUs(t, gpus, err)
	})
}

// FuzzKFDTopology parses two fuzzed node property files and groups them as
// ParseKFDTopology does.
func FuzzKFDTopology(f *testing.F) {
	a, err := os.ReadFile("testdata/amd/topo-mi300-cpx/topology/nodes/2/properties")
	if err != nil {
		f.Fatal(err)
	}
	b, err := os.ReadFile("testdata/amd/topo-mi300-cpx/topology/nodes/3/properties")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(a, b)
	f.Add(a, a)
	f.Add([]byte("simd_count 1\nlocation_id 18446744073709551615\n"), []byte("heap_type 1\n"))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		var nodes []KFDNode
		for i, data := range [][]byte{x, y} {
			props, err := ParseKFDProperties(data)
			if err != nil {
				return
			}
			nodes = append(nodes, KFDNode{ID: i, Props: props, MemoryBanksBytes: props["size_in_bytes"]})
		}
		gpus, _, err := kfdGPUs(nodes)
		if err != nil {
			t.Fatal(err)
		}
		if len(gpus) > 2 {
			t.Fatalf("%d GPUs from 2 nodes", len(gpus))
		}
		checkGPUs(t, gpus, nil)
	})
}

func FuzzParsePCIHex(f *testing.F) {
	f.Add([]byte("0x10de\n"))
	f.Add([]byte("0x120000\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParsePCIHex(data, 24)
		if err == nil && v >= 1<<24 {
			t.Fatalf("value %#x exceeds 24 bits", v)
		}
	})
}

func FuzzParseNvidiaSMIXML(f *testing.F) {
	seedFiles(f, "testdata/nvidia-smi-xml/*.xml")
	f.Add([]byte("<nvidia_smi_log><gpu><product_name>X</product_name></gpu></nvidia_smi_log>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gpus, _, err := ParseNvidiaSMIXML(data)
		checkGPUs(t, gpus, err)
	})
}
