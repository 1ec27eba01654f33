"""The effective configuration: what a framework built after all its defaults and merges, read back
from the objects the framework's own code produced, in one shape for every framework.

Rival's Go side (frameworks/effective) compares it field by field with the workload. The keys are
that package's JSON names; a value the framework's code does not decide is left out and named in
"unread" with the reason.

Used by preflight.py (Megatron args + TransformerConfig for mega and prim); standard library only.
"""

import importlib
import json
import os
import types

# Parameters of a Megatron GPT model (TE layer spec), one of each kind, with their shapes' ranks:
# the optimizer's weight-decay rule is asked about each.
MEGATRON_PARAMS = [
    ("embedding", "embedding.word_embeddings.weight", 2),
    ("norm", "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight", 1),
    ("norm", "decoder.layers.0.mlp.linear_fc1.layer_norm_weight", 1),
    ("norm", "decoder.final_layernorm.weight", 1),
    ("linear", "decoder.layers.0.self_attention.linear_qkv.weight", 2),
    ("bias", "decoder.layers.0.self_attention.linear_qkv.bias", 1),
    ("linear", "decoder.layers.0.self_attention.linear_proj.weight", 2),
    ("linear", "decoder.layers.0.mlp.linear_fc1.weight", 2),
    ("linear", "decoder.layers.0.mlp.linear_fc2.weight", 2),
    ("output", "output_layer.weight", 2),
]

PREFIX = "preflight effective: "


def tokenizer_vocab(path):
    """len(tokenizer) of a Hugging Face tokenizer.json (the file, or the folder holding it): the ids
    of its model vocabulary and added tokens. None when the file is not there."""
    if path and os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    if not path or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    ids = set((tok.get("model") or {}).get("vocab", {}).values())
    ids.update(a["id"] for a in tok.get("added_tokens") or [])
    return len(ids)


def std_of(init):
    """The std of a Megatron init method (functools.partial(torch.nn.init.normal_, std=...))."""
    kw = getattr(init, "keywords", None) or {}
    v = kw.get("std")
    return float(v) if isinstance(v, (int, float)) else None


def megatron_no_decay(args):
    """The parameter kinds Megatron's optimizer gives weight-decay multiplier 0, by asking its own
    get_standard_config_overrides about one parameter of each kind."""
    opt = importlib.import_module("megatron.core.optimizer")
    oc = importlib.import_module("megatron.core.optimizer.optimizer_config")
    kw = {"weight_decay": args.weight_decay}
    for k in ("apply_wd_to_qk_layernorm", "decoupled_lr", "decoupled_min_lr"):
        if hasattr(args, k) and k in getattr(oc.OptimizerConfig, "__dataclass_fields__", {}):
            kw[k] = getattr(args, k)
    overrides = opt.get_standard_config_overrides(oc.OptimizerConfig(**kw))
    decayed = {}
    for kind, name, rank in MEGATRON_PARAMS:
        p = types.SimpleNamespace(shape=(8,) * rank)
        mult = 1.0
        for key, o in overrides.items():
            if key.matches(p, name) and "wd_mult" in o:
                mult *= o["wd_mult"]
        decayed.setdefault(kind, []).append(mult != 0)
    bad = [k for k, v in decayed.items() if len(set(v)) != 1]
    if bad:
        raise ValueError("Megatron's weight-decay rule splits parameter kind(s) %s" % bad)
    return sorted(k for k, v in decayed.items() if not v[0])


def megatron_rope_scaling(args):
    """Llama 3 RoPE scaling as Megatron's GPTModel builds it: gpt_builders.py passes use_rope_scaling
    and rope_scaling_factor to RotaryEmbedding, whose _apply_scaling fixes the other three numbers as
    its own defaults, read here from this tree's signature."""
    if args.position_embedding_type != "rope" or not getattr(args, "use_rope_scaling", False):
        return {"rope_scaling": 1.0, "rope_scaling_low_freq_factor": 0.0, "rope_scaling_high_freq_factor": 0.0,
                "rope_scaling_original_positions": 0}
    import inspect
    from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
    d = {k: p.default for k, p in inspect.signature(RotaryEmbedding._apply_scaling).parameters.items()}
    return {"rope_scaling": float(args.rope_scaling_factor),
            "rope_scaling_low_freq_factor": float(d["low_freq_factor"]),
            "rope_scaling_high_freq_factor": float(d["high_freq_factor"]),
            "rope_scaling_original_positions": int(d["original_max_position_embeddings"])}


def megatron(args, cfg, tokenizer_module=None):
    """The effective configuration of a Megatron run from its validated args and TransformerConfig."""
    out, unread = {}, []
    out["hidden"] = cfg.hidden_size
    out["layers"] = cfg.num_layers
    out["heads"] = cfg.num_attention_heads
    out["kv_heads"] = cfg.num_query_groups or cfg.num_attention_heads
    out["ffn"] = cfg.ffn_hidden_size
    out["head_dim"] = int(cfg.kv_channels)
    out["rotary_percent"] = float(args.rotary_percent)
    out["qk_norm"] = bool(cfg.qk_layernorm)
    out["activation"] = "swiglu" if cfg.gated_linear_unit else "gelu"
    out["norm"] = cfg.normalization
    out["norm_eps"] = float(cfg.layernorm_epsilon)
    out["rope_theta"] = float(args.rotary_base) if args.position_embedding_type == "rope" else 0.0
    out.update(megatron_rope_scaling(args))
    w = cfg.window_size
    out["window"] = int(w[0]) if w and w[0] is not None and w[0] >= 0 else 0
    out["qkv_bias"] = bool(cfg.add_qkv_bias or cfg.add_bias_linear)
    out["linear_bias"] = bool(cfg.add_bias_linear)
    out["tied_embeddings"] = not args.untie_embeddings_and_output_weights
    out["init_std"] = float(cfg.init_method_std)
    emb = getattr(cfg, "embedding_init_method_std", None)
    out["embedding_init_std"] = float(emb if emb is not None else cfg.init_method_std)
    out["residual_init_std"] = std_of(cfg.output_layer_init_method)
    out["output_init_std"] = std_of(cfg.init_method)  # GPTModel's output layer uses init_method
    out["hidden_dropout"] = float(cfg.hidden_dropout)
    out["attention_dropout"] = float(cfg.attention_dropout)
    if cfg.fp8:
        out["precision"] = "fp8"
        out["fp8_recipe"] = "%s/%s" % (getattr(cfg.fp8, "value", cfg.fp8), getattr(cfg.fp8_recipe, "value", cfg.fp8_recipe))
    else:
        out["precision"] = "bf16" if cfg.bf16 else ("fp16" if cfg.fp16 else "fp32")
        out["fp8_recipe"] = ""
    out["adam_beta1"] = float(args.adam_beta1)
    out["adam_beta2"] = float(args.adam_beta2)
    out["adam_eps"] = float(args.adam_eps)
    out["weight_decay"] = float(args.weight_decay)
    out["no_decay"] = megatron_no_decay(args)
    out["lr"] = float(args.lr)
    out["min_lr"] = float(args.min_lr)
    out["lr_decay_style"] = args.lr_decay_style
    out["lr_warmup_iters"] = int(args.lr_warmup_iters or 0)
    out["lr_warmup_init"] = float(getattr(args, "lr_warmup_init", 0.0) or 0.0)
    out["lr_decay_iters"] = int(args.lr_decay_iters or args.train_iters)
    out["clip_grad"] = float(args.clip_grad)
    out["gbs"] = int(args.global_batch_size)
    out["mbs"] = int(args.micro_batch_size)
    out["seq_len"] = int(args.seq_length)
    out["eod_mask_loss"] = bool(args.eod_mask_loss)
    out["reset_position_ids"] = bool(args.reset_position_ids)
    out["reset_attention_mask"] = bool(args.reset_attention_mask)
    out["train_iters"] = int(args.train_iters)
    out["seed"] = int(args.seed)
    n = tokenizer_vocab(getattr(args, "tokenizer_model", None))
    if n is None:
        unread.append("vocab: no tokenizer.json at %s (Megatron pads len(tokenizer))" % getattr(args, "tokenizer_model", None))
    else:
        out["vocab"] = int(padded_vocab(tokenizer_module)(n, args, logging_enabled=False))
    if unread:
        out["unread"] = unread
    return out


def padded_vocab(tokenizer_module=None):
    """Megatron's own vocabulary padding: the tokenizer module's _vocab_size_with_padding (Megatron
    Core 0.16 and Primus's copy of it), else Core 0.18's vocab_size_with_padding, where the training
    tokenizer module is gone and the padding moved to megatron.core.tokenizers."""
    if tokenizer_module is not None:
        return tokenizer_module._vocab_size_with_padding
    try:
        return importlib.import_module("megatron.training.tokenizer.tokenizer")._vocab_size_with_padding
    except ModuleNotFoundError:
        return importlib.import_module("megatron.core.tokenizers.utils.build_tokenizer").vocab_size_with_padding


def emit(cfg):
    print(PREFIX + json.dumps(cfg, sort_keys=True))


# The Megatron-family knobs (core.MegatronKnobs): settings that change speed or the loss beyond the
# workload's model and recipe, which every mega, prim and nemo launch sets to core.Fairness. The
# launch carries Rival's values in knobs.json beside this file; the preflight reads back what the
# framework's own objects hold and fails on any difference.
KNOBS_FILE = "knobs.json"
KNOBS_PREFIX = "preflight knobs: "


def _name(v):
    """An enum member's name (Megatron's AttnBackend), else the value."""
    return getattr(v, "name", v)


# Megatron's LanguageModule._set_attention_backend: the NVTE_* switches (flash, fused, unfused) each
# AttnBackend member sets for Transformer Engine.
NVTE_BACKENDS = {(1, 1, 1): "auto", (1, 0, 0): "flash", (0, 1, 0): "fused", (0, 0, 1): "unfused", (0, 0, 0): "local"}


def attention_backend(value, env):
    """The attention backend a Megatron model runs with. An AttnBackend member is what Megatron sets;
    a string (Primus hands Megatron its YAML value unconverted) matches no member, so Megatron sets no
    NVTE_* switch and Transformer Engine follows the environment (an unset switch is on)."""
    if not isinstance(value, str) and str(_name(value)) != "auto":
        return str(_name(value))
    # auto, as a member too: Megatron asserts the switches unset or on, and Primus v26.5's ROCm patch
    # (megatron.attention_backend.rocm_safe) keeps a switch the environment turned off, so the
    # environment decides there as well.
    keys = ("NVTE_FLASH_ATTN", "NVTE_FUSED_ATTN", "NVTE_UNFUSED_ATTN")
    bits = tuple(0 if env.get(k, "1") == "0" else 1 for k in keys)
    return NVTE_BACKENDS.get(bits, ", ".join("%s=%s" % (k, env.get(k, "unset")) for k in keys))


def megatron_knobs(args):
    """The knobs as Megatron's validated args hold them (mega, and prim after Primus's runtime)."""
    return {
        "overlap_grad_reduce": bool(args.overlap_grad_reduce),
        "overlap_param_gather": bool(args.overlap_param_gather),
        "distributed_optimizer": bool(args.use_distributed_optimizer),
        "grad_reduce_in_bf16": bool(args.grad_reduce_in_bf16),
        "recompute": args.recompute_granularity or "",
        "eod_mask_loss": bool(args.eod_mask_loss),
        "attention_backend": attention_backend(args.attention_backend, os.environ),
        "grad_accum_fusion": bool(args.gradient_accumulation_fusion),
        "masked_softmax_fusion": bool(args.masked_softmax_fusion),
        "bias_swiglu_fusion": bool(args.bias_swiglu_fusion),
        "rope_fusion": bool(args.apply_rope_fusion),
        "bias_dropout_fusion": bool(args.bias_dropout_fusion),
        "cross_entropy_fusion": bool(args.cross_entropy_loss_fusion),
        "dataloader_type": args.dataloader_type,
        "num_workers": int(args.num_workers),
        # Primus's switches (absent from Megatron's own args): any of them puts Turbo kernels in.
        "primus_turbo": any(bool(getattr(args, k, False)) for k in ("enable_primus_turbo", "use_turbo_attention", "use_turbo_grouped_mlp")),
        "rerun_mode": str(args.rerun_mode),
        "attention_softmax_in_fp32": bool(args.attention_softmax_in_fp32),
    }


def knob_differences(got, directory):
    """The knobs where got differs from knobs.json in directory, as "name: the run builds X, Rival
    sets Y" (a knob got lacks, or knobs.json lacks, differs too); None when there is no knobs.json."""
    path = os.path.join(directory, KNOBS_FILE)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        want = json.load(f)
    out = []
    for k in sorted(set(want) | set(got)):
        if k not in got:
            out.append("%s: not read back" % k)
        elif k not in want:
            out.append("%s: read back as %s, which %s does not set" % (k, json.dumps(got[k]), KNOBS_FILE))
        elif got[k] != want[k]:
            out.append("%s: the run builds %s, Rival's fairness table sets %s" % (k, json.dumps(got[k]), json.dumps(want[k])))
    return out
