package result

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rivalbench/rival/frameworks/logparse"
)

// FuzzBuild turns any log text the parsers accept, with any run facts,
// into a result or an error: never a panic. A result that builds must
// encode as JSON (no NaN or infinity can hide in it).
func FuzzBuild(f *testing.F) {
	for _, p := range []string{"../frameworks/logparse/testdata/real/megatron-2024-issue756.log", "../frameworks/logparse/testdata/real/torchtitan.log"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > 8<<10 {
			data = data[:8<<10]
		}
		f.Add(data, 8, 8192, 64, 1, "bf16", "H100 SXM", "llama")
	}
	f.Add([]byte("iteration 1/ 10 | elapsed time per iteration (ms): 1e309 | global batch size: 4 | lm loss: 1.0E+00 |\n"), 1, 1, 1, 1, "fp8", "MI300X", "qwen")
	f.Fuzz(func(t *testing.T, data []byte, gpus, seqLen, gbs, mbs int, precision, gpu, model string) {
		log, err := logparse.Parse(bytes.NewReader(data), "")
		if err != nil || log == nil {
			return
		}
		r, err := Build(log, Facts{GPUs: gpus, SeqLen: seqLen, GBS: gbs, MBS: mbs, Precision: precision, Platform: "nvd", GPUModel: gpu, Model: model})
		if err != nil {
			return
		}
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("result does not encode: %v", err)
		}
	})
}

// FuzzExtract runs the whole extract path (file, environment, parser, Build, JSON,
// schema) on any log text and any environment: a log is refused with an error or
// gives a result that encodes and validates; never a panic and never a bare JSON
// encoding error.
func FuzzExtract(f *testing.F) {
	for _, p := range []string{"../frameworks/logparse/testdata/corpus/megatron-bridge-pr841-wrapped.log", "../frameworks/logparse/testdata/real/nemo2-bionemo.log"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "8", "4096", "", "bf16", "")
	}
	f.Add([]byte(" iteration 1/ 2 | elapsed time per iteration (ms): 1e-300 | global batch size: 8 | lm loss: 1.0E+00 |\n iteration 2/ 2 | elapsed time per iteration (ms): 1e-300 | global batch size: 8 | lm loss: 1.0E+00 |\n"), "8", "4096", "", "", "")
	f.Add([]byte(" iteration 1/ 2 | elapsed time per iteration (ms): 1000 | lm loss: 1.0E+00 |\n"), "8", "8192", "9223372036854775", "fp16", "megatron")
	f.Fuzz(func(t *testing.T, data []byte, gpus, sl, gbs, precision, framework string) {
		p := filepath.Join(t.TempDir(), "train.log")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"GPUS": gpus, "SL": sl, "GBS": gbs, "PRECISION": precision, "FRAMEWORK": framework}
		r, err := Extract(p, func(k string) string { return env[k] })
		if err != nil {
			return
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("result of an accepted log does not encode: %v", err)
		}
		if err := Validate(b); err != nil {
			t.Fatalf("result of an accepted log does not match the schema: %v", err)
		}
	})
}
