package compare

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

func fuzzSeed(f *testing.F, name string) []byte {
	data, err := os.ReadFile(filepath.Join("testdata/results", name))
	if err != nil {
		f.Fatal(err)
	}
	return data
}

// FuzzAnalyzeReport runs any result file that parses through Analyze and
// the Markdown and console writers, alone and beside a golden result:
// an error, never a panic.
func FuzzAnalyzeReport(f *testing.F) {
	for _, name := range []string{"nvd_nemo_llama_0.json", "train_amd_prim_mistral.json", "nvd_nemo_llama_nan_tps.json"} {
		f.Add(name, fuzzSeed(f, name))
	}
	f.Add("x.json", []byte(`{"platform":"nvd","framework":"nemo","model":"llama","performance_metrics":{"tokens_per_second_per_gpu":1e308},"step_times":[1e-300,0,-1]}`))
	base := fuzzSeed(f, "amd_primus_qwen.json")
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		in, _ := Parse(name, data)
		if in == nil {
			return
		}
		other, _ := Parse("amd_primus_qwen.json", base)
		for _, set := range [][]Input{{*in}, {*in, *other}} {
			rep, err := Analyze(set, DefaultPrices())
			if err != nil {
				continue
			}
			if err := rep.WriteMarkdown(io.Discard); err != nil {
				continue
			}
			rep.Console(io.Discard)
		}
	})
}
