package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/tasks/training"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVerifyResultsComparesInputs(t *testing.T) {
	w, _ := newWorkspace(t, "")
	a := trainOnce(t, w)
	var out bytes.Buffer
	require.NoError(t, w.VerifyResults(context.Background(), []string{a, a}, &out))
	assert.Contains(t, out.String(), "identical inputs apart from the hardware")

	// B trained on other data: a different dataset fingerprint.
	var r map[string]any
	data, err := os.ReadFile(a)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &r))
	r["dataset"].(map[string]any)["fingerprint"] = strings.Repeat("0", 64)
	b := filepath.Join(t.TempDir(), "b.json")
	data, err = json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(b, data, 0o644))
	out.Reset()
	err = w.VerifyResults(context.Background(), []string{a, b}, &out)
	require.Error(t, err)
	assert.Contains(t, out.String(), "DIFFERS")
}

// A train:cpu result is checked against what train:cpu uses: the dataset
// encoded for the proxy's full model and train:cpu's configuration (one
// process per node: DP=NNODES), also for the proxy the demo trains.
func TestVerifyResultOfTrainCPU(t *testing.T) {
	old := cpuFlagsPath
	cpuFlagsPath = filepath.Join("testdata", "cpuinfo", "no-bf16.txt")
	t.Cleanup(func() { cpuFlagsPath = old })
	for _, tc := range []struct{ name, config string }{
		{"one node", ""},
		{"two nodes", "NNODES=2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fakeHub(t, 20)
			t.Setenv("HF_ENDPOINT", s.URL())
			w, _ := newWorkspace(t, "DATASET=c4\nMODELS=qwen,mistral\nDATA_SAMPLES=20\n"+tc.config)
			plan, err := w.planTraining(hw.PlatformCPU, []string{"fsdp"}, []string{"qwen", "mistral"}, hw.Host{Platform: hw.PlatformCPU}, &scriptedExecutor{steps: 4}, false)
			require.NoError(t, err)
			require.NoError(t, w.runner.Run(context.Background(), plan.Runs...))
			require.Len(t, plan.Runs, 2)
			for _, r := range plan.Runs {
				var out bytes.Buffer
				err := w.VerifyResults(context.Background(), []string{r.Outputs[0].Path}, &out)
				assert.NoError(t, err, out.String())
				assert.Regexp(t, `(?m)^match\s+dataset\.fingerprint`, out.String())
				assert.Regexp(t, `(?m)^match\s+config_fingerprint`, out.String())
			}
		})
	}
}

// TestVerifyDemoResultUsesItsConfiguration: a result of the demo's
// two-process configuration is checked against that configuration, not
// the one-process one.
func TestVerifyDemoResultUsesItsConfiguration(t *testing.T) {
	old := cpuFlagsPath
	cpuFlagsPath = filepath.Join("testdata", "cpuinfo", "no-bf16.txt")
	t.Cleanup(func() { cpuFlagsPath = old })
	for _, v := range demoVariants {
		t.Run(v.Name, func(t *testing.T) {
			w, _ := newWorkspace(t, "")
			in := newTrainInputs(t, w, &scriptedExecutor{steps: 4})
			cfg, err := in.Config.with("demo "+v.Name, v.Values)
			require.NoError(t, err)
			cfg, err = cfg.onDemoDataset() // as the demo's runs do
			require.NoError(t, err)
			in.Config, in.Variant = cfg, v.Name
			task, err := w.trainTask(in)
			require.NoError(t, err)
			require.NoError(t, w.runner.Run(context.Background(), task))
			var out bytes.Buffer
			w.VerifyResults(context.Background(), []string{task.Outputs[0].Path}, &out) // the dataset differs from the demo's: an error
			assert.Regexp(t, `(?m)^match\s+config_fingerprint`, out.String())
		})
	}
}

// A demo result is checked against the demo's own run: its dataset under
// DATA_DIR/demo and the configuration of its variant.
func TestVerifyResultOfTheDemo(t *testing.T) {
	old := cpuFlagsPath
	cpuFlagsPath = filepath.Join("testdata", "cpuinfo", "no-bf16.txt")
	t.Cleanup(func() { cpuFlagsPath = old })
	w, _ := newWorkspace(t, "")
	in := filepath.Join(w.root, "sample.jsonl")
	var b strings.Builder
	// Enough documents that the test split (a fifth) holds the demo's held-out set: 8 × 128 + 1 tokens.
	for i := 0; i < 400; i++ {
		fmt.Fprintf(&b, `{"text":"Sample document %d, long enough to train on for a few steps."}`+"\n", i)
	}
	require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
	// The tokenizer as fetch leaves it, resolved as the demo resolves it.
	require.NoError(t, os.MkdirAll(w.path("DATA_DIR", "tokenizers", "mistral"), 0o755))
	copyFile(t, mistralTok, filepath.Join(w.path("DATA_DIR", "tokenizers", "mistral"), "tokenizer.json"))
	tok, err := w.data().ResolveTokenizer("mistral")
	require.NoError(t, err)
	et := w.data().EncodeTask(in, tok, w.demoPrefix(), 0.8, nil)
	planned, err := w.demoRuns()
	require.NoError(t, err)
	require.Len(t, planned, len(demoVariants))
	for _, r := range planned {
		t.Run(r.Variant, func(t *testing.T) {
			task, err := w.trainTask(trainInputs{Run: training.Run{Platform: r.Platform, Framework: r.Framework, Model: r.Model, Dataset: r.Dataset, Variant: r.Variant,
				TrainPrefix: r.TrainPrefix, Tokenizer: tok, Encode: et, Host: hw.Host{Platform: hw.PlatformCPU}, Executor: &scriptedExecutor{steps: 4}}, Config: r.Config})
			require.NoError(t, err)
			require.NoError(t, w.runner.Run(context.Background(), task))
			var out bytes.Buffer
			require.NoError(t, w.VerifyResults(context.Background(), []string{task.Outputs[0].Path}, &out), out.String())
			assert.Contains(t, out.String(), "verify:result: this workspace reproduces every input of")

			// The result file records what the demo trained on: the shipped
			// sample corpus, not config.env's hub dataset.
			raw, err := os.ReadFile(task.Outputs[0].Path)
			require.NoError(t, err)
			var res struct {
				Dataset    struct{ Name string }
				Provenance struct{ Config map[string]string }
			}
			require.NoError(t, json.Unmarshal(raw, &res))
			assert.Equal(t, "sample", res.Dataset.Name)
			assert.Equal(t, "sample", res.Provenance.Config["DATASET"], "provenance.config says what ran")
			assert.NotContains(t, string(raw), `"DATASET": "bc"`)
		})
	}
}
