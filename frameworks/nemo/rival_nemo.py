"""Rival's Megatron-Bridge entry: one pretraining run from a JSON configuration written by Rival.

The JSON file holds one object per ConfigContainer section (model, train, optimizer, scheduler, dataset,
logger, tokenizer, checkpoint, rng, ddp, dist, mixed_precision, profiling; validation from Bridge 0.5.0);
each is passed field by field to Bridge's dataclass of that section, so nothing is left to a recipe and
nothing is downloaded. Rival writes the file for the Bridge release of the image (0.3.0 or 0.5.0); the
sections and the model provider it names say which classes to build, and a section or provider the
installed Bridge lacks stops the run with that name.
The few values JSON cannot carry are named: dtypes ("bfloat16"), the activation ("silu"), tuples
(window_size, the dataset blend). Run under torchrun; every rank builds the same configuration.
Rank 0 writes what actually ran (Bridge, Megatron Core, Transformer Engine, torch, CUDA versions) to
the --ran file and prints it as one "rival-nemo: ran ..." line.

With --check it only runs Bridge's own configuration validation for WORLD_SIZE processes, prints what
Bridge built, and exits (a preflight; no GPU needed). When the run's dataset is there (not for
train:check before encoding) it also digests the first min(8 x GBS, TRAIN_ITERS x GBS) samples Bridge's
own data path will train on: the train dataset built by Bridge's dataset provider for the validated
dataset section (BlendedMegatronDatasetBuilder -> GPTDataset, index cache in the section's
path_to_cache), read through the batch sampler Bridge's build_pretraining_data_loader chooses for each
data-parallel rank, micro-batch step by micro-batch step and rank by rank. Each sample's tokens as
little-endian int64 go into one SHA-256, printed as 'preflight samples: {"samples": n, "sha256": hex}'
for Rival to compare with its own order. With --held-out it also digests the held-out sequences
Bridge's evaluations read (held_out), printed as 'preflight held-out: {json}'. Megatron's compiled dataset helpers come from the image, or
are compiled by the helpers_cpp of frameworks/facts/preflight.py, which the launch ships in preflight/."""
import argparse
import json
import os
import subprocess
import sys

# Section -> (module, class), the same in Megatron-Bridge 0.3.0 and 0.5.0.
SECTIONS = {
    "model": ("megatron.bridge.models.gpt_provider", "GPTModelProvider"),
    "train": ("megatron.bridge.training.config", "TrainingConfig"),
    "optimizer": ("megatron.bridge.training.config", "OptimizerConfig"),
    "scheduler": ("megatron.bridge.training.config", "SchedulerConfig"),
    "dataset": ("megatron.bridge.training.config", "GPTDatasetConfig"),
    "logger": ("megatron.bridge.training.config", "LoggerConfig"),
    "tokenizer": ("megatron.bridge.training.tokenizers.config", "TokenizerConfig"),
    "checkpoint": ("megatron.bridge.training.config", "CheckpointConfig"),
    "rng": ("megatron.bridge.training.config", "RNGConfig"),
    "ddp": ("megatron.bridge.training.config", "DistributedDataParallelConfig"),
    "dist": ("megatron.bridge.training.config", "DistributedInitConfig"),
    "mixed_precision": ("megatron.bridge.training.mixed_precision", "MixedPrecisionConfig"),
    "profiling": ("megatron.bridge.training.config", "ProfilingConfig"),
}
# Sections only some releases have: ValidationConfig (0.5.0) takes the evaluation settings that
# TrainingConfig held before.
OPTIONAL_SECTIONS = {
    "validation": ("megatron.bridge.training.config", "ValidationConfig"),
}
REQUIRED = ("model", "train", "optimizer", "scheduler", "dataset", "logger", "tokenizer", "checkpoint", "rng")
DTYPE_FIELDS = ("params_dtype", "pipeline_dtype", "autocast_dtype")
DTYPES = ("bfloat16", "float16", "float32")
# Enum fields, written in JSON by member name: (section, field) -> (module, enum class).
ENUMS = {("model", "attention_backend"): ("megatron.core.transformer.enums", "AttnBackend")}


# Llama 3.1's RoPE scaling: in Bridge 0.3.0 only Llama31ModelProvider has it (its provide() scales
# the built model's inv_freq with these four fields); a model section that names them is built by it.
# Bridge 0.5.0 has no such provider: GPTModelProvider's rope_scaling and rope_scaling_factor carry it.
LLAMA31_PROVIDER = ("megatron.bridge.models.llama.llama_provider", "Llama31ModelProvider")
LLAMA31_FIELDS = ("scale_factor", "low_freq_factor", "high_freq_factor", "old_context_len")


def _bridge_version():
    try:
        import megatron.bridge
        return getattr(megatron.bridge, "__version__", "unknown")
    except Exception:  # only for the message
        return "unknown"


def _class(section, fields=()):
    """The Bridge class a section is built with; a ValueError naming it when the installed Bridge has none."""
    module, name = SECTIONS.get(section) or OPTIONAL_SECTIONS[section]
    what = f"section {section}"
    if section == "model" and any(f in fields for f in LLAMA31_FIELDS):
        module, name = LLAMA31_PROVIDER
        what = "Llama 3.1's RoPE scaling (model." + ", model.".join(f for f in LLAMA31_FIELDS if f in fields) + ")"
    try:
        return getattr(__import__(module, fromlist=[name]), name)
    except (ImportError, AttributeError) as e:
        if section == "model" and name == LLAMA31_PROVIDER[1]:
            raise ValueError(f"{what}: this Megatron-Bridge ({_bridge_version()}) has no {name}; "
                             f"the configuration was written for another release") from e
        raise ValueError(f"{what}: this Megatron-Bridge ({_bridge_version()}) has no section {section} "
                         f"({module}.{name}); the configuration was written for another release") from e


def bridge_rope_scaling(m):
    """The RoPE scaling the provider builds: Llama31ModelProvider's four fields, or a provider's
    rope_scaling switch with Megatron's RotaryEmbedding bands (later Bridge releases)."""
    if all(hasattr(m, f) for f in LLAMA31_FIELDS):
        return {"rope_scaling": float(m.scale_factor), "rope_scaling_low_freq_factor": float(m.low_freq_factor),
                "rope_scaling_high_freq_factor": float(m.high_freq_factor),
                "rope_scaling_original_positions": int(m.old_context_len)}
    if getattr(m, "rope_scaling", False):
        import inspect
        from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
        d = {k: p.default for k, p in inspect.signature(RotaryEmbedding._apply_scaling).parameters.items()}
        return {"rope_scaling": float(m.rope_scaling_factor), "rope_scaling_low_freq_factor": float(d["low_freq_factor"]),
                "rope_scaling_high_freq_factor": float(d["high_freq_factor"]),
                "rope_scaling_original_positions": int(d["original_max_position_embeddings"])}
    return {"rope_scaling": 1.0, "rope_scaling_low_freq_factor": 0.0, "rope_scaling_high_freq_factor": 0.0,
            "rope_scaling_original_positions": 0}


def _value(section, field, v):
    """Turn a JSON value into what Bridge's field holds."""
    if field in DTYPE_FIELDS and v is not None:
        if v not in DTYPES:
            raise ValueError(f"{section}.{field}: dtype {v!r}, want one of {', '.join(DTYPES)}")
        import torch
        return getattr(torch, v)
    if section == "model" and field == "activation_func":
        import torch.nn.functional as F
        if v not in ("silu", "gelu"):
            raise ValueError(f"model.activation_func: {v!r}, want silu or gelu")
        return getattr(F, v)
    if (section, field) in ENUMS and isinstance(v, str):
        module, name = ENUMS[(section, field)]
        enum = getattr(__import__(module, fromlist=[name]), name)
        if v not in enum.__members__:
            raise ValueError(f"{section}.{field}: {v!r} is not one of {', '.join(enum.__members__)}")
        return enum[v]
    if section == "model" and field == "window_size" and v is not None:
        return tuple(v)
    if section == "dataset" and field == "blend" and v is not None:
        return (list(v[0]), None if v[1] is None else list(v[1]))
    return v


def build_config(doc):
    """Bridge's ConfigContainer from the JSON document (a dict of sections)."""
    from megatron.bridge.training.config import ConfigContainer

    known = set(SECTIONS) | set(OPTIONAL_SECTIONS)
    unknown = sorted(set(doc) - known)
    if unknown:
        raise ValueError(f"unknown configuration sections {unknown}; known: {sorted(known)}")
    missing = [s for s in REQUIRED if s not in doc]
    if missing:
        raise ValueError(f"configuration lacks the sections {missing}")
    parts = {}
    for section, fields in doc.items():
        cls = _class(section, fields)
        kwargs = {k: _value(section, k, v) for k, v in fields.items()}
        try:
            parts[section] = cls(**kwargs)
        except TypeError as e:
            raise ValueError(f"section {section}: {cls.__name__} rejects the fields: {e}") from e
    return ConfigContainer(**parts)


def ran():
    """What is installed in this container, read now (not the pin)."""
    import megatron.bridge
    import megatron.core
    out = {"framework": "megatron-bridge", "version": getattr(megatron.bridge, "__version__", "unknown"),
           "megatron_core": getattr(megatron.core, "__version__", "unknown")}
    core_dir = os.path.dirname(os.path.dirname(os.path.abspath(megatron.core.__file__)))
    try:
        out["megatron_core_commit"] = subprocess.run(
            ["git", "-C", core_dir, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out["megatron_core_commit"] = "unknown"
    try:
        import transformer_engine
        out["transformer_engine"] = transformer_engine.__version__
    except Exception:  # an image without Transformer Engine still records the rest
        out["transformer_engine"] = "unknown"
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda or "none"
    return out


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--config", required=True, help="the JSON configuration Rival wrote")
    p.add_argument("--ran", required=True, help="where rank 0 writes what ran (JSON)")
    p.add_argument("--held-out", default=None,
                   help="Rival's held-out set (one document of N x seq_length + 1 tokens): Bridge's validation reads it")
    p.add_argument("--held-out-samples", type=int, default=0, help="N, its held-out sequences")
    p.add_argument("--check", action="store_true",
                   help="only build the configuration and run Bridge's own validation (runtime_config_update, "
                        "then the optimizer scheduler) for WORLD_SIZE processes, digest the first samples Bridge's data path reads "
                        "when the dataset is there, print the verdict and exit; no GPU needed")
    return p.parse_args(argv)


def check(cfg):
    """Bridge's own validation of the configuration, as pretrain's setup runs it, without a GPU."""
    from megatron.bridge.training.config import runtime_config_update
    from megatron.bridge.training.optim import _get_scheduler

    class _Optimizer:  # what Megatron Core's scheduler touches
        param_groups = [{}]

    runtime_config_update(cfg)
    _get_scheduler(cfg.optimizer, cfg.scheduler, _Optimizer())
    print(f"rival-nemo: configuration valid for {os.environ.get('WORLD_SIZE', '1')} processes "
          f"(data parallel {cfg.data_parallel_size})", flush=True)


def _tokenizer_len(path):
    """len(tokenizer) of a tokenizer.json (the file or its folder): its vocabulary and added tokens'
    ids. None when the file is not there."""
    if path and os.path.isdir(path):
        path = os.path.join(path, "tokenizer.json")
    if not path or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    ids = set((tok.get("model") or {}).get("vocab", {}).values())
    ids.update(a["id"] for a in tok.get("added_tokens") or [])
    return len(ids)


def effective(cfg):
    """What Bridge built, read from the validated ConfigContainer, in the shape of Rival's
    frameworks/effective.Config: the model provider (a TransformerConfig), the optimizer and
    scheduler, the batch; the weight-decay rule by asking Megatron Core's own
    get_standard_config_overrides about one parameter of each kind; the vocabulary as Bridge's setup
    pads len(tokenizer) (_validate_and_set_vocab_size, calculate_padded_vocab_size)."""
    import types
    m, o, sc, t = cfg.model, cfg.optimizer, cfg.scheduler, cfg.train
    out, unread = {}, []

    def std(init):
        v = (getattr(init, "keywords", None) or {}).get("std")
        return float(v) if isinstance(v, (int, float)) else None

    out.update(hidden=m.hidden_size, layers=m.num_layers, heads=m.num_attention_heads,
               kv_heads=m.num_query_groups or m.num_attention_heads, ffn=m.ffn_hidden_size,
               head_dim=int(m.kv_channels or m.hidden_size // m.num_attention_heads),
               rotary_percent=float(m.rotary_percent), qk_norm=bool(m.qk_layernorm),
               activation="swiglu" if m.gated_linear_unit and getattr(m.activation_func, "__name__", "") == "silu" else "other",
               norm=m.normalization, norm_eps=float(m.layernorm_epsilon),
               rope_theta=float(m.rotary_base) if m.position_embedding_type == "rope" else 0.0,
               **bridge_rope_scaling(m),
               qkv_bias=bool(m.add_qkv_bias or m.add_bias_linear), linear_bias=bool(m.add_bias_linear),
               tied_embeddings=bool(m.share_embeddings_and_output_weights),
               init_std=float(m.init_method_std), residual_init_std=std(m.output_layer_init_method),
               output_init_std=std(m.init_method),
               hidden_dropout=float(m.hidden_dropout), attention_dropout=float(m.attention_dropout))
    w = m.window_size
    out["window"] = int(w[0]) if w and w[0] is not None and w[0] >= 0 else 0
    emb = getattr(m, "embedding_init_method_std", None)
    out["embedding_init_std"] = float(emb if emb is not None else m.init_method_std)
    if m.fp8:
        out["precision"] = "fp8"
        out["fp8_recipe"] = "%s/%s" % (getattr(m.fp8, "value", m.fp8), getattr(m.fp8_recipe, "value", m.fp8_recipe))
    else:
        out["precision"] = "bf16" if m.bf16 else ("fp16" if m.fp16 else "fp32")
        out["fp8_recipe"] = ""
    out.update(adam_beta1=float(o.adam_beta1), adam_beta2=float(o.adam_beta2), adam_eps=float(o.adam_eps),
               weight_decay=float(o.weight_decay), lr=float(o.lr), min_lr=float(o.min_lr),
               lr_decay_style=sc.lr_decay_style, lr_warmup_iters=int(sc.lr_warmup_iters or 0),
               lr_warmup_init=float(sc.lr_warmup_init or 0.0),
               lr_decay_iters=int(sc.lr_decay_iters or t.train_iters), clip_grad=float(o.clip_grad),
               gbs=int(t.global_batch_size), mbs=int(t.micro_batch_size), seq_len=int(cfg.dataset.seq_length),
               eod_mask_loss=bool(cfg.dataset.eod_mask_loss),
               reset_position_ids=bool(cfg.dataset.reset_position_ids), reset_attention_mask=bool(cfg.dataset.reset_attention_mask),
               train_iters=int(t.train_iters), seed=int(cfg.rng.seed))
    from megatron.core.optimizer import get_standard_config_overrides
    overrides = get_standard_config_overrides(o)
    kinds = {"embedding": ("embedding.word_embeddings.weight", 2), "norm": ("decoder.final_layernorm.weight", 1),
             "bias": ("decoder.layers.0.self_attention.linear_qkv.bias", 1),
             "linear": ("decoder.layers.0.mlp.linear_fc1.weight", 2), "output": ("output_layer.weight", 2)}
    no_decay = []
    for kind, (name, rank) in kinds.items():
        p = types.SimpleNamespace(shape=(8,) * rank)
        mult = 1.0
        for key, ov in overrides.items():
            if key.matches(p, name) and "wd_mult" in ov:
                mult *= ov["wd_mult"]
        if mult == 0:
            no_decay.append(kind)
    out["no_decay"] = sorted(no_decay)
    n = _tokenizer_len(getattr(cfg.tokenizer, "tokenizer_model", None))
    if n is None:
        unread.append("vocab: no tokenizer.json at %s (Bridge pads len(tokenizer))" % getattr(cfg.tokenizer, "tokenizer_model", None))
    else:
        from megatron.bridge.training.setup import _validate_and_set_vocab_size
        from megatron.bridge.utils.vocab_utils import calculate_padded_vocab_size
        v, pad = _validate_and_set_vocab_size(m.vocab_size, n)
        out["vocab"] = int(calculate_padded_vocab_size(v, m.make_vocab_size_divisible_by, m.tensor_model_parallel_size, False) if pad else v)
    if unread:
        out["unread"] = unread
    return out


def knobs(cfg):
    """The Megatron-family knobs (frameworks/facts/effective.py's megatron_knobs) as Bridge's validated
    ConfigContainer holds them; Primus Turbo has no Bridge field."""
    m, ddp, ds = cfg.model, cfg.ddp, cfg.dataset
    out = {
        "overlap_grad_reduce": bool(ddp.overlap_grad_reduce),
        "overlap_param_gather": bool(ddp.overlap_param_gather),
        "distributed_optimizer": bool(cfg.optimizer.use_distributed_optimizer and ddp.use_distributed_optimizer),
        "grad_reduce_in_bf16": not ddp.grad_reduce_in_fp32,
        "recompute": m.recompute_granularity or "",
        "eod_mask_loss": bool(ds.eod_mask_loss),
        "attention_backend": str(getattr(m.attention_backend, "name", m.attention_backend)),
        "grad_accum_fusion": bool(m.gradient_accumulation_fusion),
        "masked_softmax_fusion": bool(m.masked_softmax_fusion),
        "bias_swiglu_fusion": bool(m.bias_activation_fusion),
        "rope_fusion": bool(m.apply_rope_fusion),
        "bias_dropout_fusion": bool(m.bias_dropout_fusion),
        "cross_entropy_fusion": bool(m.cross_entropy_loss_fusion),
        "dataloader_type": ds.dataloader_type,
        "num_workers": int(ds.num_workers),
        "primus_turbo": False,
        "attention_softmax_in_fp32": bool(m.attention_softmax_in_fp32),
    }
    rerun = getattr(cfg, "rerun_state_machine", None)
    if rerun is not None:  # a Bridge without the section leaves it unread, and the check says so
        out["rerun_mode"] = str(rerun.rerun_mode)
    return out


def _knob_differences(got):
    """effective.py's knob_differences against the knobs.json the launch ships beside preflight.py."""
    facts = _facts_preflight()
    return facts.effective.knob_differences(got, os.path.dirname(os.path.abspath(facts.__file__)))


def _facts_preflight():
    """frameworks/facts/preflight.py as the launch ships it (preflight/ beside this script), else the
    preflight module the path holds (the bridgecheck tests put frameworks/facts on it)."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "preflight")
    if os.path.isfile(os.path.join(here, "preflight.py")) and here not in sys.path:
        sys.path.insert(0, here)
    import preflight as facts
    return facts


class _DatasetTokenizer:
    """What GPTDataset asks of the tokenizer Bridge's setup hands it: the ids its masks use and an
    identity for the index cache's file names. The sample order does not depend on it; its own identity
    keeps the preflight's cached indices apart from the run's."""
    vocab_size = None
    eod = 0
    pad = -1
    unique_identifiers = {"class": "rival-nemo-preflight"}


def samples(cfg):
    """The SHA-256 of the first samples Bridge's data path reads for the validated cfg (see the module's
    doc), as {"samples": n, "sha256": hex}; None when the dataset is not there."""
    import contextlib
    import hashlib
    import io

    ds = cfg.dataset
    blend = getattr(ds, "blend", None) or (getattr(ds, "blend_per_split", None) or [None])[0]
    paths = list(blend[0]) if blend else []
    if not paths or not all(os.path.isfile(p + x) for p in paths for x in (".idx", ".bin")):
        return None  # no dataset here: nothing to digest
    import numpy
    import megatron.core
    facts = _facts_preflight()
    facts.helpers_cpp(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(megatron.core.__file__)))))
    from megatron.bridge.data import samplers
    from megatron.bridge.data.loaders import build_train_valid_test_datasets
    from megatron.bridge.data.utils import get_dataset_provider

    t = cfg.train
    gbs, mbs, dp = t.global_batch_size, t.micro_batch_size, cfg.data_parallel_size
    n = min(facts.DIGEST_BATCHES * gbs, t.train_iters * gbs)  # the global batches mega's digest covers
    ds.tokenizer = _DatasetTokenizer()  # where Bridge's setup puts its tokenizer
    with contextlib.redirect_stdout(io.StringIO()):  # Bridge and Megatron report the build on stdout
        train, _, _ = build_train_valid_test_datasets(cfg, get_dataset_provider(ds))
    # The batch sampler Bridge's loader builds for each rank; the torch DataLoader around it, which only
    # fetches the indices it yields, is left out.
    loader = samplers.DataLoader
    samplers.DataLoader = lambda dataset, batch_sampler=None, **kw: batch_sampler
    try:
        ranks = [samplers.build_pretraining_data_loader(
            train, 0, ds.dataloader_type, mbs, ds.num_workers, ds.data_sharding,
            data_parallel_rank=r, data_parallel_size=dp, global_batch_size=gbs) for r in range(dp)]
    finally:
        samplers.DataLoader = loader
    if any(s is None or s is train for s in ranks):
        raise ValueError(f"dataset.dataloader_type {ds.dataloader_type!r}: Bridge builds no batch sampler to digest")
    its = [iter(s) for s in ranks]
    h, done = hashlib.sha256(), 0
    while done < n:
        for it in its:
            for idx in next(it):
                text, _ = train._query_document_sample_shuffle_indices(idx)  # what __getitem__ reads
                h.update(numpy.asarray(text, dtype="<i8").tobytes())
                done += 1
    return {"samples": done, "sha256": h.hexdigest()}


def _held_out_view():
    """rival_megatron.py, shipped beside this script: the held-out view of Megatron's GPTDataset."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "rival_megatron", os.path.join(os.path.dirname(os.path.abspath(__file__)), "rival_megatron.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _Permutations:
    """The torch the samplers module sees: the real one, except that where torch is a stand-in (the
    preflight runs without PyTorch) Generator and randperm are numpy's. Bridge's cyclic sampler then
    draws another permutation than in the run, and what the preflight checks, that each epoch reads
    every index of each rank's share once, holds for any permutation."""

    def __init__(self, torch):
        self._torch = torch
        try:
            self._real = sorted(torch.randperm(4, generator=torch.Generator()).tolist()) == [0, 1, 2, 3]
        except Exception:  # a stand-in that cannot permute
            self._real = False

    def __getattr__(self, name):
        if not self._real and name == "Generator":
            return _Seed
        if not self._real and name == "randperm":
            return _randperm
        return getattr(self._torch, name)


class _Seed:
    def __init__(self, *a, **k):
        self.seed = 0

    def manual_seed(self, seed):
        self.seed = int(seed)
        return self


def _randperm(n, generator=None):
    import types

    import numpy
    perm = numpy.random.RandomState(generator.seed if generator is not None else 0).permutation(int(n))
    return types.SimpleNamespace(tolist=perm.tolist)


def held_out(cfg, prefix, n):
    """The SHA-256 of the held-out sequences Bridge's evaluations read, as {"samples": n, "sha256": hex};
    None before Rival wrote the set. With rival_megatron's view patched in as the run does, Bridge's
    dataset provider builds the validation split; each rank's batch sampler is the one Bridge's loader
    builds for validation (its loaders.py: "cyclic" for a GPTDatasetConfig, an iterator that starts a
    new epoch when one ends), read for two evaluations of eval_iters x the evaluation's global batch,
    micro-batch step by step and rank by rank. Each must read every held-out sequence exactly once;
    the digest is over the sequences in held-out order, each as little-endian int64."""
    import contextlib
    import hashlib
    import io

    import numpy
    if not os.path.isfile(prefix + ".idx"):
        return None
    import megatron.core
    facts = _facts_preflight()
    facts.helpers_cpp(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(megatron.core.__file__)))))
    from megatron.bridge.data import samplers
    from megatron.bridge.data.loaders import build_train_valid_test_datasets
    from megatron.bridge.data.utils import get_dataset_provider
    from megatron.bridge.training.config import GPTDatasetConfig

    ds, t = cfg.dataset, cfg.train
    v = getattr(cfg, "validation", None) or t  # Bridge 0.5.0 reads the evaluation from validation
    eval_iters = v.eval_iters
    gbs = getattr(v, "eval_global_batch_size", None) or t.global_batch_size
    mbs = getattr(v, "eval_micro_batch_size", None) or t.micro_batch_size
    dp = cfg.data_parallel_size
    if eval_iters * gbs != n:
        raise ValueError(f"eval_iters {eval_iters} x evaluation batch {gbs} = {eval_iters * gbs} samples per evaluation, not the {n} held-out sequences")
    _held_out_view().patch(prefix, n, repeat=False)
    ds.tokenizer = _DatasetTokenizer()
    with contextlib.redirect_stdout(io.StringIO()):
        _, valid, _ = build_train_valid_test_datasets(cfg, get_dataset_provider(ds))
    kind = "cyclic" if isinstance(ds, GPTDatasetConfig) else ds.dataloader_type
    loader, torch = samplers.DataLoader, samplers.torch
    samplers.DataLoader = lambda dataset, batch_sampler=None, **kw: batch_sampler
    samplers.torch = _Permutations(torch)
    try:
        ranks = [samplers.build_pretraining_data_loader(
            valid, 0, kind, mbs, ds.num_workers, ds.data_sharding,
            data_parallel_rank=r, data_parallel_size=dp, global_batch_size=gbs) for r in range(dp)]

        def batches(sampler):
            while True:  # Bridge wraps a cyclic loader in cyclic_iter; a single one ends
                empty = True
                for b in sampler:
                    empty = False
                    yield b
                if empty or kind not in ("cyclic", "batch"):
                    return

        its = [batches(s) for s in ranks]
        for e in range(2):
            read = []
            for _ in range(eval_iters * (gbs // (mbs * dp))):
                for r, it in enumerate(its):
                    b = next(it, None)
                    if b is None:
                        raise ValueError(f"evaluation {e + 1}: Bridge's {kind} validation sampler of data-parallel rank {r} ran out of held-out sequences")
                    read.extend(int(i) for i in b)
            if sorted(read) != list(range(n)):
                raise ValueError(f"evaluation {e + 1} reads held-out positions {sorted(read)[:8]}..., not each of the {n} once")
    finally:
        samplers.DataLoader, samplers.torch = loader, torch
    h = hashlib.sha256()
    for k in range(n):
        h.update(numpy.asarray(valid.text(k), dtype="<i8").tobytes())
    return {"samples": n, "sha256": h.hexdigest()}


def _where(e):
    """The innermost frame that raised e, as file:line: code."""
    import traceback
    tb = traceback.extract_tb(e.__traceback__)
    if not tb:
        return ""
    f = tb[-1]
    return f" (at {os.path.basename(f.filename)}:{f.lineno}: {(f.line or '').strip()})"


def preflight(o):
    """--check: the run's preflight. Prints "preflight ran: {json}" (what the image holds, read now),
    "preflight effective: {json}", "preflight samples: {json}" when the dataset is there, then
    "preflight ok: ..." or "preflight failed: <Bridge's error>" as the last line; exit 0 or 1."""
    try:
        r = ran()
        r["megatron_bridge"] = r.pop("version")
        del r["framework"]
        print("preflight ran: " + json.dumps(r, sort_keys=True), flush=True)
    except Exception:  # what ran is a record, not a condition of the check
        pass
    try:
        with open(o.config, encoding="utf-8") as f:
            cfg = build_config(json.load(f))
        check(cfg)
    except Exception as e:  # the framework's own error, quoted
        print(f"preflight failed: megatron-bridge configuration: {type(e).__name__}: {e}{_where(e)}", flush=True)
        return 1
    try:
        print("preflight effective: " + json.dumps(effective(cfg), sort_keys=True), flush=True)
    except Exception as e:  # reading back is part of the check
        print(f"preflight failed: reading back Bridge's effective configuration: {type(e).__name__}: {e}{_where(e)}", flush=True)
        return 1
    try:
        got = knobs(cfg)
    except Exception as e:  # reading back is part of the check
        print(f"preflight failed: reading back Bridge's Megatron knobs: {type(e).__name__}: {e}{_where(e)}", flush=True)
        return 1
    print("preflight knobs: " + json.dumps(got, sort_keys=True), flush=True)
    try:
        diffs = _knob_differences(got)
    except Exception as e:  # a knobs.json that does not load is a failed check, not a traceback
        print(f"preflight failed: reading the launch's knobs.json: {type(e).__name__}: {e}{_where(e)}", flush=True)
        return 1
    if diffs:
        print("preflight failed: Megatron knobs differ from Rival's fairness table (core.Fairness): " + "; ".join(diffs), flush=True)
        return 1
    try:
        d = samples(cfg)
    except Exception as e:  # the run would read these samples: a failure here stops it too
        print(f"preflight failed: Bridge's GPTDataset over the run's data: {type(e).__name__}: {e}{_where(e)}", flush=True)
        return 1
    if d is not None:
        print("preflight samples: " + json.dumps(d), flush=True)
    if o.held_out:
        try:
            h = held_out(cfg, o.held_out, o.held_out_samples)
        except Exception as e:  # the run would evaluate these sequences: a failure here stops it too
            print(f"preflight failed: Bridge's validation over Rival's held-out set: {type(e).__name__}: {e}{_where(e)}", flush=True)
            return 1
        if h is not None:
            print("preflight held-out: " + json.dumps(h), flush=True)
    print(f"preflight ok: megatron-bridge configuration valid for {os.environ.get('WORLD_SIZE', '1')} processes",
          flush=True)
    return 0


def main(argv=None):
    o = parse(argv)
    if o.check:
        return preflight(o)
    with open(o.config, encoding="utf-8") as f:
        doc = json.load(f)
    cfg = build_config(doc)
    if int(os.environ.get("RANK", "0")) == 0:
        r = ran()
        tmp = o.ran + ".partial"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(r, f, indent=1, sort_keys=True)
        os.replace(tmp, o.ran)
        print("rival-nemo: ran megatron-bridge {version}, megatron-core {megatron_core} ({megatron_core_commit}), "
              "transformer-engine {transformer_engine}, torch {torch}, CUDA {cuda}".format(**r), flush=True)
    if cfg.profiling.use_pytorch_profiler and cfg.logger.tensorboard_dir:
        os.makedirs(cfg.logger.tensorboard_dir, exist_ok=True)
    if o.held_out:
        if o.held_out_samples < 1 or not os.path.isfile(o.held_out + ".idx"):
            sys.exit(f"rival_nemo.py: no held-out set of {o.held_out_samples} sequences at {o.held_out}.idx: Rival writes it before training")
        # Bridge's validation split becomes Rival's held-out set (rival_megatron.py, held_out above).
        _held_out_view().patch(o.held_out, o.held_out_samples, repeat=False)
    from megatron.bridge.training.gpt_step import forward_step
    from megatron.bridge.training.pretrain import pretrain
    pretrain(cfg, forward_step)


if __name__ == "__main__":
    sys.exit(main())
