package tasks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/fsdp"
	"github.com/rivalbench/rival/hw"
)

// The fair configuration is validated once: config.env's loader, the framework registry and the fsdp
// trainer's launch builder refuse a bad value with the same message (core.CheckFair), and the loader
// refuses it when config.env is read, before any run is planned.
func TestFairRulesOneValidator(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		edit func(f *core.Fair, fc *fsdp.Config)
		want string
	}{
		{"MIN_LR above LR", map[string]string{"LR": "0.0003", "MIN_LR": "0.01"},
			func(f *core.Fair, fc *fsdp.Config) { f.MinLR, fc.MinLR = 0.01, 0.01 }, "MIN_LR 0.01 must lie in [0, LR 0.0003]"},
		{"warm-up past training", map[string]string{"TRAIN_ITERS": "100", "WARMUP_STEPS": "200"},
			func(f *core.Fair, fc *fsdp.Config) {
				f.TrainIters, f.WarmupSteps, fc.TrainIters, fc.WarmupSteps = 100, 200, 100, 200
			},
			"WARMUP_STEPS 200 must lie in [0, TRAIN_ITERS 100]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadConfig("", "", envFrom(c.env))
			require.Error(t, err, "config.env is refused when read")
			assert.Contains(t, err.Error(), c.want)

			f := core.Fair{Seed: 42, MBS: 1, SL: 512, GA: 1, TP: 1, PP: 1, TrainIters: 500, WarmupSteps: 50,
				LR: 3e-4, MinLR: 3e-5, WeightDecay: 0.1, Beta1: 0.9, Beta2: 0.95, Precision: "fp32"}
			fc := fsdp.Config{ScriptPath: "/r/train.py", DataPrefix: "/d/x", OrderDir: "/d", Layers: 2, Hidden: 64, FFN: 128, Heads: 4,
				KVHeads: 4, Vocab: 256, RopeTheta: 10000, SeqLen: 64, MicroBatch: 1, GradAccum: 1, TrainIters: 500,
				LR: 3e-4, MinLR: 3e-5, WarmupSteps: 50, Beta1: 0.9, Beta2: 0.95, Seed: 42, NProcPerNode: 1}
			c.edit(&f, &fc)
			_, err = frameworks.Build(core.Request{Platform: hw.PlatformCPU, Framework: "fsdp", Model: "llama-proxy",
				Fair: f, Host: hw.Host{Platform: hw.PlatformCPU}, DataPrefix: "/d/x", OutputDir: "/r"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want, "the registry gives the same message")
			_, err = fsdp.BuildLaunch(fc)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want, "the fsdp trainer's launch builder gives the same message")
		})
	}
}
