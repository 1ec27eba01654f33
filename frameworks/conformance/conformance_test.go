package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
func batches(t *testing.T, tokDir string, vocab int) [][]int32 {
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
	x, err := gptorder.Build(ds.Lengths(), 0, ds.Sequences(), gptorder.Order{Seed: conformance.Seed, SeqLen: conformance.SeqLen, NumSamples: n, AddExtraToken: true})
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
		require.NoError(t, conformance.WriteBatches(filepath.Join(host, fam.model, "batches.i64"), batches(t, fam.tok, m.Vocab)))
		common := []string{"python3", path.Join(root, conformance.ScriptName), "", ckpt, bpath, fmt.Sprint(conformance.GBS), fmt.Sprint(conformance.Steps), fmt.Sprint(conformance.SeqLen)}
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

		mega, err := frameworks.Build(conformance.Request(hw.PlatformNVIDIA, core.Mega, fam.model))
		require.NoError(t, err)
		pf := mega.Preflight.Command
		i := indexOf(pf, "--")
		require.Positive(t, i, "mega's preflight passes Megatron's arguments after --: %v", pf)
		for n, b := range mega.Files {
			write(path.Join(fam.model, "mega", n), b)
		}
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
		for n, b := range nm.Files {
			write(path.Join(fam.model, "nemo", n), b)
		}
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
			for n, f := range nm.Files {
				write(path.Join(fam.model, "nemo-rope", n), f)
			}
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
		for n, b := range prim.Files {
			write(path.Join(fam.model, "prim", n), b)
		}
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
		for n, b := range tl.Files {
			write(path.Join(fam.model, "titan", n), b)
		}
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
	configs := map[string]conformance.Config{}
	for i, r := range runs {
		out, _ := os.ReadFile(filepath.Join(host, fmt.Sprintf("out-%d.txt", i)))
		rc, _ := os.ReadFile(filepath.Join(host, fmt.Sprintf("rc-%d.txt", i)))
		if !assert.Equal(t, "0", strings.TrimSpace(string(rc)), "%s failed:\n%s", r.name, tail(string(out), 40)) {
			continue
		}
		if strings.HasSuffix(r.name, "/prim") {
			checkPrimusPatches(t, r.name, string(out))
		}
		if c, found, err := conformance.ParseConfig(strings.Split(string(out), "\n")); assert.NoError(t, err, r.name) && found {
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
	// The frameworks on Megatron Core build their models from whole TransformerConfigs: every field
	// must be equal, or listed in megatronConfigDifferences with why the difference cannot change
	// what the model computes or how it trains.
	for _, fam := range families {
		ref, ok := configs[fam.model+"/mega"]
		if !assert.True(t, ok, "%s/mega prints its TransformerConfig", fam.model) {
			continue
		}
		for _, fw := range []string{"prim", "nemo"} {
			c, ok := configs[fam.model+"/"+fw]
			if !assert.True(t, ok, "%s/%s prints its TransformerConfig", fam.model, fw) {
				continue
			}
			n := 0
			for _, d := range conformance.CompareConfigs(ref, c) {
				if _, known := megatronConfigDifferences[fw+" "+d.Field]; known {
					n++
					continue
				}
				t.Errorf("%s: TransformerConfig.%s is %s in mega and %s in %s, and megatronConfigDifferences does not say why that cannot change the numbers", fam.model, d.Field, d.A, d.B, fw)
			}
			t.Logf("%s: %s against mega: %d TransformerConfig fields, %d differ, each for a listed reason", fam.model, fw, len(c.Fields), n)
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

// megatronConfigDifferences are the TransformerConfig fields ("<framework> <field>") whose value in
// prim's or nemo's model differs from mega's, each with why it cannot change the numbers.
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
