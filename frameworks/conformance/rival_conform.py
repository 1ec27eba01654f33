"""Rival's numerical conformance: one framework's own model code, loss, optimizer and LR schedule
take one initial checkpoint (Hugging Face layout, fp32 safetensors, written by Rival) and the same
global batches (an int64 .npy of samples, seq_len + 1 tokens each, in Rival's order), and print,
for every step, the loss, the gradient norm before clipping, the learning rate the step trained
at, and each parameter's gradient norm under one canonical name:

    conform: {"framework": ..., "step": n, "loss": ..., "grad_norm": ..., "lr": ..., "grads": {...}}

Canonical names: embedding, output, final_norm, and layers.<i>.<part> with part one of q, k, v, o,
gate, up, down, attn_norm, mlp_norm, q_bias, k_bias, v_bias. By default everything runs on the CPU
in fp32. RIVAL_CONFORM_DEVICE=cuda runs on the GPU, with the frameworks' own CUDA paths (compiled
FlexAttention, cuBLAS, SDPA's fused kernels), and RIVAL_CONFORM_DTYPE=bf16 computes in bf16 (see
forward) with fp32 master weights.

    python3 rival_conform.py fsdp     CHECKPOINT BATCHES GBS STEPS SEQ_LEN -- TRAIN_PY_ARGV...
    python3 rival_conform.py titan    CHECKPOINT BATCHES GBS STEPS SEQ_LEN TORCHTITAN_TREE EXTENSION_DIR JOB_TOML
    python3 rival_conform.py megatron CHECKPOINT BATCHES GBS STEPS SEQ_LEN MEGATRON_TREE PREFLIGHT_DIR -- MEGATRON_ARGV...
    python3 rival_conform.py nemo     CHECKPOINT BATCHES GBS STEPS SEQ_LEN BRIDGE_TREE MEGATRON_TREE LAUNCH_DIR
    python3 rival_conform.py primus   CHECKPOINT BATCHES GBS STEPS SEQ_LEN PRIMUS_TREE MEGATRON_TREE PREFLIGHT_DIR EXP [-- OVERRIDES...]
    torchrun rival_conform.py titan-train TORCHTITAN_TREE LAUNCH_DIR -- TORCHTITAN_ARGS...

Each step feeds the whole global batch (GBS samples) as one micro-batch: the runners compare the
model, loss, optimizer and schedule, not each framework's gradient accumulation or data loader.

Where a framework's code asks for CUDA for something that does not change the numbers, the script
stands in for that piece only (each stand-in is named where it is made, and in docs/frameworks.md).
"""
import contextlib
import json
import math
import os
import re
import struct
import sys
import types

import numpy as np
import torch

DEVICE = torch.device(os.environ.get("RIVAL_CONFORM_DEVICE", "cpu"))
BF16 = os.environ.get("RIVAL_CONFORM_DTYPE", "fp32") == "bf16"
if os.environ.get("RIVAL_CONFORM_DTYPE", "fp32") not in ("fp32", "bf16") or DEVICE.type not in ("cpu", "cuda"):
    sys.exit("rival_conform: RIVAL_CONFORM_DEVICE is cpu or cuda, RIVAL_CONFORM_DTYPE fp32 or bf16")
CPU = DEVICE.type == "cpu"


def deterministic():
    """The conformance runners' settings: deterministic kernels, the device, the CPU threads."""
    if CPU:
        torch.use_deterministic_algorithms(True)
    else:
        # cuBLAS is deterministic only with a fixed workspace; a kernel without a deterministic
        # variant (some attention backwards) warns rather than stops.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.cuda.set_device(DEVICE)
    torch.set_num_threads(max(1, int(os.environ.get("RIVAL_CONFORM_THREADS", "1"))))

_DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16, "I64": torch.int64}


def read_safetensors(path):
    """The tensors of a .safetensors file (8-byte little-endian header length, JSON header, data)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        beg, end = meta["data_offsets"]
        t = torch.frombuffer(bytearray(data[beg:end]), dtype=_DTYPES[meta["dtype"]])
        out[name] = t.reshape(meta["shape"]).clone()
    return out


def read_checkpoint(directory):
    with open(os.path.join(directory, "config.json")) as f:
        config = json.load(f)
    return config, read_safetensors(os.path.join(directory, "model.safetensors"))


def all_used(ckpt, tensors, used, who):
    """Every tensor of the checkpoint must reach the model: one left over is a parameter the
    framework's model lacks (a bias it does not build, a layer too few)."""
    left = sorted(set(tensors) - set(used))
    if left:
        sys.exit("rival_conform %s: %s/model.safetensors holds %s, which nothing in the model takes" % (who, ckpt, left))


def read_batches(path, gbs, steps, seq_len):
    """steps global batches of gbs samples, seq_len + 1 tokens each, from the front of the file."""
    flat = np.fromfile(path, dtype="<i8")
    need = gbs * steps * (seq_len + 1)
    if flat.size % (seq_len + 1) or flat.size < need:
        sys.exit("rival_conform: %s holds %d tokens: %d steps of %d samples of %d tokens need %d, in whole samples"
                 % (path, flat.size, steps, gbs, seq_len + 1, need))
    samples = torch.from_numpy(flat[:need].reshape(gbs * steps, seq_len + 1).copy()).long().to(DEVICE)
    return [samples[i * gbs:(i + 1) * gbs] for i in range(steps)]


def forward(model, *args, **kw):
    """The model's forward pass. In fp32 the model as it is. In bf16 the forward runs on bf16 copies
    of the parameters, which is what Megatron's Float16Module and FSDP2's param_dtype compute with;
    the gradients reach the fp32 parameters converted to fp32, and the optimizer steps those (the
    master weights of Megatron's mixed-precision optimizer and FSDP2's sharded parameters). Every
    runner uses this one policy, so the numbers differ only by what each framework's code computes."""
    if not BF16:
        return model(*args, **kw)
    from torch.func import functional_call
    return functional_call(model, {n: p.to(torch.bfloat16) for n, p in model.named_parameters()}, args, kw)


def describe(v):
    """A config value as text that is the same for the same value in every process: functions and
    partials by qualified name and arguments, enums by name, dtypes by name."""
    import enum
    import functools
    if isinstance(v, functools.partial):
        args = [describe(a) for a in v.args] + ["%s=%s" % (k, describe(x)) for k, x in sorted(v.keywords.items())]
        return "%s(%s)" % (describe(v.func), ", ".join(args))
    if isinstance(v, enum.Enum):
        return "%s.%s" % (type(v).__name__, v.name)
    if isinstance(v, torch.dtype):
        return str(v)
    import dataclasses
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return "%s(%s)" % (type(v).__name__, ", ".join("%s=%s" % (f.name, describe(getattr(v, f.name, None)))
                                                         for f in dataclasses.fields(v)))
    if isinstance(v, float) and v.is_integer():
        return repr(int(v))  # 0.0 from argparse and 0 from JSON are one value
    if callable(v) and hasattr(v, "__qualname__"):
        return "%s.%s" % (getattr(v, "__module__", "?"), v.__qualname__)
    if isinstance(v, (list, tuple)):
        return "[%s]" % ", ".join(describe(x) for x in v)
    if isinstance(v, dict):
        return "{%s}" % ", ".join("%s: %s" % (k, describe(x)) for k, x in sorted(v.items(), key=lambda kv: str(kv[0])))
    if callable(v):
        return type(v).__module__ + "." + type(v).__qualname__
    return repr(v)


def emit_config(framework, config):
    """Every field of Megatron Core's TransformerConfig as the built model holds it (model.config;
    a provider's own extra fields are left out), so frameworks on Megatron compare whole configs."""
    import dataclasses
    from megatron.core.transformer.transformer_config import TransformerConfig
    fields = {f.name: describe(getattr(config, f.name, None)) for f in dataclasses.fields(TransformerConfig)}
    print("conform config: " + json.dumps({"framework": framework, "fields": fields}, sort_keys=True), flush=True)


def emit_fields(framework, obj, fields):
    """Every field of one of the run's config objects (a model provider's, an optimizer's or a
    schedule's, train.py's arguments), as text: what a test accounts for field by field."""
    import dataclasses
    if dataclasses.is_dataclass(fields):
        fields = {f.name: getattr(fields, f.name, None) for f in dataclasses.fields(fields)}
    out = {k: describe(v) for k, v in fields.items()}
    print("conform config: " + json.dumps({"framework": framework, "object": obj, "fields": out}, sort_keys=True), flush=True)


def scheduler_fields(sched):
    """The settings an OptimizerParamScheduler was built with (its attributes but the optimizer
    and the step count)."""
    return {k: v for k, v in vars(sched).items() if k not in ("optimizer", "num_steps")}


def emit(framework, step, loss, grad_norm, lr, grads, layout=None):
    """One step's line. grads maps canonical names to gradient tensors (their norms are printed);
    layout, given on step 1, maps canonical names to the parameters, whose dtype and shape are
    printed as "float32[256,256]"."""
    d = {"framework": framework, "step": step, "loss": float(loss), "grad_norm": float(grad_norm),
         "lr": float(lr), "grads": {k: float(v.norm()) for k, v in sorted(grads.items())}}
    if layout is not None:
        d["layout"] = {k: "%s[%s]" % (str(v.dtype).replace("torch.", ""), ",".join(str(x) for x in v.shape))
                       for k, v in sorted(layout.items())}
    print("conform: " + json.dumps(d), flush=True)


_HF = re.compile(r"model\.layers\.(\d+)\.(self_attn|mlp)?\.?(\w+)\.(weight|bias)$")
_HF_PART = {"q_proj": "q", "k_proj": "k", "v_proj": "v", "o_proj": "o", "gate_proj": "gate", "up_proj": "up",
            "down_proj": "down", "input_layernorm": "attn_norm", "post_attention_layernorm": "mlp_norm"}


def canonical_hf(name):
    """The canonical name of a Hugging Face Llama/Qwen2/Mistral parameter."""
    fixed = {"model.embed_tokens.weight": "embedding", "lm_head.weight": "output", "model.norm.weight": "final_norm"}
    if name in fixed:
        return fixed[name]
    m = _HF.match(name)
    if not m or m.group(3) not in _HF_PART:
        raise KeyError("rival_conform: no canonical name for %s" % name)
    part = _HF_PART[m.group(3)]
    return "layers.%s.%s%s" % (m.group(1), part, "_bias" if m.group(4) == "bias" else "")


# ---- fsdp: Rival's trainer (train.py), its own model, loss, AdamW groups, schedule and clip ----

def run_fsdp(ckpt, batches_path, gbs, steps, seq_len, argv):
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    import importlib.util
    spec = importlib.util.spec_from_file_location("rival_fsdp_train", argv[0])
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    args = train.parse_args(argv[1:])
    train.import_torch(args)
    args.precision = "fp32"
    emit_fields("fsdp", "train.py arguments", vars(args))
    config, tensors = read_checkpoint(ckpt)
    model, _ = train.build_model(torch, args, device=DEVICE)
    sd = train.state_dict_from_hf(tensors, args)
    names = train.hf_names(args)
    all_used(ckpt, tensors, names.values(), "fsdp")
    model.load_state_dict(sd, strict=True)
    layout = {canonical_hf(names[n]): p for n, p in model.named_parameters()}
    opt, _ = train.adamw(torch, train.param_groups(list(model.named_parameters()), train.no_decay_names(model), args), args)
    for step, batch in enumerate(read_batches(batches_path, gbs, steps, seq_len), start=1):
        layout = layout if step == 1 else None
        lr = train.step_lr(args, step)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        loss = train.next_token_loss(torch, forward(model, batch[:, :-1]), batch, args.vocab)
        loss.backward()
        grads = {canonical_hf(names[n]): p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), train.CLIP_GRAD)
        opt.step()
        emit("fsdp", step, loss.item(), norm.item(), lr, grads, layout)


# ---- titan: TorchTitan's model with Rival's train spec, its HF adapter, loss, clip and schedulers ----

def run_titan(ckpt, batches_path, gbs, steps, seq_len, tree, ext_dir, job_toml):
    sys.path.insert(0, tree)
    sys.path.insert(0, ext_dir)
    # The packages TorchTitan imports that a plain torch image lacks (tyro, torchdata, ...) are stood
    # in as titan's preflight stands them in; none of them computes.
    sys.path.insert(0, os.path.join(ext_dir, "preflight"))
    import rival_titan_check
    titan_torch_stand_ins()
    rival_titan_check.stand_in_missing()
    from torchtitan.config import ConfigManager
    job = ConfigManager().parse_args(["--job.config_file", job_toml])
    import importlib
    importlib.import_module(job.experimental.custom_import)
    from torchtitan.protocols.train_spec import get_train_spec
    from torchtitan.components.loss import cross_entropy_loss
    from torchtitan.distributed import utils as dist_utils
    spec = get_train_spec(job.model.name)
    margs = spec.model_args[job.model.flavor]
    margs.update_from_config(job)
    emit_fields("titan", "model args", margs)
    emit_fields("titan", "job.optimizer", job.optimizer)
    emit_fields("titan", "job.lr_scheduler", job.lr_scheduler)
    model = spec.model_cls(margs)
    with torch.no_grad():  # as TorchTitan's trainer calls it
        model.init_weights()
    config, tensors = read_checkpoint(ckpt)
    adapter = spec.state_dict_adapter(margs, None)
    sd = adapter.from_hf(tensors)  # TorchTitan's map raises on a name it does not know
    model.load_state_dict(sd, strict=True)
    model.to(DEVICE)
    back = {}
    for hf_name in tensors:  # TorchTitan's name of each HF parameter, by its own adapter
        back.update({k: canonical_hf(hf_name) for k in adapter.from_hf({hf_name: tensors[hf_name]})})
    opts = spec.build_optimizers_fn([model], job.optimizer, None)
    scheds = spec.build_lr_schedulers_fn(opts, job.lr_scheduler, job.training.steps)
    # The attention the model args select: attn_type from v0.2.2 on, use_flex_attn before.
    flex = margs.attn_type == "flex" if hasattr(margs, "attn_type") else getattr(margs, "use_flex_attn", False)
    per_token = titan_loss_per_token()
    if flex and CPU:
        eager_flex_attention()
    eos = types.SimpleNamespace(eos_id=int(config["eos_token_id"]))
    for step, batch in enumerate(read_batches(batches_path, gbs, steps, seq_len), start=1):
        lr = scheds.schedulers[0].get_last_lr()[0]  # what this step trains at, as train.py logs it
        opts.zero_grad()
        inputs, extra = batch[:, :-1], {}
        if flex:  # as TorchTitan's Trainer.forward_backward_step builds the masks for each batch
            extra["attention_masks"] = model.get_attention_masks(input_batch=inputs, tokenizer=eos, extra_inputs={})
        labels = batch[:, 1:]
        loss = cross_entropy_loss(forward(model, inputs, **extra), labels)
        if per_token:
            # The trainer's train_step counts the labels that are not IGNORE_INDEX over the global batch
            # and forward_backward_step divides the summed loss by that count (one rank, one
            # micro-batch here); every label of Rival's batches counts.
            from torchtitan.components.loss import IGNORE_INDEX
            loss = loss / (labels != IGNORE_INDEX).sum().float()
        loss.backward()
        grads = {back[n]: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        norm = dist_utils.clip_grad_norm_([p for p in model.parameters()], job.training.max_norm, foreach=True)
        opts.step()
        scheds.step()
        emit("titan", step, loss.item(), norm.item(), lr, grads, {back[n]: p for n, p in model.named_parameters()} if step == 1 else None)


# Names TorchTitan v0.2.2 imports at module level from a newer torch than the image's 2.6, none of
# which acts in a one-process run without parallelism or activation checkpointing: context
# parallelism's sharding and dispatch (CP 1), the pipeline schedules' helpers (PP 1), and the ops in
# the selective activation checkpointing save list (checkpointing is off here). Each missing one is a
# stand-in that cannot be used: a class that refuses to be made, an op that is only named.
TITAN_TORCH_NAMES = (
    ("torch.distributed.tensor.experimental._attention", ("_context_parallel_shard", "_ContextParallel",
                                                           "_enable_context_parallel_dispatcher", "_HeadTailLoadBalancer", "_PTRRLoadBalancer")),
    ("torch.distributed.pipelining.schedules", ("OVERLAP_F_B", "_PipelineContext", "_wait_batch_p2p")),
    ("torch._higher_order_ops", ("inductor_compiled_code",)),
)


class _Unusable:
    def __init__(self, *a, **k):
        raise RuntimeError("rival_conform: %s stands in for a name torch %s lacks" % (type(self).__qualname__, torch.__version__))


def titan_torch_stand_ins():
    """What TorchTitan v0.2.2 asks of a newer torch than the image's at import time (nothing where
    torch has it): TITAN_TORCH_NAMES; the varlen attention (torch.nn.attention.varlen, and its op in
    the checkpointing save list), which only attn_type varlen selects and no Rival launch does; and
    an Inductor option for compiling flex_attention."""
    import importlib
    import importlib.util
    for mod, names in TITAN_TORCH_NAMES:
        m = importlib.import_module(mod)
        for n in names:
            if not hasattr(m, n):
                setattr(m, n, type(n, (_Unusable,), {}))
    if not hasattr(torch.ops.torch_attn, "_varlen_attn"):
        torch.ops.torch_attn._varlen_attn = types.SimpleNamespace(default=_Unusable)
    if "torch.nn.attention.varlen" not in sys.modules and importlib.util.find_spec("torch.nn.attention.varlen") is None:
        def varlen_attn(*a, **k):
            raise RuntimeError("rival_conform: varlen attention called; torch %s has none" % torch.__version__)

        m = types.ModuleType("torch.nn.attention.varlen")
        m.varlen_attn = varlen_attn
        sys.modules[m.__name__] = m
        torch.nn.attention.varlen = m
    # FlexAttentionWrapper compiles flex_attention at import with an Inductor option torch 2.6 does
    # not know (wrap_inductor_compiled_regions: how compiled regions are wrapped, not what they
    # compute); torch.compile here drops the options this torch's Inductor lacks. On the CPU the
    # compiled function is replaced by the eager one anyway (eager_flex_attention).
    from torch._inductor import config as inductor_config
    known, compile_ = set(inductor_config.get_config_copy()), torch.compile
    if getattr(compile_, "_rival_known_options", False):
        return

    def compile_known(*a, **k):
        if k.get("options"):
            k["options"] = {o: v for o, v in k["options"].items() if o in known}
        return compile_(*a, **k)

    compile_known._rival_known_options = True
    torch.compile = compile_known


def titan_loss_per_token():
    """Whether this TorchTitan's trainer divides a summed loss by the global batch's valid tokens
    (v0.2.2: cross_entropy_loss sums, forward_backward_step takes global_valid_tokens) rather than
    taking the loss function's mean (v0.2.0). Read from train.py's source: importing it takes
    checkpoint and metrics code that asks for more of a newer torch."""
    import ast
    import importlib.util
    with open(importlib.util.find_spec("torchtitan.train").origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Trainer":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward_backward_step":
                    a = fn.args
                    return "global_valid_tokens" in [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    sys.exit("rival_conform titan: torchtitan/train.py has no Trainer.forward_backward_step")


def eager_flex_attention():
    """TorchTitan compiles flex_attention and create_block_mask (torch.compile), which on a CPU needs
    a C++ toolchain the image lacks; the eager functions compute the same attention and mask, unfused.
    TorchTitan builds its block masks on create_block_mask's default device, CUDA; here, the CPU."""
    import functools
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    from torchtitan.models import attention
    attention.FlexAttentionWrapper._compiled_flex_attn = flex_attention
    attention._compiled_create_block_mask = functools.partial(create_block_mask, device="cpu")


# ---- megatron: Megatron Core's GPTModel from the launch's own arguments ----

def qkv_split(t, heads, groups, head_dim):
    """Megatron's fused QKV rows (per query group: its queries, one key, one value) as q, k, v."""
    per = heads // groups
    x = t.reshape(groups, (per + 2) * head_dim, *t.shape[1:])
    q, k, v = torch.split(x, [per * head_dim, head_dim, head_dim], dim=1)
    return (q.reshape(heads * head_dim, *t.shape[1:]), k.reshape(groups * head_dim, *t.shape[1:]),
            v.reshape(groups * head_dim, *t.shape[1:]))


def qkv_fuse(q, k, v, heads, groups, head_dim):
    per = heads // groups
    rest = q.shape[1:]
    return torch.cat([q.reshape(groups, per * head_dim, *rest), k.reshape(groups, head_dim, *rest),
                      v.reshape(groups, head_dim, *rest)], dim=1).reshape(-1, *rest)


def megatron_state_dict(src, layers, heads, groups, head_dim):
    """Rival's mapping of Hugging Face names onto Megatron Core's local-spec GPTModel (the fused QKV
    by query group, gate and up stacked into linear_fc1 as SwiGLU chunks them), and the Hugging Face
    names it used."""
    used = set()

    def t(name):
        used.add(name)
        return src[name]

    sd = {"embedding.word_embeddings.weight": t("model.embed_tokens.weight"),
          "decoder.final_layernorm.weight": t("model.norm.weight"),
          "output_layer.weight": t("lm_head.weight")}
    for i in range(layers):
        h, d = "model.layers.%d." % i, "decoder.layers.%d." % i
        sd[d + "input_layernorm.weight"] = t(h + "input_layernorm.weight")
        sd[d + "pre_mlp_layernorm.weight"] = t(h + "post_attention_layernorm.weight")
        sd[d + "self_attention.linear_qkv.weight"] = qkv_fuse(*(t(h + "self_attn.%s_proj.weight" % x) for x in "qkv"), heads, groups, head_dim)
        if h + "self_attn.q_proj.bias" in src:
            sd[d + "self_attention.linear_qkv.bias"] = qkv_fuse(*(t(h + "self_attn.%s_proj.bias" % x) for x in "qkv"), heads, groups, head_dim)
        sd[d + "self_attention.linear_proj.weight"] = t(h + "self_attn.o_proj.weight")
        sd[d + "mlp.linear_fc1.weight"] = torch.cat([t(h + "mlp.gate_proj.weight"), t(h + "mlp.up_proj.weight")])
        sd[d + "mlp.linear_fc2.weight"] = t(h + "mlp.down_proj.weight")
    return sd, used


def megatron_canonical(model, heads, groups, head_dim, of):
    """of(p) for every parameter p of a Megatron GPTModel, under canonical names: the fused QKV split
    by query group, the fused gate and up halves apart (None where of gives None)."""
    out = {}
    for n, p in model.named_parameters():
        g = of(p)
        if g is None:
            continue
        m = re.match(r"decoder\.layers\.(\d+)\.(.+)$", n)
        if not m:
            out[{"embedding.word_embeddings.weight": "embedding", "decoder.final_layernorm.weight": "final_norm",
                 "output_layer.weight": "output"}[n]] = g
            continue
        pre, rest = "layers.%s." % m.group(1), m.group(2)
        if rest.startswith("self_attention.linear_qkv."):
            suffix = "_bias" if rest.endswith("bias") else ""
            for part, t in zip("qkv", qkv_split(g, heads, groups, head_dim)):
                out[pre + part + suffix] = t
        elif rest == "mlp.linear_fc1.weight":
            out[pre + "gate"], out[pre + "up"] = torch.chunk(g, 2, dim=0)
        else:
            out[pre + {"input_layernorm.weight": "attn_norm", "pre_mlp_layernorm.weight": "mlp_norm",
                       "self_attention.linear_proj.weight": "o", "mlp.linear_fc2.weight": "down"}[rest]] = g
    return out


def megatron_grads(model, heads, groups, head_dim):
    return megatron_canonical(model, heads, groups, head_dim, lambda p: None if p.grad is None else p.grad.clone())


def megatron_layout(model, heads, groups, head_dim):
    return megatron_canonical(model, heads, groups, head_dim, lambda p: p.detach())


class _CPUScratch:
    """torch, except that the scratch buffers clip_grads.py and its local multi-tensor fallbacks
    (megatron/core/utils.py) make on device "cuda" (an overflow flag, the norm) are made on the CPU."""

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def _cpu(kw):
        if kw.get("device") == "cuda":
            kw["device"] = "cpu"
        return kw

    def zeros(self, *a, **kw):
        return torch.zeros(*a, **self._cpu(kw))

    def tensor(self, *a, **kw):
        return torch.tensor(*a, **self._cpu(kw))

    def ones(self, *a, **kw):
        return torch.ones(*a, **self._cpu(kw))


def megatron_stand_ins():
    """What Megatron Core asks of CUDA that does not change the numbers on the CPU: the device it
    moves the rotary frequencies to, the dropout RNG tracker's fork (every dropout is 0), the
    device of clip_grads.py's scratch buffers and of the attention masks transformer/utils.py makes
    (the sliding window's among them). On a GPU nothing is stood in: Megatron's own model-parallel
    RNG is seeded as its training seeds it."""
    if not CPU:
        from megatron.core.tensor_parallel import model_parallel_cuda_manual_seed
        model_parallel_cuda_manual_seed(1234)
        return
    torch.cuda.current_device = lambda: "cpu"
    from megatron.core.tensor_parallel import random as mrandom
    mrandom.get_cuda_rng_tracker().fork = lambda *a, **k: contextlib.nullcontext()
    from megatron.core import utils as mutils
    from megatron.core.optimizer import clip_grads
    from megatron.core.transformer import utils as tutils
    clip_grads.torch = mutils.torch = tutils.torch = _CPUScratch()


class _NoKernel:
    """A Triton kernel that cannot launch: the stand-in's @triton.jit."""

    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        raise RuntimeError("rival_conform: Triton kernel %s launched; the conformance has no Triton" % self.fn.__qualname__)

    __call__ = __getitem__


class _PagedStashTriton:
    """Megatron Core 0.18 imports triton without a fallback in transformer/moe/paged_stash.py, the
    MoE paged stash (acting only with moe_paged_stash, which needs experts), reached from
    gpt_model.py and the pipeline schedules; the image has no triton. That one module gets a
    stand-in while it executes (jit keeps the kernel, which cannot launch; tl.constexpr for its
    annotations), then it is dropped, so Megatron's guarded imports of triton still fail and keep
    their local paths."""

    NAME = "megatron.core.transformer.moe.paged_stash"

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery
        if fullname != self.NAME:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None:
            return None
        real = spec.loader

        class Loader:
            def create_module(self, s):
                return real.create_module(s)

            def exec_module(self, module):
                triton = types.ModuleType("triton")
                triton.jit = _NoKernel
                triton.__path__ = []
                lang = types.ModuleType("triton.language")
                lang.constexpr = type("constexpr", (), {})
                triton.language = lang
                sys.modules.update({"triton": triton, "triton.language": lang})
                try:
                    real.exec_module(module)
                finally:
                    del sys.modules["triton"], sys.modules["triton.language"]

        spec.loader = Loader()
        return spec


def megatron_without_triton():
    """Installs _PagedStashTriton where there is no triton (a tree without the module is untouched)."""
    import importlib.util
    if importlib.util.find_spec("triton") is None and not any(isinstance(f, _PagedStashTriton) for f in sys.meta_path):
        sys.meta_path.insert(0, _PagedStashTriton())


def megatron_process_group():
    import tempfile
    import torch.distributed as dist
    dist.init_process_group("gloo" if CPU else "nccl", init_method="file://" + tempfile.mktemp(prefix="rival-conform-pg-"), rank=0, world_size=1)


def run_megatron(ckpt, batches_path, gbs, steps, seq_len, tree, preflight_dir, argv):
    """mega: Megatron's arguments from the launch's own argv, parsed and validated by Megatron."""
    import argparse
    import io
    sys.path.insert(0, tree)
    megatron_without_triton()
    megatron_process_group()
    # megatron.training's __init__ imports the whole training stack; only its arguments module is
    # needed, loaded as mega's preflight loads it (the package's other names stood in, torch real).
    sys.path.insert(0, preflight_dir)
    import pystubs
    pystubs.skip_package_init("megatron.training", os.path.join(tree, "megatron", "training"))
    from megatron.training import arguments
    parser = argparse.ArgumentParser(allow_abbrev=False)
    arguments.add_megatron_arguments(parser)
    args = parser.parse_args(argv)
    args.rank, args.world_size = 0, 1
    with contextlib.redirect_stdout(io.StringIO()):
        arguments.validate_args(args, {})
    train_megatron("megatron", ckpt, batches_path, gbs, steps, seq_len, arguments, args)


def run_primus(ckpt, batches_path, gbs, steps, seq_len, primus_tree, mtree, preflight_dir, exp, overrides):
    """prim: Megatron's arguments as Primus's runtime builds them from the launch's experiment file and
    the run's command-line overrides (preflight.py's primus_runtime: config merge, the Megatron
    adapter, the setup and before_train patch phases, validate_args with Primus's checks), then Megatron Core's model and
    training step on those arguments (train_megatron)."""
    os.environ.update(WORLD_SIZE="1", RANK="0", LOCAL_RANK="0")
    megatron_without_triton()
    sys.path.insert(0, preflight_dir)
    import pystubs
    # torch, NumPy and YAML are real here; everything else the runtime only imports stays stood in,
    # and six too (the image lacks it; only Megatron's BERT tokenizer, never built here, imports it).
    pystubs.STUBBED = tuple(n for n in pystubs.STUBBED if n.split(".")[0] not in ("torch", "numpy", "multistorageclient")) + ("six",)
    pystubs.install()
    import preflight
    sys.path.insert(0, primus_tree)
    arguments, mtree = preflight.megatron(mtree)
    megatron_process_group()
    # Stand-in: validate_args asks the GPU's compute capability (GroupedGEMM's check, which Primus's
    # Qwen config reaches); the run's GPUs report RIVAL_DEVICE_CAPABILITY (MI300X: 9.4).
    major, _, minor = os.environ.get("RIVAL_DEVICE_CAPABILITY", "9.4").partition(".")
    capability = torch.cuda.get_device_capability
    torch.cuda.get_device_capability = lambda *a, **k: (int(major), int(minor or 0))
    with contextlib.redirect_stdout(sys.stderr):
        args, _ = preflight.primus_runtime(exp, mtree, arguments, overrides)
    torch.cuda.get_device_capability = capability
    args.rank, args.world_size = 0, 1
    # The runtime needed stand-ins for what Primus imports (Transformer Engine among them); the model
    # must not see them, or Megatron takes the stood-in Transformer Engine for a real one. So the
    # stand-ins go, with every Megatron and Primus module imported beside them, and the model comes
    # from a clean import of the same tree. The patches Primus applied (the "preflight primus
    # patches" line; the test holds the list) act on arguments, logging, checkpoints, the profiler
    # and pipeline layouts, not on a dense model's numbers.
    sys.meta_path[:] = [f for f in sys.meta_path if f is not pystubs._finder]
    for n in list(sys.modules):
        if n.split(".")[0] in ("megatron", "primus", "preflight", "effective") or pystubs._stubbed(n):
            del sys.modules[n]
    pystubs.skip_package_init("megatron.training", os.path.join(mtree, "megatron", "training"))
    from megatron.training import arguments
    train_megatron("primus", ckpt, batches_path, gbs, steps, seq_len, arguments, args)


def run_nemo(ckpt, batches_path, gbs, steps, seq_len, bridge_tree, mtree, launch_dir):
    """nemo: Megatron-Bridge's ConfigContainer from the launch's own rival_nemo.json (rival_nemo.py's
    build_config), Bridge's runtime_config_update, the model from the provider's provide() (for
    Llama 3.1, Bridge 0.3's Llama31ModelProvider or 0.5's GPTModelProvider with rope_scaling, which
    scale the RoPE frequencies), Bridge's optimizer-group overrides and scheduler (optim.py), and
    Bridge's masked next-token loss (losses.py)."""
    os.environ.update(WORLD_SIZE="1", RANK="0", LOCAL_RANK="0")
    sys.path[:0] = [os.path.join(launch_dir, "preflight"), launch_dir]
    import pystubs
    pystubs.add_trees(bridge_tree, mtree)
    megatron_without_triton()
    megatron_process_group()
    # Megatron Core's model, optimizer and clip modules are imported first, as on a machine without
    # Transformer Engine or Apex: each decides at import time between their kernels and its local
    # paths. Bridge's modules import Transformer Engine without a fallback, so after that what the
    # image has and this one lacks (Transformer Engine, transformers, ...) is stood in; torch and
    # NumPy stay real.
    import importlib
    for mod in ("megatron.core.models.gpt.gpt_model", "megatron.core.models.gpt.gpt_layer_specs",
                "megatron.core.optimizer", "megatron.core.optimizer.clip_grads",
                "megatron.core.optimizer_param_scheduler", "megatron.core.transformer.torch_norm"):
        importlib.import_module(mod)
    for mod in ("transformer_engine", "apex"):
        if mod in sys.modules:
            sys.exit("rival_conform nemo: %s is installed here; the conformance runs Megatron's local paths" % mod)
    pystubs.STUBBED = tuple(n for n in pystubs.STUBBED if n.split(".")[0] not in ("torch", "numpy", "multistorageclient")) + ("six",)
    pystubs.install()
    import rival_nemo
    with open(os.path.join(launch_dir, "rival_nemo.json"), encoding="utf-8") as f:
        cfg = rival_nemo.build_config(json.load(f))
    _, tensors = read_checkpoint(ckpt)
    m = cfg.model
    # Stand-in: Bridge's setup sizes the vocabulary from the tokenizer; here it is the checkpoint's.
    m.vocab_size, m.should_pad_vocab = tensors["model.embed_tokens.weight"].shape[0], False
    # Conformance runs in fp32 (or bf16 as in train_megatron), with the unfused paths and Bridge's
    # local layer spec (set before Bridge's validation, which finalizes the provider's
    # TransformerConfig).
    m.bf16, m.fp16 = BF16, False
    m.params_dtype = torch.float32
    m.use_cpu_initialization = True
    for fusion in ("bias_activation_fusion", "masked_softmax_fusion", "bias_dropout_fusion", "apply_rope_fusion",
                   "gradient_accumulation_fusion", "cross_entropy_loss_fusion", "persist_layer_norm"):
        setattr(m, fusion, False)
    from megatron.bridge.training.config import runtime_config_update
    with contextlib.redirect_stdout(sys.stderr):
        runtime_config_update(cfg)
    from megatron.bridge.models.gpt_provider import local_layer_spec
    m.transformer_layer_spec = local_layer_spec
    from megatron.core import parallel_state
    parallel_state.initialize_model_parallel(1, 1)
    megatron_stand_ins()
    from megatron.core.process_groups_config import ProcessGroupCollection
    m._pg_collection = ProcessGroupCollection.use_mpu_process_groups()
    model = m.provide(pre_process=True, post_process=True)
    emit_config("nemo", model.config)
    from megatron.core.transformer.transformer_config import TransformerConfig
    import dataclasses
    core_fields = {f.name for f in dataclasses.fields(TransformerConfig)}
    emit_fields("nemo", "provider", {f.name: getattr(m, f.name, None) for f in dataclasses.fields(m) if f.name not in core_fields})
    emit_fields("nemo", "OptimizerConfig", cfg.optimizer)
    heads, groups, head_dim = m.num_attention_heads, m.num_query_groups or m.num_attention_heads, m.kv_channels
    load_megatron_weights("nemo", model, ckpt, tensors, m.num_layers, heads, groups, head_dim)
    from megatron.bridge.training.optim import _get_scheduler
    from megatron.bridge.training.losses import masked_next_token_loss
    opt_cfg = cfg.optimizer
    groups_ = megatron_param_groups(model, opt_cfg, bridge_overrides(cfg, model))
    opt = torch.optim.AdamW(groups_, lr=opt_cfg.lr, weight_decay=opt_cfg.weight_decay,
                            betas=(opt_cfg.adam_beta1, opt_cfg.adam_beta2), eps=opt_cfg.adam_eps)
    sched = _get_scheduler(opt_cfg, cfg.scheduler, opt)
    emit_fields("nemo", "OptimizerParamScheduler", scheduler_fields(sched))
    step_samples = cfg.train.global_batch_size
    for step, batch in enumerate(read_batches(batches_path, gbs, steps, seq_len), start=1):
        lr = opt.param_groups[0]["lr"]
        opt.zero_grad(set_to_none=True)
        tokens, labels = batch[:, :-1], batch[:, 1:]
        per_token = forward(model, *megatron_inputs(tokens), labels=labels)
        # gpt_step's loss: the masked sum and the token count; Megatron's schedule divides one by
        # the other (calculate_per_token_loss off, one micro-batch).
        total, count, _ = masked_next_token_loss(torch.ones_like(labels, dtype=torch.float32), per_token)
        loss = total / count
        loss.backward()
        grads = megatron_grads(model, heads, groups, head_dim)
        norm = megatron_clip(model, opt_cfg.clip_grad)
        opt.step()
        sched.step(increment=step_samples)
        emit("nemo", step, loss.item(), norm, lr, grads, megatron_layout(model, heads, groups, head_dim) if step == 1 else None)


def bridge_overrides(cfg, model):
    """Bridge's weight-decay and lr overrides (optim.py's OptimizerConfigOverrideProvider), or None
    where this Bridge has none."""
    try:
        from megatron.bridge.training.optim import OptimizerConfigOverrideProvider, OptimizerConfigOverrideProviderContext
    except ImportError:
        return None
    ctx = OptimizerConfigOverrideProviderContext(cfg.scheduler, cfg.optimizer, [model])
    # The configuration's own provider, as Bridge's setup takes it, else Bridge's default one.
    provider = getattr(cfg, "optimizer_config_override_provider", None) or OptimizerConfigOverrideProvider()
    return provider.build_config_overrides(ctx)


def train_megatron(name, ckpt, batches_path, gbs, steps, seq_len, arguments, args):
    """Megatron Core's GPTModel, loss, param groups, scheduler, grad norm and clip on args."""
    # Megatron's own precision switches: fp32, or bf16 (softmax and loss in fp32 as a bf16 run
    # computes them); the parameters stay fp32, the master weights forward casts from.
    args.bf16, args.fp16 = BF16, False
    args.params_dtype = torch.float32
    args.use_cpu_initialization = True
    args.transformer_impl = "local"
    # The fused kernels are CUDA's; each computes what its unfused path computes. The two MoE
    # switches (Primus's Qwen config sets them) act on experts only, and these models have none.
    if getattr(args, "num_experts", None):
        sys.exit("rival_conform %s: the launch builds %s experts: the conformance models are dense" % (name, args.num_experts))
    for fusion in ("bias_swiglu_fusion", "masked_softmax_fusion", "bias_dropout_fusion", "apply_rope_fusion",
                   "gradient_accumulation_fusion", "cross_entropy_loss_fusion", "moe_permute_fusion", "moe_grouped_gemm"):
        if hasattr(args, fusion):
            setattr(args, fusion, False)
    args.no_persist_layer_norm = True
    cfg = arguments.core_transformer_config_from_args(args)
    from megatron.core import parallel_state
    parallel_state.initialize_model_parallel(1, 1)
    megatron_stand_ins()
    from megatron.core.models.gpt.gpt_model import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    _, tensors = read_checkpoint(ckpt)
    vocab = tensors["model.embed_tokens.weight"].shape[0]
    # gpt_builders.py's GPTModel arguments, from the same args.
    model = GPTModel(config=cfg, transformer_layer_spec=get_gpt_layer_local_spec(normalization=args.normalization, qk_layernorm=args.qk_layernorm),
                     vocab_size=vocab, max_sequence_length=args.max_position_embeddings,
                     pre_process=True, post_process=True, fp16_lm_cross_entropy=args.fp16_lm_cross_entropy,
                     parallel_output=True, share_embeddings_and_output_weights=not args.untie_embeddings_and_output_weights,
                     position_embedding_type=args.position_embedding_type, rotary_percent=args.rotary_percent,
                     rotary_base=args.rotary_base, rope_scaling=args.use_rope_scaling,
                     rope_scaling_factor=args.rope_scaling_factor)
    emit_config(name, model.config)
    heads, groups = cfg.num_attention_heads, cfg.num_query_groups or cfg.num_attention_heads
    head_dim = cfg.kv_channels
    load_megatron_weights(name, model, ckpt, tensors, cfg.num_layers, heads, groups, head_dim)
    opt_cfg = megatron_optimizer_config(args)
    emit_fields(name, "OptimizerConfig", opt_cfg)
    groups_ = megatron_param_groups(model, opt_cfg)
    opt = torch.optim.AdamW(groups_, lr=opt_cfg.lr, weight_decay=opt_cfg.weight_decay,
                            betas=(opt_cfg.adam_beta1, opt_cfg.adam_beta2), eps=opt_cfg.adam_eps)
    sched = megatron_scheduler(opt, args)
    emit_fields(name, "OptimizerParamScheduler", scheduler_fields(sched))
    for step, batch in enumerate(read_batches(batches_path, gbs, steps, seq_len), start=1):
        lr = opt.param_groups[0]["lr"]
        opt.zero_grad(set_to_none=True)
        tokens, labels = batch[:, :-1], batch[:, 1:]
        per_token = forward(model, *megatron_inputs(tokens), labels=labels)
        loss = per_token.float().sum() / per_token.numel()  # pretrain_gpt's loss_func, every token counted
        loss.backward()
        grads = megatron_grads(model, heads, groups, head_dim)
        norm = megatron_clip(model, args.clip_grad)
        opt.step()
        sched.step(increment=args.global_batch_size)
        emit(name, step, loss.item(), norm, lr, grads, megatron_layout(model, heads, groups, head_dim) if step == 1 else None)


def load_megatron_weights(name, model, ckpt, tensors, layers, heads, groups, head_dim):
    """The checkpoint into a Megatron GPTModel: every tensor used, every parameter filled."""
    if "lm_head.weight" not in tensors:
        sys.exit("rival_conform %s: %s has no lm_head.weight: the conformance checkpoints are untied" % (name, ckpt))
    sd, used = megatron_state_dict(tensors, layers, heads, groups, head_dim)
    all_used(ckpt, tensors, used, name)
    # Megatron's local modules keep extra state (e.g. _extra_state); every parameter must be filled.
    missing = [n for n, _ in model.named_parameters() if n not in sd]
    if missing:
        sys.exit("rival_conform %s: %s does not fill %s" % (name, ckpt, missing))
    unexpected = model.load_state_dict(sd, strict=False).unexpected_keys
    if unexpected:
        sys.exit("rival_conform %s: the model has no %s for %s" % (name, unexpected, ckpt))
    model.to(DEVICE)
    for p in model.parameters():
        # What Megatron's DDP wrapper marks: no parameter is shared or tensor-parallel duplicated here.
        p.shared = getattr(p, "shared", False)


def megatron_clip(model, clip):
    """Megatron's gradient norm (fp32) and clip by total norm; returns the norm before clipping."""
    from megatron.core.optimizer.clip_grads import get_grad_norm_fp32, clip_grad_by_total_norm_fp32
    params = [p for p in model.parameters() if p.grad is not None]
    norm = get_grad_norm_fp32([p.grad for p in params])
    for p in params:
        # clip_grads.py asserts CUDA gradients on its plain path; its decoupled-gradient path takes
        # the same tensors (the same objects: scaling them scales p.grad).
        p.decoupled_grad = p.grad
    clip_grad_by_total_norm_fp32(params, clip, norm, use_decoupled_grad=True)
    return norm


def megatron_inputs(tokens):
    """GPTModel's inputs besides the labels: the tokens, their positions 0 .. s - 1 and the causal
    mask (True: masked). Stand-in: Megatron's default causal mask is built on "cuda"; this is the
    same mask, on the CPU (with a window, Megatron builds the window's mask itself)."""
    s = tokens.shape[1]
    pos = torch.arange(s, device=tokens.device).unsqueeze(0).expand_as(tokens)
    return tokens, pos, torch.triu(torch.ones(s, s, device=tokens.device), diagonal=1).bool()[None, None]


def megatron_scheduler(opt, args):
    """OptimizerParamScheduler as training.py's get_optimizer_param_scheduler builds it for a run by
    iterations: steps counted in samples (iterations × GBS), decay over lr_decay_iters (else
    train_iters), warm-up by lr_warmup_fraction of the decay when set (else lr_warmup_iters), and
    the checkpoint, override and WSD settings from the arguments."""
    from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
    if not args.train_iters:
        sys.exit("rival_conform: the launch counts training in samples (--train-samples): Rival's launches count iterations")
    gbs = args.global_batch_size
    decay = (args.lr_decay_iters if args.lr_decay_iters is not None else args.train_iters) * gbs
    warmup = args.lr_warmup_fraction * decay if args.lr_warmup_fraction is not None else args.lr_warmup_iters * gbs
    wsd = args.lr_wsd_decay_iters * gbs if args.lr_wsd_decay_iters is not None else None
    return OptimizerParamScheduler(
        opt, init_lr=args.lr_warmup_init, max_lr=args.lr, min_lr=args.min_lr, lr_warmup_steps=warmup,
        lr_decay_steps=decay, lr_decay_style=args.lr_decay_style, start_wd=args.start_weight_decay,
        end_wd=args.end_weight_decay, wd_incr_steps=args.train_iters * gbs, wd_incr_style=args.weight_decay_incr_style,
        use_checkpoint_opt_param_scheduler=args.use_checkpoint_opt_param_scheduler,
        override_opt_param_scheduler=args.override_opt_param_scheduler,
        wsd_decay_steps=wsd, lr_wsd_decay_style=args.lr_wsd_decay_style)


def megatron_optimizer_config(args):
    """The optimizer config Megatron's training builds from its arguments (training.py's
    get_megatron_optimizer_config for Adam): every field of the Adam config class that the
    arguments hold, the class's defaults for the rest."""
    import dataclasses
    from megatron.core import optimizer
    cls = getattr(optimizer, "AdamOptimizerConfig", None) or optimizer.OptimizerConfig
    if args.optimizer != "adam":
        sys.exit("rival_conform: the launch's optimizer is %s: Rival trains Adam" % args.optimizer)
    return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)})


def megatron_param_groups(model, config, overrides=None):
    """Megatron's own grouping (its no-decay rule and lr settings) as torch optimizer groups, from an
    OptimizerConfig; overrides are a framework's own config overrides (Megatron's standard ones when
    None)."""
    import inspect
    from megatron.core.optimizer import _get_param_groups as get_groups
    params = inspect.signature(get_groups).parameters
    kw = {}
    if "no_weight_decay_cond" in params:
        kw["no_weight_decay_cond"] = None
    if "scale_lr_cond" in params:
        kw["scale_lr_cond"] = None
    if "lr_mult" in params:
        kw["lr_mult"] = 1.0
    for k, v in (("lr", config.lr), ("min_lr", config.min_lr), ("decoupled_lr", None), ("decoupled_min_lr", None),
                 ("default_skip_embedding_weight_decay", False)):
        if k in params:
            kw[k] = v
    if "config" in params:
        kw["config"] = config
    if "config_overrides" in params:
        if overrides is None:
            from megatron.core.optimizer import get_standard_config_overrides
            overrides = get_standard_config_overrides(config)
        kw["config_overrides"] = overrides
    # The groups keep Megatron's keys (wd_mult, lr_mult, max_lr, ...): OptimizerParamScheduler sets
    # each group's rate and decay from them at every step.
    return [dict(g, params=list(g["params"]), weight_decay=config.weight_decay * g.get("wd_mult", 1.0))
            for g in get_groups([model], **kw)]


def run_titan_train(tree, ext_dir, argv):
    """TorchTitan's own training (torchtitan.train run as __main__, as torchrun -m starts it) on a
    launch's job file, with Rival's extension beside it. The packages a plain torch lacks and that
    compute nothing (tyro, torchdata, ...) are stood in as titan's preflight stands them in."""
    sys.path[:0] = [tree, ext_dir, os.path.join(ext_dir, "preflight")]
    import runpy
    import rival_titan_check
    rival_titan_check.stand_in_missing()
    sys.argv = ["torchtitan.train"] + argv
    runpy.run_module("torchtitan.train", run_name="__main__", alter_sys=True)


def main(argv):
    if argv[1:2] == ["titan-train"] and len(argv) >= 5 and argv[4] == "--":
        return run_titan_train(argv[2], argv[3], argv[5:])
    if len(argv) < 7:
        sys.exit(__doc__)
    deterministic()
    kind, ckpt, batches, (gbs, steps, seq_len), rest = argv[1], argv[2], argv[3], map(int, argv[4:7]), argv[7:]
    if kind == "fsdp" and rest[:1] == ["--"]:
        run_fsdp(ckpt, batches, gbs, steps, seq_len, rest[1:])
    elif kind == "titan" and len(rest) == 3:
        run_titan(ckpt, batches, gbs, steps, seq_len, *rest)
    elif kind == "megatron" and len(rest) > 3 and rest[2] == "--":
        run_megatron(ckpt, batches, gbs, steps, seq_len, rest[0], rest[1], rest[3:])
    elif kind == "nemo" and len(rest) == 3:
        run_nemo(ckpt, batches, gbs, steps, seq_len, *rest)
    elif kind == "primus" and len(rest) >= 4 and rest[4:5] in ([], ["--"]):
        run_primus(ckpt, batches, gbs, steps, seq_len, rest[0], rest[1], rest[2], rest[3], rest[5:])
    else:
        sys.exit(__doc__)

if __name__ == "__main__":
    main(sys.argv)
