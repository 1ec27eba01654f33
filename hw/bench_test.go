package hw

import (
	"os"
	"testing"
)

func BenchmarkParseAMDSMIStatic(b *testing.B) {
	data, err := os.ReadFile("testdata/amd-smi/mi300x-x8-wrapped.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseAMDSMIStatic(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseNvidiaSMICSV(b *testing.B) {
	data, err := os.ReadFile("testdata/nvidia/h100-sxm/query-gpu.csv")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseNvidiaSMICSV(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseKFDTopologyMI300XCPX(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseKFDTopology("testdata/amd/topo-mi300-cpx/topology"); err != nil {
			b.Fatal(err)
		}
	}
}
