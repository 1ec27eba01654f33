package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
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
	"github.com/rivalbench/rival/frameworks"
	"github.com/rivalbench/rival/frameworks/conformance"
	"github.com/rivalbench/rival/frameworks/core"
	"github.com/rivalbench/rival/frameworks/upstreamtest"
	"github.com/rivalbench/rival/models"
)

// run is a planted drift: a run like its reference but for one change, which must part from the
// reference at the step the drift first acts.
type drift struct {
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
// and each planted drift parts from its reference at the step it first acts. The plan, its script
// and the report are rival-conform's (cmd/rival-conform), run here in the torch image.
func TestFrameworksComputeTheSameNumbers(t *testing.T) {
	trees := upstreamtest.Get(t)
	e := upstreamtest.TorchEngine(t)
	const upstream, root = "/upstream", "/rival"
	host := t.TempDir()
	p, err := conformance.Prepare(context.Background(), conformance.Options{Build: frameworks.Build, Dir: host, Root: root, Upstream: upstream, Repo: filepath.Join("..", ".."),
		Stacks: core.StackNames})
	require.NoError(t, err)
	want := 0
	for _, fam := range conformance.Families {
		want += 1 + 4*len(core.StackNames) // fsdp, then mega, nemo, prim and titan on each stack
		if m, _ := models.Lookup(fam.Model); m.SlidingWindow > 0 {
			want++ // fsdp-flex
		}
	}
	require.Len(t, p.Runs, want, "five frameworks per family on each stack, and fsdp's flex path where a window acts")

	// Planted drifts, each of a kind the read-back of arguments missed before: the numbers must
	// part from the reference at the step the drift first acts.
	const fam = "llama-proxy"
	var drifts []drift
	mega, fsdp, nemo, prim := p.Find(fam+"/mega"), p.Find(fam+"/fsdp"), p.Find(fam+"/nemo"), p.Find(fam+"/prim")
	require.NotNil(t, mega)
	drifts = append(drifts, drift{name: fam + "/mega with --rotary-base 10000 appended",
		argv: append(slices.Clone(mega.Argv), "--rotary-base", "10000"), reference: mega.Name, firstStep: 1})
	unscaled := slices.DeleteFunc(slices.Clone(mega.Argv), func(a string) bool { return a == "--use-rope-scaling" })
	require.Len(t, unscaled, len(mega.Argv)-1, "mega's Llama launch scales its RoPE")
	drifts = append(drifts, drift{name: fam + "/mega without --use-rope-scaling", argv: unscaled, reference: mega.Name, firstStep: 1})
	drifts = append(drifts, drift{name: fam + "/fsdp with --beta2 0.999 appended",
		argv: append(slices.Clone(fsdp.Argv), "--beta2", "0.999"), reference: fsdp.Name, firstStep: 3})
	trainPy := p.Launches[fsdp.Name].Files["train.py"]
	script := strings.Replace(string(trainPy), "inv = 1.0 / args.rope_theta ** (", "inv = 1.0 / 10000.0 ** (", 1)
	require.NotEqual(t, string(trainPy), script, "the drift applies")
	require.NoError(t, p.Write(path.Join(fam, "fsdp-rope", "train.py"), []byte(script)))
	argv := slices.Clone(fsdp.Argv)
	argv[indexOf(argv, p.In(path.Join(fam, "fsdp", "train.py")))] = p.In(path.Join(fam, "fsdp-rope", "train.py"))
	drifts = append(drifts, drift{name: fam + "/fsdp computing RoPE with base 10000", argv: argv, reference: fsdp.Name, firstStep: 1})
	// Partial RoPE in Bridge's model section, a drift the argument read-back once missed.
	nl := p.Launches[nemo.Name]
	var doc map[string]map[string]any
	require.NoError(t, json.Unmarshal(nl.Files["rival_nemo.json"], &doc))
	doc["model"]["rotary_percent"] = 0.5
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NoError(t, p.WriteLaunch(path.Join(fam, "nemo-rope"), nl))
	require.NoError(t, p.Write(path.Join(fam, "nemo-rope", "rival_nemo.json"), b))
	argv = slices.Clone(nemo.Argv)
	require.Equal(t, p.In(path.Join(fam, "nemo")), argv[len(argv)-1], "nemo's runner takes the launch's folder last")
	argv[len(argv)-1] = p.In(path.Join(fam, "nemo-rope"))
	drifts = append(drifts, drift{name: fam + "/nemo with rotary_percent 0.5", argv: argv, reference: nemo.Name, firstStep: 1})
	// An override after run_pretrain.sh on the run's command line reaches Primus's runtime after the
	// experiment file (the preflight passes it the same way: TestPreflightIsTheRunsCommand), and must
	// reach the numbers.
	require.Equal(t, -1, indexOf(prim.Argv, "--"), "the conformance launch has no overrides of its own")
	drifts = append(drifts, drift{name: fam + "/prim with --layernorm_epsilon 1.0e-6 on the run's command line", reference: prim.Name, firstStep: 1,
		argv: append(slices.Clone(prim.Argv), "--", "--layernorm_epsilon", "1.0e-6")})
	for _, d := range drifts {
		ref := p.Find(d.reference)
		p.Runs = append(p.Runs, conformance.Run{Name: d.name, Kind: conformance.KindConform, Framework: ref.Framework, Model: ref.Model,
			Argv: d.argv, Env: ref.Env, Reference: d.reference, FirstStep: d.firstStep})
	}
	require.NoError(t, p.WriteScript())

	spec := container.RunSpec{
		Image: upstreamtest.TorchImage, RunID: fmt.Sprintf("conformance-%d", time.Now().UnixNano()),
		Cmd: []string{"bash", root + "/" + conformance.ScriptFile}, Network: "none", Platform: container.PlatformCPU, Timeout: 40 * time.Minute,
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
	_, err = e.Run(ctx, spec, func(l string) { lines = append(lines, l) })
	var exit *container.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err, strings.Join(lines, "\n"))
	}
	rep, err := conformance.Collect(host)
	require.NoError(t, err)
	require.NoError(t, rep.Write(host))
	for _, l := range rep.Summary() {
		t.Log(l)
	}
	steps := map[string][]conformance.Step{}
	configs := map[string]map[string]conformance.Config{}
	for _, r := range rep.Runs {
		if !assert.Empty(t, r.Error, "%s:\n%s", r.Name, r.Tail) {
			continue
		}
		if strings.HasSuffix(r.Name, "/prim") {
			out, _ := os.ReadFile(filepath.Join(host, conformance.OutDir, fmt.Sprintf("%d.txt", indexOfRun(p, r.Name))))
			checkPrimusPatches(t, r.Name, string(out))
		}
		steps[r.Name], configs[r.Name] = r.Steps, r.Configs
		for _, st := range r.Steps {
			t.Logf("%s step %d: loss %.8f grad norm %.8f lr %.6g", r.Name, st.Step, st.Loss, st.GradNorm, st.LR)
		}
	}
	for _, d := range drifts {
		if steps[d.name] == nil || steps[d.reference] == nil {
			continue
		}
		err := conformance.Check(d.reference, steps[d.reference], d.name, steps[d.name], conformance.DefaultTolerance)
		var ce *conformance.Error
		if assert.ErrorAs(t, err, &ce, "%s: the planted drift is not seen", d.name) {
			assert.Equal(t, d.firstStep, ce.Mismatches[0].Step, "%s: parts at %s", d.name, ce.Mismatches[0])
			t.Logf("%s: caught: %v", d.name, err)
		}
	}
	// The frameworks on Megatron Core build their models, optimizers and schedules from whole
	// config objects: on each stack, every field of prim's and nemo's must be equal to that stack's
	// mega's, or listed in megatronConfigDifferences with why the difference cannot change what the
	// model computes or how it trains; a listed difference no comparison needs fails too.
	used, compared := map[string]bool{}, true
	for _, st := range core.StackNames {
		pre := ""
		if st != core.StackCurrent {
			pre = st + "/"
		}
		for _, fam := range conformance.Families {
			for _, obj := range megatronObjects {
				ref, ok := configs[fam.Model+"/"+pre+"mega"][obj]
				if !assert.True(t, ok, "%s/%smega prints its %s", fam.Model, pre, obj) {
					compared = false
					continue
				}
				for _, fw := range []string{"prim", "nemo"} {
					run := fam.Model + "/" + pre + fw
					c, ok := configs[run][obj]
					if !assert.True(t, ok, "%s prints its %s", run, obj) {
						compared = false
						continue
					}
					n := 0
					for _, d := range conformance.CompareConfigs(ref, c) {
						if k, known := megatronDifference(st, fw, obj, d.Field); known {
							used[k] = true
							n++
							continue
						}
						t.Errorf("%s: %s.%s is %s in %smega and %s in %s, and megatronConfigDifferences does not say why that cannot change the numbers (key %q, or %q for the %s stack only)",
							fam.Model, obj, d.Field, d.A, pre, d.B, run, differenceKey("", fw, obj, d.Field), differenceKey(st, fw, obj, d.Field), st)
					}
					t.Logf("%s: against %smega: %d %s fields, %d differ, each for a listed reason", run, pre, len(c.Fields), obj, n)
				}
			}
		}
	}
	if compared {
		for k := range megatronConfigDifferences {
			assert.True(t, used[k], "megatronConfigDifferences lists %q, which no comparison needs: drop it", k)
		}
	}
	// The config objects without a counterpart in another framework (fsdp's arguments, TorchTitan's
	// model args and optimizer and schedule sections, the Bridge provider's own fields): every field
	// is accounted for in fieldAccounting, as what the numbers above compare or why it cannot change
	// them here, so a field a new release adds fails until someone has weighed it.
	seen, complete := map[string]bool{}, true
	for _, r := range p.Runs {
		fw := r.Name[strings.LastIndex(r.Name, "/")+1:]
		if r.Reference != "" || accountedObjects[fw] == nil {
			continue
		}
		for _, obj := range accountedObjects[fw] {
			c, ok := configs[r.Name][obj]
			if !assert.True(t, ok, "%s prints its %s", r.Name, obj) {
				complete = false
				continue
			}
			for _, f := range slices.Sorted(maps.Keys(c.Fields)) {
				k := accountingKey(fw, obj, f)
				seen[k] = true
				if _, ok := fieldAccounting[k]; !ok {
					t.Errorf("%s: %s.%s (%s here) is neither compared nor accounted for: weigh it and add %q to fieldAccounting", r.Name, obj, f, c.Fields[f], k)
				}
			}
		}
	}
	if complete {
		for k := range fieldAccounting {
			assert.True(t, seen[k], "fieldAccounting lists %q, which no run printed: drop it", k)
		}
	}
	// Every pair of the plan agrees, and both report the model they built, so the layouts were
	// compared too.
	require.Len(t, rep.Pairs, len(p.Pairs))
	for _, pr := range rep.Pairs {
		if assert.True(t, pr.OK, "%s: %s against %s: %s %v", pr.Model, pr.B, pr.A, pr.Error, pr.Mismatches) {
			assert.Positive(t, pr.Layout, "%s/%s and %s report their models' layouts", pr.Model, pr.A, pr.B)
		}
	}
	assert.Zero(t, rep.Failed, "the report counts no failure")
}

func indexOfRun(p *conformance.Plan, name string) int {
	for i, r := range p.Runs {
		if r.Name == name {
			return i
		}
	}
	return -1
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
	// Primus v26.5.1's.
	"megatron.args.hsdp":                             "maps data_parallel_replicate_degree to distributed-optimizer instances for HSDP; 1 here, nothing mapped",
	"megatron.validate_args":                         "wraps validate_args with Primus's ROCm checks, which the runtime ran: what they set is in the arguments the model is built from",
	"megatron.training.skip_redundant_mp_sync":       "replaces two all-reduces over a size-1 model-parallel group (TP 1, PP 1) in the training loop's bookkeeping with pass-throughs: the same values",
	"megatron.patch.apply_factory_merges_tolerant":   "checkpoint loading (PEFT factories)",
	"megatron.patch.load_checkpoint_distributed_fix": "checkpoint loading",
	"megatron.emerging_optimizers.log_level":         "a logger's level",
	"megatron.fused_pad_routing_map":                 "the MoE routing map's padding kernel",
	"megatron.moe.skip_identity_sort":                "MoE token dispatch only",
	"megatron.training.pp_warmup.wrap_train":         "a fake forward and backward before training only with pp_warmup, off (Primus's default)",
	"megatron.te.general_gemm_workspace_helper":      "Transformer Engine's GEMM workspace buffer; the local spec here uses none",
	"megatron_bridge.training_log.forward_to_rank0":  "log lines",
	"megatron.triton.silence_autotune_print":         "Triton's autotuner printing",
}

// megatronObjects are the config objects the runners on Megatron Core print and the test compares.
var megatronObjects = []string{conformance.TransformerConfig, "OptimizerConfig", "OptimizerParamScheduler"}

// differenceKey is a megatronConfigDifferences key: "<framework> <field>" for TransformerConfig,
// "<framework> <object>.<field>" for the others, on every stack; prefixed "<stack>: " for a
// difference of that stack only (a field one Megatron-LM commit has and the other lacks).
func differenceKey(stack, fw, obj, field string) string {
	k := fw + " " + field
	if obj != conformance.TransformerConfig {
		k = fw + " " + obj + "." + field
	}
	if stack != "" {
		k = stack + ": " + k
	}
	return k
}

// megatronDifference is the key under which megatronConfigDifferences explains a difference on
// stack: the stack's own, else the one for every stack.
func megatronDifference(stack, fw, obj, field string) (string, bool) {
	for _, k := range []string{differenceKey(stack, fw, obj, field), differenceKey("", fw, obj, field)} {
		if _, ok := megatronConfigDifferences[k]; ok {
			return k, true
		}
	}
	return "", false
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
	// Primus v26.2 hands Megatron its YAML string, which matches no AttnBackend member: Megatron then
	// sets none of Transformer Engine's backend switches. prim's launch sets them as Megatron does
	// for auto (prim.NVTEBackend), and the preflight reads the backend back from them (knob
	// attention_backend). The local layer spec here reads neither. Primus v26.5.1 hands the member.
	"previous: prim attention_backend": "a string, not AttnBackend.auto; the NVTE_* switches decide, set and read back",
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
	"prim OptimizerConfig.muon_momentum":              "Muon only; every launch trains Adam",
	"nemo OptimizerConfig.muon_momentum":              "Muon only; every launch trains Adam",
	"nemo OptimizerConfig.barrier_with_L1_time":       "a barrier before the optimizer's timers: timing, not values",
	"nemo OptimizerConfig.fp8_recipe":                 "read by the distributed optimizer for FP8 (Float8Tensor) parameters only; FP8 parameter all-gathers are off in every launch",
	"nemo OptimizerConfig.optimizer_offload_fraction": "read only with optimizer_cpu_offload, off in all three (equal)",
	// Bridge 0.3 leaves the optimizer's flag at its default and sets the DDP config's; Bridge 0.5's
	// validation syncs the two, so on the current stack they agree.
	"previous: nemo OptimizerConfig.overlap_param_gather":       "overlaps the distributed optimizer's all-gather with compute: when, not what; every launch turns it on through core.Fairness (nemo in its DDP config)",
	"prim OptimizerParamScheduler.override_opt_param_scheduler": "which schedule wins when a checkpoint is loaded (Primus's pre_trainer.yaml sets it); runs start without one",

	// The current stack builds mega on Megatron-LM d0b3b775 (Core 0.18, the NeMo image's) and prim on
	// d3528a21 (Core 0.16.0rc0, the Primus image's): fields one commit has and the other lacks, and
	// defaults that moved between them. Each is weighed: it acts on a feature off in every
	// conformance launch (MoE, FP8, CUDA graphs, offloading, inference, other optimizers), or its
	// value computes what the other commit computes without it. "absent" marks the side without it.
	"current: prim cpu_offloading_retain_pinned_cpu_buffers":             "Core 0.18 only: pinned host buffers for activation CPU offloading, which is off (cpu_offloading equal, False)",
	"current: prim cuda_graph_modules":                                   "Core 0.18 only: what a CUDA graph captures; cuda_graph_impl is none in both (equal)",
	"current: prim cuda_graph_scope":                                     "the CUDA graph scope, [] in 0.16 and None in 0.18, both nothing captured; cuda_graph_impl is none in both (equal)",
	"current: prim cuda_graph_use_single_mempool":                        "a default that moved (0.16 False, 0.18 True), read only for local full-iteration CUDA graphs; cuda_graph_impl is none in both",
	"current: prim fine_grained_offloading_max_inflight_offloads":        "Core 0.18 only: fine-grained activation offloading, off (fine_grained_activation_offloading equal, False)",
	"current: prim fp8_output_proj":                                      "Core 0.18 only: FP8 for the attention's output projection; FP8 is off here (fp8 equal, None)",
	"current: prim fused_residual_rmsnorm":                               "Core 0.18 only: fuses the residual add into RMSNorm's backward under Transformer Engine; False, so the add and the norm stay apart, as 0.16 computes them",
	"current: prim high_priority_a2a_comm_stream":                        "Core 0.18 only: the stream priority of MoE all-to-all communication; no experts here",
	"current: prim inference_cuda_graph_scope":                           "Core 0.18 only: inference",
	"current: prim inference_disable_torch_grouped_mm":                   "Core 0.16 only: inference",
	"current: prim inference_grouped_gemm_backend":                       "Core 0.18 only: inference",
	"current: prim inference_moe_disable_fused_quant_kernels":            "Core 0.18 only: inference, MoE",
	"current: prim inference_moe_token_dispatcher_type":                  "Core 0.18 only: inference, MoE",
	"current: prim mlp_chunks_for_training":                              "Core 0.18 only: the MLP computed in this many chunks along the sequence; 1, the whole sequence at once, as 0.16 computes it",
	"current: prim moe_expert_rank_capacity_factor":                      "Core 0.18 only: MoE; a launch that builds experts is refused",
	"current: prim moe_hybridep_num_blocks_permute":                      "Core 0.18 only: MoE (HybridEP dispatcher)",
	"current: prim moe_hybridep_num_blocks_unpermute":                    "Core 0.18 only: MoE (HybridEP dispatcher)",
	"current: prim moe_hybridep_num_sms":                                 "MoE (HybridEP dispatcher): its default moved (0.16 16, 0.18 None); a launch that builds experts is refused",
	"current: prim moe_hybridep_num_sms_preprocessing":                   "Core 0.18 only: MoE (HybridEP dispatcher)",
	"current: prim moe_mlp_glu_interleave_size":                          "Core 0.18 only: MoE experts' GLU layout",
	"current: prim moe_paged_stash":                                      "Core 0.18 only: the MoE paged stash of expert activations (rival_conform.py stands in triton for its module); False, and no experts here",
	"current: prim moe_paged_stash_buffer_size_factor_cpu":               "Core 0.18 only: read only with moe_paged_stash, False",
	"current: prim moe_paged_stash_buffer_size_factor_cuda":              "Core 0.18 only: read only with moe_paged_stash, False",
	"current: prim moe_paged_stash_page_size":                            "Core 0.18 only: read only with moe_paged_stash, False",
	"current: prim moe_permute_fusion_into_hybridep":                     "Core 0.18 only: MoE (HybridEP dispatcher)",
	"current: prim moe_router_force_biased":                              "Core 0.18 only: MoE router",
	"current: prim moe_single_grouped_bias":                              "Core 0.18 only: MoE experts' weight layout",
	"current: prim moe_single_grouped_weight":                            "Core 0.18 only: MoE experts' weight layout",
	"current: prim overlap_dispatch_backward_with_experts_wgrad":         "Core 0.18 only: MoE dispatch overlap",
	"current: prim use_grouped_gemm_for_dense_mlp":                       "Core 0.18 only: the dense MLP through Transformer Engine's GroupedLinear (its op fuser, MXFP8); False, the plain linear layers as in 0.16",
	"current: prim use_transformer_engine_op_fuser":                      "Core 0.18 only (Bridge's provider held it before): Transformer Engine's op fuser, read by its layer specs only; False, and the local spec here",
	"current: prim OptimizerConfig.adaptive_muon_beta2":                  "Core 0.18 only: adaptive Muon; every launch trains Adam",
	"current: prim OptimizerConfig.adaptive_muon_eps":                    "Core 0.18 only: adaptive Muon; every launch trains Adam",
	"current: prim OptimizerConfig.adaptive_muon_moment2_method":         "Core 0.18 only: adaptive Muon; every launch trains Adam",
	"current: prim OptimizerConfig.grad_norm_skip_threshold":             "Core 0.18 only: skips a step whose gradient norm exceeds it; inf, never, as 0.16, which has no skip",
	"current: prim OptimizerConfig.lion_beta1":                           "Core 0.18 only: Lion; every launch trains Adam",
	"current: prim OptimizerConfig.lion_beta2":                           "Core 0.18 only: Lion; every launch trains Adam",
	"current: prim OptimizerConfig.muon_coefficient_type":                "Core 0.18 only: Muon; every launch trains Adam",
	"current: prim OptimizerConfig.muon_nesterov":                        "Core 0.18's name for 0.16's muon_use_nesterov: Muon; every launch trains Adam",
	"current: prim OptimizerConfig.muon_scalar_optimizer":                "Core 0.18 only: Muon; every launch trains Adam",
	"current: prim OptimizerConfig.muon_use_nesterov":                    "Core 0.16 only (0.18: muon_nesterov): Muon; every launch trains Adam",
	"current: prim OptimizerConfig.optimizer_cuda_graph":                 "Core 0.18 only: a CUDA graph of the optimizer step; False, and graphs are off",
	"current: prim OptimizerConfig.soap_precondition_frequency":          "Core 0.18 only: SOAP; every launch trains Adam",
	"current: prim OptimizerConfig.soap_shampoo_beta":                    "Core 0.18 only: SOAP; every launch trains Adam",
	"current: prim OptimizerConfig.soap_use_kl_shampoo":                  "Core 0.18 only: SOAP; every launch trains Adam",
	"current: prim OptimizerConfig.use_layer_wise_distributed_optimizer": "Core 0.18 only: the layer-wise distributed optimizer for Muon-like optimizers; False for Adam, whose distributed optimizer (use_distributed_optimizer) is equal",
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
	"fsdp train.py arguments.eval_interval":                   "held-out evaluation between iterations, in eval mode without gradients: it changes no training number (off here; TestTrainEvaluatesHeldOut runs it)",
	"fsdp train.py arguments.eval_prefix":                     "the held-out set Rival writes, read only by the evaluation (off here)",
	"fsdp train.py arguments.eval_samples":                    "how many held-out sequences the evaluation reads (off here)",
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
	"nemo provider.dense_grouped_gemm":                        "Bridge 0.5: handed to Transformer Engine's layer spec only; the local spec here, and False",
	"nemo provider.rope_scaling":                              "numbers: Llama 3.1's RoPE scaling on Bridge 0.5's GPTModelProvider (Megatron's rope_scaling, as mega's --use-rope-scaling); off for Qwen and Mistral",
	"nemo provider.rope_scaling_factor":                       "numbers: Llama 3.1's RoPE scaling factor (read with rope_scaling)",
	"nemo provider.rotary_scaling_factor":                     "Bridge 0.5: read by the MLA and YaRN model providers, not by GPTModelProvider's provide(); None",
	"nemo provider.yarn_beta_fast":                            "Bridge 0.5: YaRN, read only with position_embedding_type yarn (rope here, accounted above)",
	"nemo provider.yarn_beta_slow":                            "Bridge 0.5: YaRN, read only with position_embedding_type yarn",
	"nemo provider.yarn_correction_range_round_to_int":        "Bridge 0.5: YaRN, read only with position_embedding_type yarn",
	"nemo provider.yarn_mscale":                               "Bridge 0.5: YaRN, read only with position_embedding_type yarn",
	"nemo provider.yarn_mscale_all_dim":                       "Bridge 0.5: YaRN, read only with position_embedding_type yarn",
	"nemo provider.yarn_original_max_position_embeddings":     "Bridge 0.5: YaRN, read only with position_embedding_type yarn",
	"nemo provider.yarn_rotary_scaling_factor":                "Bridge 0.5: YaRN, read only with position_embedding_type yarn",
	"titan job.lr_scheduler.total_steps":                      "v0.2.2: the steps TorchTitan's own schedule spans when set; None in every launch, so it spans training.steps as Rival's spec's schedule does (the lr compared every step)",
	"titan model args.attn_type":                              "numbers: the attention (v0.2.2's successor of use_flex_attn): sdpa, or flex for Mistral past its window, the window's mask",
	"nemo provider._pg_collection":                            "the process groups the model is built on (one process here); parallel sizes are read back",
	"nemo provider.fp16_lm_cross_entropy":                     "numbers: the output's cross-entropy in fp16 when set; False here, as mega's GPTModel argument",
	"nemo provider.generation_config":                         "Hugging Face generation settings, for inference",
	"nemo provider.hf_model_id":                               "the Hugging Face repository a conversion reads; none here",
	"nemo provider.high_freq_factor":                          "numbers: Llama 3.1's RoPE scaling (Bridge 0.3's Llama31ModelProvider; 0.5 scales on GPTModelProvider: rope_scaling)",
	"nemo provider.low_freq_factor":                           "numbers: Llama 3.1's RoPE scaling (Bridge 0.3's Llama31ModelProvider; 0.5 scales on GPTModelProvider: rope_scaling)",
	"nemo provider.make_vocab_size_divisible_by":              "vocabulary padding, which Bridge's setup applies from the tokenizer; here the checkpoint's vocabulary (a stand-in), read back in runs",
	"nemo provider.mtp_enabled":                               "multi-token prediction, off in every launch",
	"nemo provider.old_context_len":                           "numbers: Llama 3.1's RoPE scaling: its original positions (Bridge 0.3's Llama31ModelProvider; 0.5 scales on GPTModelProvider: rope_scaling)",
	"nemo provider.parallel_output":                           "whether the logits stay split over tensor-parallel ranks (TP 1 here); the loss is the same",
	"nemo provider.position_embedding_type":                   "numbers: RoPE",
	"nemo provider.restore_modelopt_state":                    "Model Optimizer checkpoints, for quantisation; off",
	"nemo provider.rotary_base":                               "numbers: the RoPE base",
	"nemo provider.rotary_percent":                            "numbers: the share of each head RoPE turns (the planted 0.5 drift)",
	"nemo provider.scale_factor":                              "numbers: Llama 3.1's RoPE scaling factor (Bridge 0.3's Llama31ModelProvider; 0.5 scales on GPTModelProvider: rope_scaling)",
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
	"titan model args.use_flex_attn":                          "numbers: FlexAttention (v0.2.0; v0.2.2: attn_type), on for Mistral past its window: the window's mask",
	"titan model args.vocab_size":                             "numbers: the vocabulary (in the layout)",
}

// TestPlannedTrainingRunReportsItsSteps: the training runs a GPU plan adds (rival-conform -gpu)
// start the launch as planned and the report reads their steps from the run's own log. On the CPU
// in the torch image, briefly (2 steps at SL 256): fsdp's run only, as TorchTitan's trainer asks for
// a GPU.
func TestPlannedTrainingRunReportsItsSteps(t *testing.T) {
	e := upstreamtest.TorchEngine(t)
	host := t.TempDir()
	p, err := conformance.Prepare(context.Background(), conformance.Options{Build: frameworks.Build, Dir: host, Upstream: "/upstream", Repo: filepath.Join("..", ".."),
		Families: []conformance.Family{{Model: "mistral-proxy", Tokenizer: "mistral-7b-v0.1"}}, TrainSteps: 2, TrainSeqLen: 256})
	require.NoError(t, err)
	var names []string
	for _, r := range p.Runs {
		if r.Kind == conformance.KindTrain {
			names = append(names, r.Name)
		}
	}
	require.Equal(t, []string{"mistral-proxy/fsdp training", "mistral-proxy/titan training"}, names)
	p.Runs = slices.DeleteFunc(p.Runs, func(r conformance.Run) bool { return r.Name != "mistral-proxy/fsdp training" })
	p.Pairs = nil
	require.NoError(t, p.WriteScript())
	lines := runScript(t, e, host, 10*time.Minute)
	assert.Contains(t, lines, "conformance: [1/1] mistral-proxy/fsdp training", "run.sh says what it starts")
	rep, err := conformance.Collect(host)
	require.NoError(t, err)
	require.Len(t, rep.Runs, 1)
	r := rep.Runs[0]
	require.Empty(t, r.Error, r.Tail)
	require.Len(t, r.Train, 2, "two steps, read from the run's log")
	for _, s := range r.Train {
		require.NotNil(t, s.Loss)
		assert.InDelta(t, 10.4, *s.Loss, 0.5, "step %d: about ln(32000) from Megatron's init", s.Step)
		assert.NotNil(t, s.StepTimeSeconds)
	}
	summary := strings.Join(rep.Summary(), "\n")
	assert.Contains(t, summary, "mistral-proxy/fsdp training: 2 steps, loss")
	assert.Contains(t, summary, "conformance: all agree")
	t.Log(summary)
}

// TestBF16OnTheCPU: the bf16 path a GPU plan takes (rival-conform -gpu: bf16 copies of fp32 master
// weights, Megatron's bf16 switches) agrees across the five frameworks within BF16Tolerance, and is
// bf16: fsdp's step-1 loss parts from the same run's in fp32 by more than fp32's rounding and less
// than bf16's tolerance. Llama 3.1's proxy only, on the CPU in the torch image.
func TestBF16OnTheCPU(t *testing.T) {
	trees := upstreamtest.Get(t)
	e := upstreamtest.TorchEngine(t)
	host := t.TempDir()
	p, err := conformance.Prepare(context.Background(), conformance.Options{Build: frameworks.Build, Dir: host, Upstream: trees.Dir, Repo: filepath.Join("..", ".."),
		DType: conformance.BF16, Families: conformance.Families[:1]})
	require.NoError(t, err)
	fsdp := *p.Find("llama-proxy/fsdp")
	fsdp.Name, fsdp.Reference = "llama-proxy/fsdp in fp32", ""
	fsdp.Env = map[string]string{"RIVAL_CONFORM_DTYPE": conformance.FP32}
	p.Runs = append(p.Runs, fsdp)
	require.NoError(t, p.WriteScript())
	runScript(t, e, host, 20*time.Minute, container.Mount{Source: trees.Dir, Target: trees.Dir, ReadOnly: true})
	rep, err := conformance.Collect(host)
	require.NoError(t, err)
	for _, l := range rep.Summary() {
		t.Log(l)
	}
	require.Zero(t, rep.Failed, strings.Join(rep.Summary(), "\n"))
	require.Len(t, rep.Pairs, 4)
	assert.Equal(t, conformance.BF16, rep.DType)
	var bf, fp float64
	for _, r := range rep.Runs {
		switch r.Name {
		case "llama-proxy/fsdp":
			bf = r.Steps[0].Loss
		case "llama-proxy/fsdp in fp32":
			fp = r.Steps[0].Loss
		}
	}
	d := math.Abs(bf-fp) / fp
	t.Logf("fsdp's step-1 loss: %.8f in bf16, %.8f in fp32 (relative %.2g)", bf, fp, d)
	assert.Greater(t, d, conformance.DefaultTolerance.Loss, "the bf16 run computes in bf16")
	assert.Less(t, d, conformance.BF16Tolerance.Loss)
}

// runScript runs the plan written in host (its run.sh) in the torch image, with host mounted at
// its own path (the plan's paths are the host's) and the extra mounts, and returns what it printed.
func runScript(t *testing.T, e *container.Engine, host string, timeout time.Duration, mounts ...container.Mount) []string {
	t.Helper()
	spec := container.RunSpec{
		Image: upstreamtest.TorchImage, RunID: fmt.Sprintf("conformance-%d", time.Now().UnixNano()),
		Cmd: []string{"bash", filepath.Join(host, conformance.ScriptFile)}, Network: "none", Platform: container.PlatformCPU, Timeout: timeout,
		Mounts: append([]container.Mount{{Source: host, Target: host}}, mounts...),
	}
	var lines []string
	_, err := e.Run(context.Background(), spec, func(l string) { lines = append(lines, l) })
	require.NoError(t, err, strings.Join(lines, "\n"))
	return lines
}
