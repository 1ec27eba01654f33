#!/usr/bin/env python3
"""titan's preflight: what TorchTitan builds from the exact job config Rival writes, read back from
TorchTitan's own objects, without GPUs.

    rival_titan_check.py nvd TORCHTITAN_TREES EXT_DIR WORLD_SIZE TOML [-- OVERRIDES...]
    rival_titan_check.py amd TORCHTITAN_TREES EXT_DIR WORLD_SIZE EXP_YAML PRIMUS_TREES [-- OVERRIDES...]

OVERRIDES are what the run's command passes after its job config (TorchTitan's command-line
overrides, or run_pretrain.sh's arguments, Primus's), parsed as the launcher parses them.

TREES are ':'-separated candidates (environment variables expanded); the first that holds the
package is used, else the installed one. EXT_DIR holds rival_titan.py and rival_titan.json.

nvd: TorchTitan's ConfigManager().parse_args(["--job.config_file", TOML]), as `torchrun -m
torchtitan.train` runs it. amd: Primus's start-up path, PrimusRuntime's own steps up to the
trainer's init (the experiment's "pre_trainer" module, the TorchTitan adapter and backend path, its
TorchTitanJobConfigBuilder over TorchTitan's JobConfig defaults, the build_args and setup patch
phases, so Primus's TorchTitan patches apply as in the run), then build_job_config_from_namespace as
TorchTitanPretrainTrainer.init does; the "preflight ran:" line names the patches applied
(primus_patches) and those that failed (primus_patches_failed). Then, as TorchTitan's
Trainer does: import experimental.custom_import (Rival's extension), get_train_spec(model.name), the
flavour's model args and update_from_config, the model built on the meta device under
training.dtype, init_weights (with torch.nn.init's calls recorded: that is the init each parameter
gets), the optimizers through the spec's build_optimizers_fn and the LR schedule through its
build_lr_schedulers_fn, and the mixed precision TorchTitan applies (FSDP's param dtype when FSDP
shards, else maybe_enable_amp's choice). It prints the effective configuration as one line
"preflight effective: {json}" (frameworks/effective).

Then it reads the first samples as the trainer will: one dataloader per rank of TorchTitan's "dp"
mesh (dp_replicate × dp_shard of the ParallelDims above) through the spec's build_dataloader_fn,
global_batch_size / (local_batch_size × DP) micro-batches from each rank per global batch, micro-batch
step by step and rank by rank, each sample as its SL inputs and last label. For the first
n = min(8, training.steps) × GBS samples it prints 'preflight samples: {"samples": n, "sha256": hex}'
(SHA-256 over each sample's SL + 1 little-endian int64 token ids), which Rival compares with its
digest of the order it wrote (docs/sample-order.md); nothing when the files the extension's
dataloader reads (rival_titan.input_files) are not there. When rival_titan.json names a held-out
set, it builds TorchTitan's validator per rank through the spec's build_validator_fn, reads two
evaluations from it, requires them equal and prints 'preflight held-out: {"samples": n, "sha256": hex}'
(read_held_out). Last "preflight ok: ...". On failure it
exits 1 with "preflight failed: STAGE: ERROR".

Needs real torch (>= 2.5) and numpy; a package TorchTitan imports that is not installed (tyro,
torchdata, tensorboard, ... on a plain torch image) is stood in (../facts/pystubs.py when shipped
beside this file), nothing that is installed.
"""
import contextlib
import dataclasses
import importlib
import importlib.util
import io
import json
import math
import os
import sys
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = "preflight effective: "
SAMPLES = "preflight samples: "
HELD_OUT = "preflight held-out: "

# Packages TorchTitan (and Primus's config code) import at module level that a CPU torch image may lack.
OPTIONAL = ("tyro", "torchdata", "tensorboard", "torchao", "tokenizers", "datasets", "safetensors",
            "huggingface_hub", "tiktoken", "blobfile", "sentencepiece", "wandb", "einops", "transformers",
            "torchft", "torchcomms", "triton", "fsspec", "primus_turbo", "aiter", "loguru", "yaml")


def fail(stage, exc):
    msg = " ".join(m.strip() for m in "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines())
    tb = traceback.extract_tb(exc.__traceback__)
    if tb:
        last = tb[-1]
        msg += " (at %s:%d: %s)" % (os.path.basename(last.filename), last.lineno, (last.line or "").strip())
    sys.stderr.write("preflight failed: %s: %s\n" % (stage, msg))
    sys.exit(1)


def resolve(candidates, marker):
    """The first candidate tree holding marker; None when none does (the installed package is used)."""
    for c in (candidates or "").split(":"):
        c = os.path.expandvars(c)
        if c and "$" not in c and os.path.exists(os.path.join(c, marker)):
            return c
    return None


# Names TorchTitan imports from torch that older torch releases (a CPU image's) lack; each missing
# one becomes a stand-in class (a function that refuses to run for the lower-case ones), in a
# stand-in module where torch lacks the module too (torch.nn.attention.varlen, imported by v0.2.2).
# They serve checkpointing, context parallelism, DualPipeV and varlen attention: none of them builds
# the model, its init, optimizer or schedule.
TORCH_NAMES = (
    ("torch.distributed.checkpoint", "HuggingFaceStorageReader"),
    ("torch.nn.attention.flex_attention", "AuxOutput"),
    ("torch.distributed.pipelining.schedules", "ScheduleDualPipeV"),
    # v0.2.2
    ("torch.nn.attention.varlen", "varlen_attn"),
    ("torch.distributed.pipelining.schedules", "OVERLAP_F_B"),
    ("torch.distributed.pipelining.schedules", "_PipelineContext"),
    ("torch.distributed.pipelining.schedules", "_wait_batch_p2p"),
    ("torch.distributed.tensor.experimental._attention", "_ContextParallel"),
    ("torch.distributed.tensor.experimental._attention", "_HeadTailLoadBalancer"),
    ("torch.distributed.tensor.experimental._attention", "_PTRRLoadBalancer"),
    ("torch.distributed.tensor.experimental._attention", "_context_parallel_shard"),
    ("torch.distributed.tensor.experimental._attention", "_enable_context_parallel_dispatcher"),
)


# Operators and higher-order ops TorchTitan names at import (v0.2.2's activation-checkpointing save
# list) that an older torch lacks: a stand-in operator (defined, never run) or object stands in.
TORCH_OPS = (("torch_attn", "_varlen_attn"),)
TORCH_HOPS = ("inductor_compiled_code",)
_STAND_IN_LIBS = []


def stand_in_ops():
    import torch
    missing = ()
    for ns, op in TORCH_OPS:
        if not hasattr(getattr(torch.ops, ns), op):
            lib = torch.library.Library(ns, "FRAGMENT")
            lib.define(op + "(Tensor x) -> Tensor")
            _STAND_IN_LIBS.append(lib)
            missing += ("torch.ops.%s.%s" % (ns, op),)
    for name in TORCH_HOPS:
        if not hasattr(torch._higher_order_ops, name):
            setattr(torch._higher_order_ops, name, type(name, (), {})())
            missing += ("torch._higher_order_ops." + name,)
    return missing


def torch_module(name):
    """torch's module name, or an empty stand-in registered under it when this torch lacks it."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        parent, _, leaf = name.rpartition(".")
        m = types.ModuleType(name)
        sys.modules[name] = m
        setattr(torch_module(parent), leaf, m)
        return m


# Inductor options TorchTitan's import-time torch.compile calls pass that this torch does not know.
DROPPED_COMPILE_OPTIONS = set()


def drop_unknown_compile_options():
    """An older torch's torch.compile refuses inductor options later releases added (v0.2.2's
    attention wrappers pass wrap_inductor_compiled_regions when their module is imported); the
    preflight never calls a compiled function, so such options are dropped and the ran line names them."""
    import torch
    try:
        known = set(torch._inductor.config.get_config_copy())
    except Exception:  # noqa: BLE001  (a torch without that config takes the options as they are)
        return
    original = torch.compile
    if getattr(original, "rival_drops_options", False):
        return

    def compile(model=None, *args, options=None, **kwargs):
        if options:
            DROPPED_COMPILE_OPTIONS.update(o for o in options if o not in known)
            options = {o: v for o, v in options.items() if o in known}
        return original(model, *args, options=options, **kwargs)

    compile.rival_drops_options = True
    torch.compile = compile


def stand_in_missing():
    """Stand-ins for the optional packages that cannot be imported here, and only those."""
    drop_unknown_compile_options()
    missing = tuple(n for n in OPTIONAL if importlib.util.find_spec(n) is None) + stand_in_ops()
    for mod, name in TORCH_NAMES:
        m = torch_module(mod)
        if not hasattr(m, name):
            if name.lstrip("_")[0].islower():
                def refuse(*a, _name="%s.%s" % (mod, name), **k):
                    raise NotImplementedError("%s is a stand-in: this torch does not have it" % _name)
                setattr(m, name, refuse)
            else:
                setattr(m, name, type(name, (), {"__init__": lambda self, *a, **k: None}))
            missing += ("%s.%s" % (mod, name),)
    if not any("." not in n for n in missing):
        return missing
    sys.path.insert(0, HERE)
    import pystubs
    pystubs.STUBBED = tuple(n for n in missing if "." not in n)
    pystubs.install()
    if "tyro" in missing:
        # ConfigManager runs tyro.cli(JobConfig, args, default=<the TOML's config>): with no
        # command-line overrides besides --job.config_file that returns the default.
        def cli(cls, args=None, default=None, **_):
            extra = [a for a in (args or []) if a not in ("--job.config_file", "--job.config-file") and not a.endswith(".toml")]
            if extra:
                raise SystemExit("tyro is not installed: cannot parse %s" % extra)
            return default if default is not None else cls()
        importlib.import_module("tyro").cli = cli
    if "tensorboard" in missing:
        # torch.utils.tensorboard needs tensorboard and protobuf; the metrics logger is all that uses it.
        sys.modules["torch.utils.tensorboard"] = pystubs.module("torch.utils.tensorboard")
        missing += ("torch.utils.tensorboard",)
    if "torchdata" in missing:
        # torchdata's StatefulDataLoader is a torch DataLoader with state_dict(): TorchTitan's
        # ParallelAwareDataloader subclasses it, so the stand-in is the real base class.
        import torch.utils.data
        importlib.import_module("torchdata.stateful_dataloader").StatefulDataLoader = torch.utils.data.DataLoader
    return missing


# --- the job config, as each platform's launcher builds it -------------------------------------------

def job_config_nvd(toml, overrides):
    from torchtitan.config.manager import ConfigManager
    return ConfigManager().parse_args(["--job.config_file", toml] + overrides)


def job_config_amd(exp, backend_path, overrides):
    """The job config Primus's runtime hands TorchTitan's Trainer: PrimusRuntime's own steps up to the
    trainer's init (configuration, backend adapter and path, the adapter's TorchTitan args with the
    build_args patches, the trainer object, the setup patches), without its environment, distributed
    and logging setup; then build_job_config_from_namespace as TorchTitanPretrainTrainer.init does."""
    import logging
    import types
    lg = importlib.import_module("primus.core.utils.logger")
    if getattr(lg, "_logger", None) is None:
        # Primus's runtime sets its loguru logger up first; its config code and patches only log through it.
        lg._logger = logging.getLogger("primus")
        lg._logger.propagate = False
    # run_patches logs each patch it applies and each that fails, and goes on without the latter.
    log = PatchLog()
    lg._logger.addHandler(log)
    if hasattr(lg._logger, "setLevel"):
        lg._logger.setLevel(logging.INFO)
    try:
        from primus.core.runtime.train_runtime import PrimusRuntime
        rt = PrimusRuntime(types.SimpleNamespace(config=exp, backend_path=backend_path))
        rt._initialize_configuration("pre_trainer", overrides)
        rt._initialize_adapter()
        rt._initialize_trainer()
        rt._run_phase_patches(phase="setup", backend_args=rt.ctx.backend_args)
    finally:
        lg._logger.removeHandler(log)
    from primus.backends.torchtitan.config_utils import build_job_config_from_namespace
    return build_job_config_from_namespace(rt.ctx.backend_args), log


class PatchLog:
    """Collects what Primus's patch runner logs: the patches it applied and those that failed."""
    level = 0

    def __init__(self):
        self.applied, self.failed = [], []

    def handle(self, record):
        import re
        msg = record.getMessage()
        m = re.search(r"\[Patch\] \u2713 Applied: (\S+)", msg)
        if m:
            self.applied.append(m.group(1))
        m = re.search(r"\[Patch\] \u2717 Patch '([^']+)' failed[^:]*: (.*)", msg)
        if m:
            self.failed.append("%s (%s)" % (m.group(1), m.group(2).splitlines()[0]))
        return True


# --- reading the built objects back ------------------------------------------------------------------

def truncated_std(std, a, b):
    """The standard deviation of N(0, std) truncated to [a, b] (symmetric), as trunc_normal_ draws."""
    if std <= 0 or a is None or b is None or a != -b:
        return std
    c = b / std
    if c > 8:
        return std
    phi = math.exp(-c * c / 2) / math.sqrt(2 * math.pi)
    mass = math.erf(c / math.sqrt(2))
    return std * math.sqrt(1 - 2 * c * phi / mass)


class InitRecorder:
    """Records the last torch.nn.init call on each tensor while init_weights runs: (kind, std)."""

    def __init__(self, torch):
        self.torch, self.calls, self.saved = torch, {}, {}

    def __enter__(self):
        init = self.torch.nn.init
        rec = self.calls

        def wrap(name, fn):
            def f(tensor, *a, **kw):
                if name == "normal_":
                    mean = kw.get("mean", a[0] if len(a) > 0 else 0.0)
                    std = kw.get("std", a[1] if len(a) > 1 else 1.0)
                    rec[id(tensor)] = ("normal", float(std), float(mean))
                elif name == "trunc_normal_":
                    mean = kw.get("mean", a[0] if len(a) > 0 else 0.0)
                    std = kw.get("std", a[1] if len(a) > 1 else 1.0)
                    lo = kw.get("a", a[2] if len(a) > 2 else -2.0)
                    hi = kw.get("b", a[3] if len(a) > 3 else 2.0)
                    rec[id(tensor)] = ("normal", truncated_std(float(std), float(lo) - mean, float(hi) - mean), float(mean))
                elif name in ("zeros_", "ones_", "constant_"):
                    rec[id(tensor)] = ("constant", 0.0, 0.0)
                else:
                    rec[id(tensor)] = (name, None, None)
                return fn(tensor, *a, **kw)
            return f

        for name in ("normal_", "trunc_normal_", "zeros_", "ones_", "constant_", "uniform_", "xavier_uniform_",
                     "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"):
            self.saved[name] = getattr(init, name)
            setattr(init, name, wrap(name, self.saved[name]))
        return self

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(self.torch.nn.init, name, fn)
        return False


def kind_of(name, p):
    """A TorchTitan Llama parameter's kind in frameworks/effective's terms."""
    if name.endswith(".bias"):
        return "bias"
    if name.startswith("tok_embeddings."):
        return "embedding"
    if name.startswith("output."):
        return "output"
    if p.ndim == 1:
        return "norm"
    return "linear"


# The output projections of each residual branch in TorchTitan's Llama (Megatron's linear_proj and
# linear_fc2): effective.Config's residual_init_std.
RESIDUAL = ("attention.wo.weight", "feed_forward.w2.weight")


def one_value(field, values, out, unread, fmt=lambda v: v):
    """Sets out[field] when every parameter agrees, else names the disagreement in unread."""
    distinct = sorted(set(v for _, v in values), key=lambda v: (v is None, v))
    if len(distinct) == 1 and distinct[0] is not None:
        out[field] = fmt(distinct[0])
        return
    if not distinct:
        unread.append("%s: no such parameter in the model" % field)
        return
    seen, parts = set(), []
    for n, v in values:
        if v not in seen:
            seen.add(v)
            parts.append("%s %s" % (n, "not drawn from a normal" if v is None else "%.6g" % v))
    unread.append("%s: differs by parameter (%s)" % (field, ", ".join(parts[:4])))


def read_init(torch, model, out, unread):
    calls = {}
    with InitRecorder(torch) as r, torch.no_grad():
        model.init_weights(buffer_device=None)
        calls = r.calls
    by = {"init_std": [], "embedding_init_std": [], "residual_init_std": [], "output_init_std": []}
    for name, p in model.named_parameters():
        if p.ndim < 2:
            continue
        c = calls.get(id(p))
        std = c[1] if c and c[0] == "normal" and c[2] == 0.0 else None
        k = kind_of(name, p)
        field = {"embedding": "embedding_init_std", "output": "output_init_std"}.get(k, "init_std")
        if name.endswith(RESIDUAL):
            field = "residual_init_std"
        by[field].append((name, std))
    for field, values in by.items():
        one_value(field, values, out, unread, float)


def optimizer_config_for_meta(job_config):
    """The optimizer section with implementation "for-loop" when it is "fused": the fused kernels
    refuse meta tensors, and the implementation decides neither groups nor hyper-parameters."""
    oc = job_config.optimizer
    if getattr(oc, "implementation", None) == "fused":
        return dataclasses.replace(oc, implementation="for-loop")
    return oc


def read_optimizer(torch, spec, model, job_config, parallel_dims, out, unread):
    oc = optimizer_config_for_meta(job_config)
    opts = spec.build_optimizers_fn([model], oc, parallel_dims, None)
    scheds = spec.build_lr_schedulers_fn(opts, job_config.lr_scheduler, job_config.training.steps)
    optimizers = list(getattr(opts, "optimizers", [opts]))
    groups = [g for o in optimizers for g in o.param_groups]
    cls = {type(o) for o in optimizers}
    name_of = {id(p): n for n, p in model.named_parameters()}
    seen = set()
    decayed = {}
    for g in groups:
        for p in g["params"]:
            seen.add(id(p))
            n = name_of.get(id(p), "?")
            decayed.setdefault(kind_of(n, p), set()).add(g["weight_decay"] != 0)
    left = [n for n, p in model.named_parameters() if p.requires_grad and id(p) not in seen]
    if left:
        unread.append("no_decay: parameters outside every optimizer group: %s" % ", ".join(left[:4]))
    if "bias" not in decayed:
        # TorchTitan's Llama has no biases: ask the same builder about a module that has one.
        probe = torch.nn.Module()
        probe.layers = torch.nn.ModuleDict({"0": torch.nn.Module()})
        probe.layers["0"].attention = torch.nn.Module()
        probe.layers["0"].attention.wq = torch.nn.Linear(4, 4, bias=True)
        pnames = {id(p): n for n, p in probe.named_parameters()}
        popts = spec.build_optimizers_fn([probe], oc, parallel_dims, None)
        for o in getattr(popts, "optimizers", [popts]):
            for g in o.param_groups:
                for p in g["params"]:
                    if pnames.get(id(p), "").endswith(".bias"):
                        decayed.setdefault("bias", set()).add(g["weight_decay"] != 0)
    split = sorted(k for k, v in decayed.items() if len(v) != 1)
    if split:
        unread.append("no_decay: the optimizer groups split parameter kind(s) %s" % split)
    else:
        out["no_decay"] = sorted(k for k, v in decayed.items() if v == {False})
    wds = {g["weight_decay"] for g in groups if g["weight_decay"] != 0}
    if cls != {torch.optim.AdamW}:
        unread.append("weight_decay: the optimizer is %s, not AdamW's decoupled decay" % sorted(c.__name__ for c in cls))
    elif len(wds) > 1:
        unread.append("weight_decay: groups decay with %s" % sorted(wds))
    else:
        out["weight_decay"] = float(next(iter(wds))) if wds else 0.0
    for field, key, idx in (("adam_beta1", "betas", 0), ("adam_beta2", "betas", 1), ("adam_eps", "eps", None), ("lr", "initial_lr", None)):
        vals = {(g[key][idx] if idx is not None else g[key]) for g in groups}
        if len(vals) == 1:
            out[field] = float(vals.pop())
        else:
            unread.append("%s: groups differ: %s" % (field, sorted(vals)))
    read_schedule(scheds, job_config, out, unread)


def read_schedule(scheds, job_config, out, unread):
    """The LR schedule as TorchTitan's training loop applies it: iteration i trains at the scheduler's
    last rate before its i-th step (train.py logs get_last_lr()[0], then steps the container). Every
    iteration's rate is compared with Megatron's schedule of the job's own values: warm-up from 0 over
    lr_scheduler.warmup_steps, iteration i at the rate after i - 1 steps, cosine to lr × min_lr_factor
    at training.steps."""
    steps = job_config.training.steps
    c = job_config.lr_scheduler
    lr = out.get("lr")
    s = list(scheds)[0]
    rates = []
    for _ in range(steps):
        rates.append(float(s.get_last_lr()[0]))
        scheds.step()
    warm = int(c.warmup_steps)
    out["lr_warmup_init"] = rates[0] if warm > 0 else 0.0
    if lr is None:
        for f in ("min_lr", "lr_decay_style", "lr_warmup_iters", "lr_decay_iters"):
            unread.append("%s: the optimizer groups do not agree on the peak rate" % f)
        return
    floor = lr * float(c.min_lr_factor)

    def megatron(done):  # the rate after `done` optimizer steps, OptimizerParamScheduler.get_lr
        if warm > 0 and done <= warm:
            return lr * done / warm
        if done > steps or steps == warm:
            return floor
        ratio = (done - warm) / (steps - warm)
        return floor + (lr - floor) * 0.5 * (1.0 + math.cos(math.pi * ratio))

    for i, got in enumerate(rates, start=1):
        want = megatron(i - 1)
        if abs(got - want) > 1e-9 * max(abs(want), lr):
            for f in ("min_lr", "lr_decay_style", "lr_warmup_iters", "lr_decay_iters"):
                unread.append("%s: iteration %d trains at %.6g, Megatron's schedule (warm-up %d from 0, cosine to %.6g at %d) at %.6g"
                              % (f, i, got, warm, floor, steps, want))
            return
    out.update(min_lr=floor, lr_decay_style="cosine", lr_warmup_iters=warm, lr_decay_iters=steps)


def read_precision(torch, job_config, parallel_dims, out, unread):
    """What TorchTitan trains in: with FSDP (dp_shard or cp > 1) fully_shard's MixedPrecisionPolicy
    (param dtype mixed_precision_param); otherwise maybe_enable_amp's autocast, which it turns off
    when TP or PP is on (the model then trains in training.dtype)."""
    from torchtitan.config import TORCH_DTYPE_MAP
    from torchtitan.distributed import utils as dist_utils
    mp = job_config.training.mixed_precision_param
    if parallel_dims.fsdp_enabled:
        dtype = TORCH_DTYPE_MAP[mp]
    else:
        with contextlib.redirect_stdout(io.StringIO()):
            ctx = dist_utils.maybe_enable_amp(parallel_dims, mp, "cpu")
        dtype = getattr(ctx, "fast_dtype", None) or TORCH_DTYPE_MAP[job_config.training.dtype]
    out["precision"] = {torch.bfloat16: "bf16", torch.float32: "fp32", torch.float16: "fp16"}.get(dtype, str(dtype))
    conv = list(getattr(job_config.model, "converters", []) or [])
    if conv:
        unread.append("precision: model.converters %s replace the linear layers" % conv)
        unread.append("fp8_recipe: model.converters %s" % conv)
    else:
        out["fp8_recipe"] = ""


def llama3_frequencies(theta, dim, scaling):
    """RoPE inverse frequencies of a dim-channel head, with Llama 3 scaling (factor, low, high,
    original positions) unless scaling is None; written from the definition, not TorchTitan's code."""
    out = []
    for i in range(dim // 2):
        f = theta ** (-2.0 * i / dim)
        if scaling is not None:
            factor, low, high, orig = scaling
            wavelen = 2 * math.pi / f
            if wavelen > orig / low:
                f = f / factor
            elif wavelen >= orig / high:
                smooth = (orig / wavelen - low) / (high - low)
                f = (1 - smooth) * f / factor + smooth * f
        out.append(f)
    return out


def read_rope(freqs, theta, scaling_args, out, unread):
    """rope_theta and Llama 3 scaling as the model computes them: its frequencies must be the
    declared scaling's (a factor of 1 is plain RoPE) to float32 precision, band by band."""
    sa = scaling_args
    declared = (float(sa.scaling_factor), float(sa.low_freq_factor), float(sa.high_freq_factor),
                int(sa.original_max_position_embeddings))
    want = llama3_frequencies(theta, 2 * len(freqs), None if declared[0] == 1.0 else declared)
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(freqs, want)) if abs(g - w) > 1e-5 * w]
    if bad:
        i, g, w = bad[0]
        unread.append("rope_theta: band %d of the model's rotary frequencies is %.9g, θ %g with scaling %s gives %.9g"
                      % (i, g, theta, declared, w))
        for f in ("rope_scaling", "rope_scaling_low_freq_factor", "rope_scaling_high_freq_factor", "rope_scaling_original_positions"):
            unread.append("%s: the model's rotary frequencies differ from the declared scaling in %d bands" % (f, len(bad)))
        return
    out["rope_theta"] = theta
    if declared[0] == 1.0:
        out.update(rope_scaling=1.0, rope_scaling_low_freq_factor=0.0, rope_scaling_high_freq_factor=0.0,
                   rope_scaling_original_positions=0)
    else:
        out.update(rope_scaling=declared[0], rope_scaling_low_freq_factor=declared[1],
                   rope_scaling_high_freq_factor=declared[2], rope_scaling_original_positions=declared[3])


def read_model(torch, model, args, out, unread):
    layers = list(model.layers.values())
    att, ff = layers[0].attention, layers[0].feed_forward
    out["layers"] = len(layers)
    out["hidden"] = int(model.tok_embeddings.weight.shape[1])
    out["vocab"] = int(model.tok_embeddings.weight.shape[0])
    out["heads"] = int(att.n_heads)
    out["kv_heads"] = int(att.n_kv_heads)
    if att.wq.weight.shape[0] != att.n_heads * att.head_dim or att.wk.weight.shape[0] != att.n_kv_heads * att.head_dim:
        unread.append("heads: wq/wk shapes %s/%s do not hold the heads" % (tuple(att.wq.weight.shape), tuple(att.wk.weight.shape)))
    out["ffn"] = int(ff.w1.weight.shape[0])
    out["head_dim"] = int(att.head_dim)
    # TorchTitan's Llama rotates every channel of a head and has no norm on q and k.
    out["rotary_percent"] = 1.0
    out["qk_norm"] = any("q_norm" in n or "k_norm" in n for n, _ in att.named_modules())
    out["activation"] = "swiglu" if all(hasattr(ff, n) for n in ("w1", "w2", "w3")) else type(ff).__name__
    norms = [(n, m) for n, m in model.named_modules() if "norm" in type(m).__name__.lower()]
    kinds = {type(m).__name__ for _, m in norms}
    out["norm"] = kinds.pop() if len(kinds) == 1 else "mixed"
    one_value("norm_eps", [(n, float(m.eps)) for n, m in norms], out, unread, float)
    # RoPE: the model's own frequencies (its _precompute_freqs_cis, on the CPU: the angle at position 1).
    with torch.device("cpu"):
        freqs = [float(v) for v in torch.angle(model._precompute_freqs_cis()[1]).double()]
    read_rope(freqs, float(args.rope_theta), args.rope_scaling_args, out, unread)
    mask = getattr(args, "attn_mask_type", "causal")
    # Positions run 0 .. seq_len - 1 in every sample (the model's precomputed frequencies); attention
    # spans documents unless flex attention's block-causal mask splits them at end-of-document tokens.
    out["reset_position_ids"] = False
    out["reset_attention_mask"] = attention_kind(args) in ("flex", "varlen") and mask == "block_causal"
    read_window(torch, model, args, out, unread)
    biases = {n for n, p in model.named_parameters() if n.endswith(".bias")}
    out["qkv_bias"] = any(n.endswith(("wq.bias", "wk.bias", "wv.bias")) for n in biases)
    out["linear_bias"] = any(not n.endswith(("wq.bias", "wk.bias", "wv.bias")) for n in biases)
    out["tied_embeddings"] = model.output is not None and model.output.weight is model.tok_embeddings.weight
    drops = [float(m.p) for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    out["hidden_dropout"] = max(drops) if drops else 0.0
    out["attention_dropout"] = float(getattr(att.inner_attention, "dropout_p", 0.0) or 0.0)


def attention_kind(args):
    """The attention the model args select: "sdpa", "flex" or "varlen" (attn_type from v0.2.2 on;
    use_flex_attn before)."""
    if hasattr(args, "attn_type"):
        return str(args.attn_type)
    return "flex" if getattr(args, "use_flex_attn", False) else "sdpa"


def attention_mask_mod(torch, model, seq_len):
    """The mask function the model's get_attention_masks hands FlexAttention for one batch of seq_len
    tokens with no end-of-document token, caught where it would become a block mask."""
    import types
    attention = importlib.import_module("torchtitan.models.attention")
    original, caught = attention.create_attention_mask, []

    def catch(mask_mod, *a, **kw):
        caught.append(mask_mod)
        return None
    patched = [m for m in list(sys.modules.values()) if getattr(m, "create_attention_mask", None) is original]
    for m in patched:
        m.create_attention_mask = catch
    try:
        model.get_attention_masks(input_batch=torch.zeros(1, seq_len, dtype=torch.long),
                                  tokenizer=types.SimpleNamespace(eos_id=-1), extra_inputs={})
    finally:
        for m in patched:
            m.create_attention_mask = original
    if len(caught) != 1:
        raise ValueError("get_attention_masks built %d masks" % len(caught))
    return caught[0]


def read_window(torch, model, args, out, unread):
    """The window the attention applies at seq_len. SDPA's path is causal (no window); the
    FlexAttention path applies the model's own mask function, evaluated here for the last query:
    it sees itself and `window` keys before it (all seq_len keys: no window)."""
    layers = list(model.layers.values())
    attention = importlib.import_module("torchtitan.models.attention")
    llama = importlib.import_module("torchtitan.models.llama3.model.model")
    inner = {type(l.attention.inner_attention) for l in layers}
    forwards = {type(l.attention).forward for l in layers}
    if forwards != {llama.Attention.forward}:
        unread.append("window: the attention forward is %s, not TorchTitan's Llama attention"
                      % ", ".join(sorted(getattr(f, "__qualname__", str(f)) for f in forwards)))
        return
    if inner == {attention.ScaledDotProductAttentionWrapper}:
        out["window"] = 0  # F.scaled_dot_product_attention(is_causal=True)
        return
    if inner != {attention.FlexAttentionWrapper} or attention_kind(args) != "flex":
        unread.append("window: attention kernels %s with the model args' attention %s"
                      % (sorted(c.__name__ for c in inner), attention_kind(args)))
        return
    seq = int(args.max_seq_len)
    try:
        mask_mod = attention_mask_mod(torch, model, seq)
        zero, keys = torch.tensor(0), torch.arange(seq)
        first = mask_mod(zero, zero, torch.tensor(0), keys)
        last = mask_mod(zero, zero, torch.tensor(seq - 1), keys)
    except Exception as e:  # noqa: BLE001  (what the mask cannot answer is reported, not hidden)
        unread.append("window: the model's attention mask: %s" % e)
        return
    seen = [int(i) for i in torch.nonzero(last).flatten()]
    if first.tolist() != [True] + [False] * (seq - 1) or not seen or seen != list(range(seen[0], seq)):
        unread.append("window: the model's attention mask is not causal with one contiguous window "
                      "(the first query sees %d keys, the last sees %d)" % (int(first.sum()), len(seen)))
        return
    out["window"] = 0 if len(seen) == seq else len(seen) - 1


def read_batch(job_config, world, parallel_dims, spec, out, unread):
    t, par = job_config.training, job_config.parallelism
    dp = parallel_dims.dp_replicate * parallel_dims.dp_shard
    gbs = t.global_batch_size if t.global_batch_size > 0 else t.local_batch_size * dp
    if gbs % (t.local_batch_size * dp):
        raise ValueError("global batch size %d is not a multiple of local batch size %d × DP %d" % (gbs, t.local_batch_size, dp))
    out["gbs"] = int(gbs)
    out["mbs"] = int(par.pipeline_parallel_microbatch_size if parallel_dims.pp_enabled else t.local_batch_size)
    out["seq_len"] = int(t.seq_len)
    out["train_iters"] = int(t.steps)
    # v0.2.2 reads the seed from [debug]; Primus may still leave a training.seed there, which
    # TorchTitan ignores.
    debug = getattr(job_config, "debug", None)
    if dataclasses.is_dataclass(debug) and "seed" in {f.name for f in dataclasses.fields(debug)}:
        seed = debug.seed
    else:
        seed = t.seed
    out["seed"] = int(seed) if seed is not None else -1
    out["clip_grad"] = float(t.max_norm)
    # TorchTitan's cross_entropy_loss averages every label (no ignore mask) and Rival's dataloader
    # yields tokens[1:] as they are: nothing after an end-of-document token is masked.
    loss = getattr(spec.build_loss_fn, "__name__", "")
    if loss == "build_cross_entropy_loss":
        out["eod_mask_loss"] = False
    else:
        unread.append("eod_mask_loss: the train spec's loss is %s, not TorchTitan's cross entropy" % loss)


# The digest covers the first DIGEST_BATCHES global batches (at most TRAIN_ITERS of them), as Rival's
# own digest of its order does (tasks: digestBatches).
DIGEST_BATCHES = 8


def read_samples(torch, spec, ext, job_config, parallel_dims):
    """(n, SHA-256) of the first n = min(8, steps) × GBS samples TorchTitan's trainer reads through
    the train spec's dataloader, or None when the files it reads are not there (train:check before
    the dataset is encoded or the order written). As TorchTitan's Trainer does, one dataloader is
    built per rank of the "dp" mesh (dp_replicate × dp_shard ranks when either is > 1, else one),
    each with its dp_rank and dp_world_size; a step draws global_batch_size / (local_batch_size ×
    DP) micro-batches from each rank's. Samples are taken in that order, micro-batch step by step and
    rank by rank within a global batch, each as its SL inputs and the last label: SL + 1
    little-endian int64 token ids."""
    import hashlib
    files = getattr(ext, "input_files", None)
    if files is None:
        raise ValueError("the extension %s does not name the files its dataloader reads (input_files)" % getattr(ext, "__name__", ext))
    if not all(os.path.isfile(f) for f in files(job_config)):
        return None
    ft = getattr(job_config, "fault_tolerance", None)
    if ft is not None and ft.enable:
        raise ValueError("fault_tolerance.enable: each replica group reads its own part of the data; the digest covers one group")
    t = job_config.training
    dp = parallel_dims.dp_replicate * parallel_dims.dp_shard if parallel_dims.dp_enabled else 1
    gbs = t.global_batch_size if t.global_batch_size > 0 else t.local_batch_size * dp
    ga = gbs // (t.local_batch_size * dp)
    n = min(DIGEST_BATCHES, t.steps) * gbs
    with contextlib.redirect_stdout(io.StringIO()):
        loaders = [iter(spec.build_dataloader_fn(dp_world_size=dp, dp_rank=r, tokenizer=None, job_config=job_config))
                   for r in range(dp)]
    h, done = hashlib.sha256(), 0
    while done < n:  # one global batch
        for _ in range(ga):
            for r, it in enumerate(loaders):
                inputs, labels = next(it)
                x = inputs["input"]
                if tuple(x.shape) != (t.local_batch_size, t.seq_len) or tuple(labels.shape) != tuple(x.shape):
                    raise ValueError("dp rank %d: a micro-batch of inputs %s and labels %s, want %d × %d" % (
                        r, tuple(x.shape), tuple(labels.shape), t.local_batch_size, t.seq_len))
                if not torch.equal(x[:, 1:], labels[:, :-1]):
                    raise ValueError("dp rank %d: the labels are not the inputs shifted by one token" % r)
                for row in torch.cat([x, labels[:, -1:]], dim=1):
                    h.update(row.to(torch.int64).numpy().astype("<i8").tobytes())
                    done += 1
    return done, h.hexdigest()


def read_held_out(torch, spec, ext, job_config, parallel_dims):
    """(n, SHA-256) of the held-out sequences TorchTitan's validator reads, or None when the run does
    not evaluate (rival_titan.json names no held-out set) or the set is not written yet. One
    validator per rank of the "dp" mesh is built through the spec's build_validator_fn with the
    arguments TorchTitan's Trainer passes; two evaluations are read from each validator's loader as
    validate() reads them (a fresh iteration, validation.steps batches), step by step and rank by rank,
    each sequence as its SL inputs and last label. Both must be equal, and the validator must
    evaluate at validation.freq only."""
    import hashlib
    cfg = ext.load_config()
    files = ext.held_out_files(cfg)
    if not files:
        return None
    if not job_config.validation.enable or spec.build_validator_fn is None:
        raise ValueError("rival_titan.json names a held-out set but TorchTitan would build no validator (validation.enable is false)")
    if not all(os.path.isfile(f) for f in files):
        return None
    dp = parallel_dims.dp_replicate * parallel_dims.dp_shard if parallel_dims.dp_enabled else 1
    v = job_config.validation
    with contextlib.redirect_stdout(io.StringIO()):
        validators = [spec.build_validator_fn(
            job_config=job_config, dp_world_size=dp, dp_rank=r, tokenizer=None, parallel_dims=parallel_dims,
            loss_fn=None, validation_context=None, maybe_enable_amp=None, metrics_processor=types.SimpleNamespace(),
            pp_schedule=None, pp_has_first_stage=None, pp_has_last_stage=None) for r in range(dp)]
    when = [s for s in range(1, 2 * v.freq + 1) if validators[0].should_validate(s)]
    if when != [v.freq, 2 * v.freq]:
        raise ValueError("the validator evaluates after steps %s of the first %d, not every validation.freq = %d" % (when, 2 * v.freq, v.freq))
    digests = []
    for _ in range(2):
        its = [iter(x.validation_dataloader) for x in validators]
        h, done = hashlib.sha256(), 0
        for _ in range(v.steps):
            for r, it in enumerate(its):
                inputs, labels = next(it)
                x = inputs["input"]
                if tuple(x.shape) != (v.local_batch_size, v.seq_len) or not torch.equal(x[:, 1:], labels[:, :-1]):
                    raise ValueError("dp rank %d: a held-out batch of inputs %s and labels %s, want %d × %d shifted by one" % (
                        r, tuple(x.shape), tuple(labels.shape), v.local_batch_size, v.seq_len))
                for row in torch.cat([x, labels[:, -1:]], dim=1):
                    h.update(row.to(torch.int64).numpy().astype("<i8").tobytes())
                    done += 1
        digests.append((done, h.hexdigest()))
    if digests[0] != digests[1]:
        raise ValueError("the second evaluation reads other held-out sequences (%d, sha256 %s) than the first (%d, %s)" % (
            digests[1] + digests[0]))
    return digests[0]


def main(argv):
    # The run's own command-line overrides follow "--": the launcher parses them after the job config.
    overrides = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    if len(argv) < 6 or argv[1] not in ("nvd", "amd") or (argv[1] == "amd") != (len(argv) == 7):
        sys.exit(__doc__)
    platform, trees, ext_dir, world, conf = argv[1], argv[2], argv[3], int(argv[4]), argv[5]
    os.environ.setdefault("WORLD_SIZE", str(world))
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    try:
        import torch  # noqa: F401 (real torch: the model is built and initialised with it)
    except BaseException as e:  # noqa: B902
        fail("import torch", e)
    missing = stand_in_missing()
    tree = resolve(trees, "torchtitan/config/job_config.py")
    if tree:
        sys.path.insert(0, tree)
    sys.path.insert(0, os.path.abspath(ext_dir))
    if platform == "amd":
        ptree = resolve(argv[6], "primus/core/config/primus_config.py")
        if ptree is None:
            sys.stderr.write("preflight failed: primus/core/config/primus_config.py not found in %s\n" % argv[6])
            sys.exit(1)
        sys.path.insert(1, ptree)
    patches = None
    try:
        out_log = io.StringIO()
        with contextlib.redirect_stdout(out_log):
            if platform == "nvd":
                job_config = job_config_nvd(conf, overrides)
            else:
                job_config, patches = job_config_amd(conf, tree, overrides)
    except BaseException as e:  # noqa: B902
        fail("TorchTitan job config" if platform == "nvd" else "Primus's TorchTitan job config", e)
    ext = None
    try:
        if job_config.experimental.custom_import:
            ext = importlib.import_module(job_config.experimental.custom_import)
        from torchtitan.protocols import train_spec as ts
        spec = ts.get_train_spec(job_config.model.name)
        args = spec.model_args[job_config.model.flavor]
        args.update_from_config(job_config)
    except BaseException as e:  # noqa: B902
        fail("TorchTitan train spec", e)
    try:
        from torchtitan.config import TORCH_DTYPE_MAP
        from torchtitan.distributed import ParallelDims
        from torchtitan.tools import utils
        p = job_config.parallelism
        parallel_dims = ParallelDims(dp_shard=p.data_parallel_shard_degree, dp_replicate=p.data_parallel_replicate_degree,
                                     cp=p.context_parallel_degree, tp=p.tensor_parallel_degree, pp=p.pipeline_parallel_degree,
                                     ep=p.expert_parallel_degree, etp=p.expert_tensor_parallel_degree, world_size=world)
        with torch.device("meta"), utils.set_default_dtype(TORCH_DTYPE_MAP[job_config.training.dtype]):
            model = spec.model_cls(args)
    except BaseException as e:  # noqa: B902
        fail("TorchTitan model on the meta device", e)
    out, unread = {}, []
    stage = "reading back the model"
    try:
        read_model(torch, model, args, out, unread)
        stage = "reading back the init"
        read_init(torch, model, out, unread)
        stage = "building the optimizer and LR schedule"
        read_optimizer(torch, spec, model, job_config, parallel_dims, out, unread)
        stage = "reading back the precision"
        read_precision(torch, job_config, parallel_dims, out, unread)
        stage = "reading back the batch"
        read_batch(job_config, world, parallel_dims, spec, out, unread)
        stage = "reading the first samples through the train spec's dataloaders"
        digest = read_samples(torch, spec, ext, job_config, parallel_dims) if ext is not None else None
        stage = "reading the held-out sequences through the train spec's validator"
        held = read_held_out(torch, spec, ext, job_config, parallel_dims) if ext is not None else None
    except BaseException as e:  # noqa: B902
        fail(stage, e)
    if unread:
        out["unread"] = unread
    ran = {"torch": torch.__version__.split("+")[0]}
    if tree:
        ran["torchtitan_tree"] = tree
    if missing:
        ran["stood_in"] = ",".join(missing)
    if DROPPED_COMPILE_OPTIONS:
        ran["compile_options_dropped"] = ",".join(sorted(DROPPED_COMPILE_OPTIONS))
    if patches is not None:
        ran["primus_patches"] = ",".join(patches.applied) or "none"
        if patches.failed:
            ran["primus_patches_failed"] = "; ".join(patches.failed)
    print("preflight ran: " + json.dumps(ran, sort_keys=True))
    print(PREFIX + json.dumps(out, sort_keys=True))
    if digest is not None:
        print(SAMPLES + json.dumps({"samples": digest[0], "sha256": digest[1]}))
    if held is not None:
        print(HELD_OUT + json.dumps({"samples": held[0], "sha256": held[1]}))
    print("preflight ok: torchtitan %s: %s %s, world %d, TP %d PP %d DP %d, %s on the meta device" % (
        tree or "(installed)", job_config.model.name, job_config.model.flavor, world, parallel_dims.tp,
        parallel_dims.pp, parallel_dims.dp_shard * parallel_dims.dp_replicate, type(model).__name__))


if __name__ == "__main__":
    main(sys.argv)
