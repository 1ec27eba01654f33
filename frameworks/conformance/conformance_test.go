package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/container"
	"github.com/rivalbench/rival/encode"
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/conformance"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/titan"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/gptorder"
	"github.com/rivalbench/rival/hw"
	"github.com/rivalbench/rival/indexed"
	"github.com/rivalbench/rival/models"
	"github.com/rivalbench/rival/tokenizer"
)

// batches are the first Steps global batches of Rival's order (gptorder, proven equal to Megatron's
// GPTDataset order in its tests) over the sample corpus encoded with tokenizer tokDir.
func batches(t *testing.T, tokDir string, vocab, seqLen int) [][]int32 {
	t.Helper()
	tk, err := tokenizer.Load(filepath.Join("..", "..", "tokenizer", "testdata", tokDir, "tokenizer.json"))
	require.NoError(t, err)
	require.LessOrEqual(t, tk.VocabSize(), vocab, "the corpus's ids fit the model's vocabulary")
	prefix := filepath.Join(t.TempDir(), "corpus")
	_, err = encode.File(context.Background(), []string{filepath.Join("..", "..", "testdata", "sample", "corpus.jsonl")}, prefix, encode.Options{
		Encode: func(dst []int32, s string) []int32 { return tk.AppendEncode(dst, s, true) },
		EOD:    2, DType: indexed.DTypeForVocab(tk.VocabSize()),
	})
	require.NoError(t, err)
	ds, err := indexed.Open(prefix)
	require.NoError(t, err)
	defer ds.Close()
	n := int64(conformance.Steps * conformance.GBS)
	x, err := gptorder.Build(ds.Lengths(), 0, ds.Sequences(), gptorder.Order{Seed: conformance.Seed, SeqLen: seqLen, NumSamples: n, AddExtraToken: true})
	require.NoError(t, err)
	var out [][]int32
	for i := int64(0); i < n; i++ {
		s, err := x.Tokens(ds, i, nil)
		require.NoError(t, err)
		out = append(out, s)
	}
	return out
}

// run is one framework's conformance run inside the container. A mutant carries one planted drift
// and must differ from its reference from step firstStep on.
type run struct {
	name      string
	argv      []string
	reference string
	firstStep int
}

// TestFrameworksComputeTheSameNumbers: for each model family at its proxy size, the five frameworks'
// own code (fsdp's trainer; TorchTitan with Rival's train spec; Megatron Core's GPTModel from mega's
// launch arguments; the same from the arguments Primus's runtime builds out of prim's experiment
// file; Megatron-Bridge's provider, validation and scheduler from nemo's configuration) trains Steps
// steps on the CPU in fp32 from one checkpoint and the same batches; every step's loss, gradient
// norm, learning rate and per-parameter gradient norms agree within conformance.DefaultTolerance,
// and each planted drift parts from its reference at the step it first acts.
func TestFrameworksComputeTheSameNumbers(t *testing.T) {
	trees := upstreamtest.Get(t)
	e := upstreamtest.TorchEngine(t)
	const upstream, root = "/upstream", "/rival"
	host := t.TempDir()
	write := func(rel string, b []byte) {
		p := filepath.Join(host, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	// writeLaunch writes a launch's files into rel, as the run's output directory holds them.
	writeLaunch := func(rel string, l core.Launch) {
		for n, b := range l.Files {
			write(path.Join(rel, n), b)
		}
	}
	write(conformance.ScriptName, conformance.Script())
	families := []struct{ model, tok string }{{"llama-proxy", "mistral-7b-v0.1"}, {"qwen-proxy", "qwen-2.5"}, {"mistral-proxy", "mistral-7b-v0.1"}}
	var runs []run
	type pair struct{ model, a, b string }
	var pairs []pair
	for _, fam := range families {
		m, err := models.Lookup(fam.model)
		require.NoError(t, err)
		ckpt := path.Join(root, fam.model, "checkpoint")
		require.NoError(t, conformance.WriteCheckpoint(filepath.Join(host, fam.model, "checkpoint"), m, conformance.Seed))
		bpath := path.Join(root, fam.model, "batches.i64")
		sl := conformance.SeqLenOf(m)
		require.NoError(t, conformance.WriteBatches(filepath.Join(host, fam.model, "batches.i64"), sl, batches(t, fam.tok, m.Vocab, sl)))
		common := []string{"python3", path.Join(root, conformance.ScriptName), "", ckpt, bpath, fmt.Sprint(conformance.GBS), fmt.Sprint(conformance.Steps), fmt.Sprint(sl)}
		with := func(kind string, rest ...string) []string {
			a := append([]string(nil), common...)
			a[2] = kind
			return append(a, rest...)
		}

		fsdp, err := frameworks.Build(conformance.Request(hw.PlatformCPU, core.FSDP, fam.model))
		require.NoError(t, err)
		dir := path.Join(root, fam.model, "fsdp")
		write(path.Join(fam.model, "fsdp", "train.py"), fsdp.Files["train.py"])
		runs = append(runs, run{name: fam.model + "/fsdp", argv: with("fsdp", append([]string{"--", path.Join(dir, "train.py")}, fsdp.Command[2:]...)...)})
		fsdpRun := runs[len(runs)-1]
		if m.SlidingWindow > 0 {
			// The CPU launch runs the window through SDPA with a mask; GPU launches take FlexAttention
			// (auto on CUDA), whose block mask must give the same numbers.
			require.Contains(t, fsdp.Command, "--window", "the conformance's SL is past %s's window", fam.model)
			runs = append(runs, run{name: fam.model + "/fsdp-flex", argv: append(append([]string(nil), fsdpRun.argv...), "--attention", "flex")})
			pairs = append(pairs, pair{fam.model, "fsdp", "fsdp-flex"})
		}

		mega, err := frameworks.Build(conformance.Request(hw.PlatformNVIDIA, core.Mega, fam.model))
		require.NoError(t, err)
		pf := mega.Preflight.Command
		i := indexOf(pf, "--")
		require.Positive(t, i, "mega's preflight passes Megatron's arguments after --: %v", pf)
		writeLaunch(path.Join(fam.model, "mega"), mega)
		runs = append(runs, run{name: fam.model + "/mega", argv: with("megatron", append([]string{path.Join(upstream, "megatron-b0cc2706"),
			path.Join(root, fam.model, "mega", "preflight"), "--"}, pf[i+1:]...)...)})
		pairs = append(pairs, pair{fam.model, "fsdp", "mega"})
		if fam.model == "llama-proxy" {
			// Planted drifts, each of a kind the read-back of arguments missed before: the numbers
			// must part from the reference at the step the drift first acts.
			megaRun := runs[len(runs)-1]
			runs = append(runs, run{name: fam.model + "/mega with --rotary-base 10000 appended",
				argv: append(append([]string(nil), megaRun.argv...), "--rotary-base", "10000"), reference: fam.model + "/mega", firstStep: 1})
			unscaled := slices.DeleteFunc(append([]string(nil), megaRun.argv...), func(a string) bool { return a == "--use-rope-scaling" })
			require.Len(t, unscaled, len(megaRun.argv)-1, "mega's Llama launch scales its RoPE")
			runs = append(runs, run{name: fam.model + "/mega without --use-rope-scaling", argv: unscaled, reference: fam.model + "/mega", firstStep: 1})
			runs = append(runs, run{name: fam.model + "/fsdp with --beta2 0.999 appended",
				argv: append(append([]string(nil), fsdpRun.argv...), "--beta2", "0.999"), reference: fam.model + "/fsdp", firstStep: 3})
			script := strings.Replace(string(fsdp.Files["train.py"]), "inv = 1.0 / args.rope_theta ** (", "inv = 1.0 / 10000.0 ** (", 1)
			require.NotEqual(t, string(fsdp.Files["train.py"]), script, "the drift applies")
			write(path.Join(fam.model, "fsdp-rope", "train.py"), []byte(script))
			argv := append([]string(nil), fsdpRun.argv...)
			argv[indexOf(argv, path.Join(dir, "train.py"))] = path.Join(root, fam.model, "fsdp-rope", "train.py")
			runs = append(runs, run{name: fam.model + "/fsdp computing RoPE with base 10000", argv: argv, reference: fam.model + "/fsdp", firstStep: 1})
		}

		// nemo: the NVIDIA launch's Bridge configuration through Megatron-Bridge's own config classes,
		// validation, provider and scheduler, on the trees the NeMo image ships.
		nr := conformance.Request(hw.PlatformNVIDIA, core.Nemo, fam.model)
		nr.OutputDir = path.Join(root, fam.model, "nemo")
		nm, err := frameworks.Build(nr)
		require.NoError(t, err)
		writeLaunch(path.Join(fam.model, "nemo"), nm)
		nvd, err := core.PinFor(hw.PlatformNVIDIA)
		require.NoError(t, err)
		nemoTrees := []string{path.Join(upstream, "bridge-v"+nvd.Bridge), path.Join(upstream, "megatron-"+nvd.MegatronCommit[:8])}
		runs = append(runs, run{name: fam.model + "/nemo", argv: with("nemo", append(nemoTrees, nr.OutputDir)...)})
		pairs = append(pairs, pair{fam.model, "fsdp", "nemo"})
		if fam.model == "llama-proxy" {
			// Partial RoPE in Bridge's model section, a drift the argument read-back once missed.
			var doc map[string]map[string]any
			require.NoError(t, json.Unmarshal(nm.Files["rival_nemo.json"], &doc))
			doc["model"]["rotary_percent"] = 0.5
			b, err := json.Marshal(doc)
			require.NoError(t, err)
			writeLaunch(path.Join(fam.model, "nemo-rope"), nm)
			write(path.Join(fam.model, "nemo-rope", "rival_nemo.json"), b)
			runs = append(runs, run{name: fam.model + "/nemo with rotary_percent 0.5", reference: fam.model + "/nemo", firstStep: 1,
				argv: with("nemo", append(nemoTrees, path.Join(root, fam.model, "nemo-rope"))...)})
		}

		// prim: the AMD launch's experiment file and overrides through Primus's runtime, on the trees
		// the AMD image ships.
		pr := conformance.Request(hw.PlatformAMD, core.Prim, fam.model)
		pr.OutputDir = path.Join(root, fam.model, "prim")
		prim, err := frameworks.Build(pr)
		require.NoError(t, err)
		writeLaunch(path.Join(fam.model, "prim"), prim)
		amd, err := core.PinFor(hw.PlatformAMD)
		require.NoError(t, err)
		pargs := []string{path.Join(upstream, "primus-"+amd.Primus), path.Join(upstream, "megatron-"+amd.MegatronCommit[:8]),
			path.Join(pr.OutputDir, "preflight"), prim.Env["EXP"]}
		if i := indexOf(prim.Preflight.Command, "--"); i > 0 {
			pargs = append(pargs, prim.Preflight.Command[i:]...)
		}
		primEnv := []string{"env", "RIVAL_DEVICE_CAPABILITY=" + prim.Preflight.Env["RIVAL_DEVICE_CAPABILITY"]}
		runs = append(runs, run{name: fam.model + "/prim", argv: append(primEnv, with("primus", pargs...)...)})
		pairs = append(pairs, pair{fam.model, "fsdp", "prim"})
		if fam.model == "llama-proxy" {
			// An override after run_pretrain.sh on the run's command line reaches Primus's runtime
			// after the experiment file (the preflight passes it the same way:
			// TestPreflightIsTheRunsCommand), and must reach the numbers.
			require.Equal(t, -1, indexOf(pargs, "--"), "the conformance launch has no overrides of its own")
			runs = append(runs, run{name: fam.model + "/prim with --layernorm_epsilon 1.0e-6 on the run's command line", reference: fam.model + "/prim", firstStep: 1,
				argv: append(primEnv, with("primus", append(pargs[:4:4], "--", "--layernorm_epsilon", "1.0e-6")...)...)})
		}

		tl, err := frameworks.Build(conformance.Request(hw.PlatformNVIDIA, core.Titan, fam.model))
		require.NoError(t, err)
		tdir := path.Join(root, fam.model, "titan")
		writeLaunch(path.Join(fam.model, "titan"), tl)
		runs = append(runs, run{name: fam.model + "/titan", argv: with("titan", path.Join(upstream, "torchtitan-v0.2.0"), tdir, path.Join(tdir, titan.TOMLName))})
		pairs = append(pairs, pair{fam.model, "fsdp", "titan"})
	}
	var sh strings.Builder
	sh.WriteString("export RIVAL_CONFORM_THREADS=2 PYTHONDONTWRITEBYTECODE=1\n")
	for i, r := range runs {
		fmt.Fprintf(&sh, "%s > %s/out-%d.txt 2>&1; echo $? > %s/rc-%d.txt\n", shellJoin(r.argv), root, i, root, i)
	}
	write("run.sh", []byte(sh.String()))
	spec := container.RunSpec{
		Image: upstreamtest.TorchImage, RunID: fmt.Sprintf("conformance-%d", time.Now().UnixNano()),
		Cmd: []string{"bash", root + "/run.sh"}, Network: "none", Platform: container.PlatformCPU, Timeout: 40 * time.Minute,
		Mounts: []container.Mount{{Source: trees.Dir, Target: upstream, ReadOnly: true}, {Source: host, Target: root}},
	}
	// Before the test's own deadline the container is stopped, not left running.
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-20*time.Second))
		defer cancel()
	}
	var lines []string
	_, err := e.Run(ctx, spec, func(l string) { lines = append(lines, l) })
	var exit *container.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err, strings.Join(lines, "\n"))
	}
	steps := map[string][]conformance.Step{}
	configs := map[string]map[string]conformance.Config{}
	for i, r := range runs {
		out, _ := os.ReadFile(filepath.Join(host, fmt.Sprintf("out-%d.txt", i)))
		rc, _ := os.ReadFile(filepath.Join(host, fmt.Sprintf("rc-%d.txt", i)))
		if !assert.Equal(t, "0", strings.TrimSpace(string(rc)), "%s failed:\n%s", r.name, tail(string(out), 40)) {
			continue
		}
		if strings.HasSuffix(r.name, "/prim") {
			checkPrimusPatches(t, r.name, string(out))
		}
		if c, err := conformance.ParseConfigs(strings.Split(string(out), "\n")); assert.NoError(t, err, r.name) {
			configs[r.name] = c
		}
		s, err := conformance.ParseSteps(strings.Split(string(out), "\n"))
		require.NoError(t, err, r.name)
		require.Len(t, s, conformance.Steps, "%s:\n%s", r.name, tail(string(out), 20))
		steps[r.name] = s
		for _, st := range s {
			t.Logf("%s step %d: loss %.8f grad norm %.8f lr %.6g", r.name, st.Step, st.Loss, st.GradNorm, st.LR)
		}
	}
	for _, r := range runs {
		if r.reference == "" || steps[r.name] == nil || steps[r.reference] == nil {
			continue
		}
		err := conformance.Check(r.reference, steps[r.reference], r.name, steps[r.name], conformance.DefaultTolerance)
		var ce *conformance.Error
		if assert.ErrorAs(t, err, &ce, "%s: the planted drift is not seen", r.name) {
			assert.Equal(t, r.firstStep, ce.Mismatches[0].Step, "%s: parts at %s", r.name, ce.Mismatches[0])
			t.Logf("%s: caught: %v", r.name, err)
		}
	}
	// The frameworks on Megatron Core build their models, optimizers and schedules from whole
	// config objects: every field must be equal to mega's, or listed in megatronConfigDifferences
	// with why the difference cannot change what the model computes or how it trains.
	for _, fam := range families {
		for _, obj := range megatronObjects {
			ref, ok := configs[fam.model+"/mega"][obj]
			if !assert.True(t, ok, "%s/mega prints its %s", fam.model, obj) {
				continue
			}
			for _, fw := range []string{"prim", "nemo"} {
				c, ok := configs[fam.model+"/"+fw][obj]
				if !assert.True(t, ok, "%s/%s prints its %s", fam.model, fw, obj) {
					continue
				}
				n := 0
				for _, d := range conformance.CompareConfigs(ref, c) {
					if _, known := megatronConfigDifferences[differenceKey(fw, obj, d.Field)]; known {
						n++
						continue
					}
					t.Errorf("%s: %s.%s is %s in mega and %s in %s, and megatronConfigDifferences does not say why that cannot change the numbers (key %q)", fam.model, obj, d.Field, d.A, d.B, fw, differenceKey(fw, obj, d.Field))
				}
				t.Logf("%s: %s against mega: %d %s fields, %d differ, each for a listed reason", fam.model, fw, len(c.Fields), obj, n)
			}
		}
	}
	// The config objects without a counterpart in another framework (fsdp's arguments, TorchTitan's
	// model args and optimizer and schedule sections, the Bridge provider's own fields): every field
	// is accounted for in fieldAccounting, as what the numbers above compare or why it cannot change
	// them here, so a field a new release adds fails until someone has weighed it.
	seen, complete := map[string]bool{}, true
	for _, r := range runs {
		fw := r.name[strings.LastIndex(r.name, "/")+1:]
		if r.reference != "" || accountedObjects[fw] == nil {
			continue
		}
		for _, obj := range accountedObjects[fw] {
			c, ok := configs[r.name][obj]
			if !assert.True(t, ok, "%s prints its %s", r.name, obj) {
				complete = false
				continue
			}
			for _, f := range slices.Sorted(maps.Keys(c.Fields)) {
				k := accountingKey(fw, obj, f)
				seen[k] = true
				if _, ok := fieldAccounting[k]; !ok {
					t.Errorf("%s: %s.%s (%s here) is neither compared nor accounted for: weigh it and add %q to fieldAccounting", r.name, obj, f, c.Fields[f], k)
				}
			}
		}
	}
	if complete {
		for k := range fieldAccounting {
			assert.True(t, seen[k], "fieldAccounting lists %q, which no run printed: drop it", k)
		}
	}
	for _, p := range pairs {
		a, b := steps[p.model+"/"+p.a], steps[p.model+"/"+p.b]
		if a == nil || b == nil {
			continue
		}
		// Both report the model they built, so Check compares the layouts too.
		assert.NotEmpty(t, a[0].Layout, "%s/%s reports its model's layout", p.model, p.a)
		assert.NotEmpty(t, b[0].Layout, "%s/%s reports its model's layout", p.model, p.b)
		assert.NoError(t, conformance.Check(p.model+"/"+p.a, a, p.model+"/"+p.b, b, conformance.DefaultTolerance))
		worst := map[string]float64{}
		ms, _ := conformance.Compare(a, b, conformance.Tolerance{})
		for _, m := range ms {
			q := m.Quantity
			if strings.HasPrefix(q, "grad ") {
				q = "grad"
			}
			worst[q] = max(worst[q], m.Rel)
		}
		t.Logf("%s: %s against %s: the same %d parameters; largest relative difference %v", p.model, p.b, p.a, len(b[0].Layout), worst)
	}
}

// primusPatches are the patches Primus's runtime applies to the conformance launches, each with
// why it cannot change a dense model's numbers. The prim runner builds the model from a clean import
// of Megatron after the runtime, so a patch that acts on the model or its training must not pass
// unseen: one missing here fails the test, naming it.
var primusPatches = map[string]string{
	"megatron.args.add_megatron_arguments_compat":              "adds argument names Primus's configs use",
	"megatron.args.checkpoint_path":                            "checkpoint folders",
	"megatron.args.data_path_split":                            "splits data path strings into lists",
	"megatron.args.iterations_to_skip_default":                 "a default for a list argument",
	"megatron.args.logging_level":                              "logging",
	"megatron.args.mock_data":                                  "clears the data paths when mock_data is set; the preflight refuses mock_data",
	"megatron.args.moe_layer_freq":                             "MoE layers only",
	"megatron.args.sequence_parallel_tp1":                      "sequence parallelism at TP 1 only",
	"megatron.args.tensorboard_path":                           "TensorBoard folder",
	"megatron.args.wandb_config":                               "Weights & Biases settings",
	"megatron.moe.primus_topk_router":                          "MoE router only",
	"megatron.moe.permute_fusion":                              "MoE token permutation only",
	"megatron.env.cuda_device_max_connections":                 "an environment variable for stream scheduling",
	"megatron.tokenizer.build_tokenizer_override":              "the tokenizer (the batches are token ids)",
	"megatron.runtime.skip_compile_dependencies":               "skips compiling Megatron's C++ helpers at start-up",
	"megatron.training.training.get_model.disable_second_ddp":  "the DDP wrapper's construction stream",
	"megatron.patch.filesystem_writer_async":                   "checkpoint writing",
	"megatron.checkpoint.save_checkpoint":                      "checkpoint writing",
	"megatron.optimizer.muon":                                  "dispatches to Muon only when the optimizer's name contains muon",
	"megatron.core.transformer.pipeline_parallel_layer_layout": "pipeline stage layouts (PP 1 here)",
	"megatron.te.delayed_scaling_reduce_amax":                  "FP8 scaling only",
	"megatron.torch_profiler":                                  "the profiler",
	"megatron.training_log.unified_patch":                      "log lines",
}

// megatronObjects are the config objects the runners on Megatron Core print and the test compares.
var megatronObjects = []string{conformance.TransformerConfig, "OptimizerConfig", "OptimizerParamScheduler"}

// differenceKey is a megatronConfigDifferences key: "<framework> <field>" for TransformerConfig,
// "<framework> <object>.<field>" for the others.
func differenceKey(fw, obj, field string) string {
	if obj == conformance.TransformerConfig {
		return fw + " " + field
	}
	return fw + " " + obj + "." + field
}

// accountedObjects are the config objects of each framework that fieldAccounting covers field by
// field ("fsdp-flex" is fsdp run with --attention flex).
var accountedObjects = map[string][]string{
	"fsdp":      {"train.py arguments"},
	"fsdp-flex": {"train.py arguments"},
	"titan":     {"model args", "job.optimizer", "job.lr_scheduler"},
	"nemo":      {"provider"},
}

func accountingKey(fw, obj, field string) string {
	return strings.TrimSuffix(fw, "-flex") + " " + obj + "." + field
}

// megatronConfigDifferences are the config fields (differenceKey) whose value in prim's or nemo's
// run differs from mega's, each with why it cannot change the numbers.
var megatronConfigDifferences = map[string]string{
	// Primus hands Megatron its YAML string, which matches no AttnBackend member: Megatron then sets
	// none of Transformer Engine's backend switches. prim's launch sets them as Megatron does for
	// auto (prim.NVTEBackend), and the preflight reads the backend back from them (knob
	// attention_backend). The local layer spec here reads neither.
	"prim attention_backend":           "a string, not AttnBackend.auto; the NVTE_* switches decide, set and read back",
	"prim cross_entropy_fusion_impl":   "the fused cross-entropy kernel's choice; cross_entropy_loss_fusion is off in every launch (knob cross_entropy_fusion)",
	"prim fp8_amax_compute_algo":       "FP8 is off here; FP8 launches set algo max in all three (mega's --fp8-amax-compute-algo, Primus's trainer_base.yaml, Bridge's mixed_precision)",
	"prim fp8_amax_history_len":        "FP8 is off here; FP8 launches set history 1024 in all three",
	"prim moe_token_dispatcher_type":   "MoE only; a launch that builds experts is refused",
	"nemo fp8_recipe":                  "FP8 is off here; FP8 launches set the delayed recipe in all three (effective fp8_recipe)",
	"nemo cp_comm_type":                "context-parallel communication; every launch runs context-parallel size 1 (equal in all three)",
	"nemo inference_sampling_seed":     "inference sampling only",
	"nemo num_layers_at_start_in_bf16": "read only with first_last_layers_bf16, off in all three (equal)",
	"nemo num_layers_at_end_in_bf16":   "read only with first_last_layers_bf16, off in all three (equal)",
	// The conformance builds all three from Megatron's local layer spec: mega's and prim's runner set
	// transformer_impl local, nemo's hands Bridge's local_layer_spec to the provider, which keeps the
	// field's default; the field chooses the spec and nothing else in a dense model.
	"nemo transformer_impl": "chooses the layer spec, which the conformance fixes to the local one",
	// The optimizer configs: mega's and prim's as Megatron's training builds them from the arguments
	// (get_megatron_optimizer_config), nemo's Bridge's own.
	"prim OptimizerConfig.muon_momentum":                        "Muon only; every launch trains Adam",
	"nemo OptimizerConfig.muon_momentum":                        "Muon only; every launch trains Adam",
	"nemo OptimizerConfig.barrier_with_L1_time":                 "a barrier before the optimizer's timers: timing, not values",
	"nemo OptimizerConfig.fp8_recipe":                           "read by the distributed optimizer for FP8 (Float8Tensor) parameters only; FP8 parameter all-gathers are off in every launch",
	"nemo OptimizerConfig.optimizer_offload_fraction":           "read only with optimizer_cpu_offload, off in all three (equal)",
	"nemo OptimizerConfig.overlap_param_gather":                 "overlaps the distributed optimizer's all-gather with compute: when, not what; every launch turns it on through core.Fairness (nemo in its DDP config)",
	"prim OptimizerParamScheduler.override_opt_param_scheduler": "which schedule wins when a checkpoint is loaded (Primus's pre_trainer.yaml sets it); runs start without one",
}

func checkPrimusPatches(t *testing.T, name, out string) {
	t.Helper()
	const prefix = "preflight primus patches: "
	for _, l := range strings.Split(out, "\n") {
		j, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		var phases map[string][]string
		require.NoError(t, json.Unmarshal([]byte(j), &phases), "%s: %s", name, l)
		for phase, ids := range phases {
			for _, id := range ids {
				_, known := primusPatches[id]
				assert.True(t, known, "%s: Primus applies patch %s (%s phase), which the conformance has not weighed: read it, and list it in primusPatches if it cannot change a dense model's numbers", name, id, phase)
			}
		}
		return
	}
	t.Errorf("%s: no %q line: Primus's runtime did not report its patches", name, prefix)
}

func indexOf(s []string, x string) int {
	for i, v := range s {
		if v == x {
			return i
		}
	}
	return -1
}

func shellJoin(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// fieldAccounting is every field of the objects in accountedObjects ("<framework> <object>.<field>"):
// "numbers" where the field acts in the conformance workload, so a drift shows in the losses,
// gradients or rates compared above; otherwise why it cannot change the numbers of a Rival run, or
// where it is checked instead.
var fieldAccounting = map[string]string{
	"fsdp train.py arguments.adam_eps":                        "numbers: AdamW's ε",
	"fsdp train.py arguments.attention":                       "numbers: the attention kernel (sdpa here; flex in the fsdp-flex run); the math is the same, compared",
	"fsdp train.py arguments.beta1":                           "numbers: AdamW's β1",
	"fsdp train.py arguments.beta2":                           "numbers: AdamW's β2 (the planted --beta2 drift)",
	"fsdp train.py arguments.check":                           "the read-back mode: the run stops after building, so it trains nothing",
	"fsdp train.py arguments.compile":                         "torch.compile of the same model: kernels, not arithmetic",
	"fsdp train.py arguments.data_prefix":                     "where the dataset lies; the batches are compared by the sample digests of every run",
	"fsdp train.py arguments.dump_count":                      "writes samples to a file for the order tests; off in runs",
	"fsdp train.py arguments.dump_samples":                    "writes samples to a file for the order tests; off in runs",
	"fsdp train.py arguments.dump_world":                      "writes samples to a file for the order tests; off in runs",
	"fsdp train.py arguments.ffn":                             "numbers: the MLP width (in the layout)",
	"fsdp train.py arguments.gqa_native":                      "numbers: the kernel's native grouped-query path (SDPA's or FlexAttention's enable_gqa) against K/V repeated per group: the same attention",
	"fsdp train.py arguments.grad_accum":                      "gradient accumulation: the conformance feeds a global batch as one micro-batch; GBS is read back",
	"fsdp train.py arguments.heads":                           "numbers: query heads (in the layout and the attention)",
	"fsdp train.py arguments.hidden":                          "numbers: the hidden size (in the layout)",
	"fsdp train.py arguments.init_std":                        "the init std: the conformance loads a checkpoint; the init is read back per parameter",
	"fsdp train.py arguments.kv_heads":                        "numbers: key/value heads (in the layout)",
	"fsdp train.py arguments.layers":                          "numbers: the depth (in the layout)",
	"fsdp train.py arguments.log_interval":                    "how often a line is logged",
	"fsdp train.py arguments.lr":                              "numbers: the peak rate (the lr compared every step)",
	"fsdp train.py arguments.micro_batch":                     "the micro-batch size: the conformance feeds a global batch as one; MBS is read back",
	"fsdp train.py arguments.min_lr":                          "numbers: the rate the cosine ends at (step 6)",
	"fsdp train.py arguments.norm_eps":                        "numbers: RMSNorm's ε",
	"fsdp train.py arguments.nproc_per_node":                  "the process count torchrun starts; GBS and world size are read back",
	"fsdp train.py arguments.order_dir":                       "where the sample order lies; the batches are compared by the sample digests",
	"fsdp train.py arguments.precision":                       "fp32 here for every framework; the run's precision is read back",
	"fsdp train.py arguments.qkv_bias":                        "numbers: Qwen's q, k and v biases (in the layout)",
	"fsdp train.py arguments.rope_scaling_factor":             "numbers: Llama 3.1's RoPE scaling",
	"fsdp train.py arguments.rope_scaling_high_freq_factor":   "numbers: Llama 3.1's RoPE scaling",
	"fsdp train.py arguments.rope_scaling_low_freq_factor":    "numbers: Llama 3.1's RoPE scaling",
	"fsdp train.py arguments.rope_scaling_original_positions": "numbers: Llama 3.1's RoPE scaling",
	"fsdp train.py arguments.rope_theta":                      "numbers: the RoPE base (the planted base-10000 drift)",
	"fsdp train.py arguments.seed":                            "the init and data seed: the conformance loads a checkpoint and feeds Rival's batches; read back",
	"fsdp train.py arguments.seq_len":                         "numbers: the sequence length (the batches' shape)",
	"fsdp train.py arguments.threads":                         "CPU threads: scheduling, not arithmetic",
	"fsdp train.py arguments.tie_embeddings":                  "numbers: tied input and output embeddings (in the layout)",
	"fsdp train.py arguments.torch_version":                   "the torch version train.py found, recorded",
	"fsdp train.py arguments.train_iters":                     "numbers: where the cosine ends",
	"fsdp train.py arguments.vocab":                           "numbers: the vocabulary (in the layout)",
	"fsdp train.py arguments.warmup_steps":                    "numbers: the warm-up (the lr compared every step)",
	"fsdp train.py arguments.weight_decay":                    "numbers: AdamW's decay",
	"fsdp train.py arguments.window":                          "numbers: Mistral's sliding window (SL 1024 here, past the proxy's 512)",
	"nemo provider._pg_collection":                            "the process groups the model is built on (one process here); parallel sizes are read back",
	"nemo provider.fp16_lm_cross_entropy":                     "numbers: the output's cross-entropy in fp16 when set; False here, as mega's GPTModel argument",
	"nemo provider.generation_config":                         "Hugging Face generation settings, for inference",
	"nemo provider.hf_model_id":                               "the Hugging Face repository a conversion reads; none here",
	"nemo provider.high_freq_factor":                          "numbers: Llama 3.1's RoPE scaling (Llama31ModelProvider)",
	"nemo provider.low_freq_factor":                           "numbers: Llama 3.1's RoPE scaling (Llama31ModelProvider)",
	"nemo provider.make_vocab_size_divisible_by":              "vocabulary padding, which Bridge's setup applies from the tokenizer; here the checkpoint's vocabulary (a stand-in), read back in runs",
	"nemo provider.mtp_enabled":                               "multi-token prediction, off in every launch",
	"nemo provider.old_context_len":                           "numbers: Llama 3.1's RoPE scaling: its original positions (Llama31ModelProvider)",
	"nemo provider.parallel_output":                           "whether the logits stay split over tensor-parallel ranks (TP 1 here); the loss is the same",
	"nemo provider.position_embedding_type":                   "numbers: RoPE",
	"nemo provider.restore_modelopt_state":                    "Model Optimizer checkpoints, for quantisation; off",
	"nemo provider.rotary_base":                               "numbers: the RoPE base",
	"nemo provider.rotary_percent":                            "numbers: the share of each head RoPE turns (the planted 0.5 drift)",
	"nemo provider.scale_factor":                              "numbers: Llama 3.1's RoPE scaling factor (Llama31ModelProvider)",
	"nemo provider.scatter_embedding_sequence_parallel":       "scatters the embedding over sequence-parallel ranks (TP 1 here): where activations lie, not their values",
	"nemo provider.seq_len_interpolation_factor":              "numbers: RoPE position interpolation when set; None here, as mega",
	"nemo provider.seq_length":                                "GPTModel's max_sequence_length, read by learned absolute position embeddings only (RoPE here); the run's sequence length is read back",
	"nemo provider.share_embeddings_and_output_weights":       "numbers: tied embeddings (in the layout)",
	"nemo provider.should_pad_vocab":                          "vocabulary padding from the tokenizer; off here for the checkpoint's vocabulary (a stand-in)",
	"nemo provider.tp_comm_overlap_cfg":                       "tensor-parallel communication overlap (Transformer Engine userbuffers); none",
	"nemo provider.transformer_layer_spec":                    "the layer spec, which the conformance fixes to Bridge's local one",
	"nemo provider.use_arbitrary_attention_mask":              "lets a caller pass its own masks; None here as in runs (causal)",
	"nemo provider.use_transformer_engine_full_layer_spec":    "Transformer Engine's full layer spec; off",
	"nemo provider.use_transformer_engine_op_fuser":           "read only by Bridge's Transformer Engine layer spec; the local spec here, and every launch sets it false",
	"nemo provider.vocab_size":                                "numbers: the vocabulary (in the layout)",
	"titan job.lr_scheduler.decay_ratio":                      "numbers: unset here, so Rival's spec runs Megatron's schedule; set, TorchTitan's own, whose rates the read-back compares",
	"titan job.lr_scheduler.decay_type":                       "numbers: cosine",
	"titan job.lr_scheduler.min_lr_factor":                    "numbers: the rate the cosine ends at",
	"titan job.lr_scheduler.warmup_steps":                     "numbers: the warm-up",
	"titan job.optimizer.beta1":                               "numbers: AdamW's β1",
	"titan job.optimizer.beta2":                               "numbers: AdamW's β2",
	"titan job.optimizer.early_step_in_backward":              "refused by Rival's optimizer builder when on",
	"titan job.optimizer.eps":                                 "numbers: AdamW's ε",
	"titan job.optimizer.implementation":                      "numbers: torch's fused AdamW here (the same update as for-loop and foreach)",
	"titan job.optimizer.lr":                                  "numbers: the peak rate",
	"titan job.optimizer.name":                                "numbers: AdamW (Rival's builder refuses any other)",
	"titan job.optimizer.weight_decay":                        "numbers: AdamW's decay (Megatron's groups)",
	"titan model args._enforced":                              "TorchTitan's marker that every field has a default; read by nothing",
	"titan model args.attn_mask_type":                         "numbers: causal; block_causal would split documents, read back as reset_attention_mask",
	"titan model args.depth_init":                             "TorchTitan's own init by depth, replaced by Rival's Megatron init; the conformance loads a checkpoint",
	"titan model args.dim":                                    "numbers: the hidden size (in the layout)",
	"titan model args.eos_id":                                 "read by nothing in TorchTitan's Llama (its document mask takes the tokenizer's eos_id); causal here and in every launch",
	"titan model args.ffn_dim_multiplier":                     "numbers: with multiple_of, the MLP width (in the layout)",
	"titan model args.max_seq_len":                            "numbers: the positions the RoPE table covers (update_from_config: SL)",
	"titan model args.multiple_of":                            "numbers: with ffn_dim_multiplier, the MLP width (in the layout)",
	"titan model args.n_heads":                                "numbers: query heads (in the layout)",
	"titan model args.n_kv_heads":                             "numbers: key/value heads (in the layout)",
	"titan model args.n_layers":                               "numbers: the depth (in the layout)",
	"titan model args.norm_eps":                               "numbers: RMSNorm's ε",
	"titan model args.rope_scaling_args":                      "numbers: Llama 3 RoPE scaling (factor 1, the identity, for Qwen and Mistral)",
	"titan model args.rope_theta":                             "numbers: the RoPE base",
	"titan model args.use_flex_attn":                          "numbers: FlexAttention, on for Mistral past its window: the window's mask",
	"titan model args.vocab_size":                             "numbers: the vocabulary (in the layout)",
}
