"""Rival's TorchTitan extension: imported by TorchTitan's trainer through
`experimental.custom_import = "rival_titan"`, it registers the train spec `rival_llama`, whose one
flavour is the run's exact model shape (from rival_titan.json next to this file) and whose
dataloader reads Rival's Megatron indexed dataset (.bin/.idx) in Megatron's GPTDataset order (the
document, sample and shuffle indices Rival writes for the seed, docs/sample-order.md), each rank taking
its micro-batches as Megatron's sampler hands them out.

The spec starts from TorchTitan's `llama3` train spec and replaces the model arguments, the
dataloader, and, so that titan decays and initialises as the Megatron family does, the optimizer
builder, the LR schedule and the model's weight init:

- weight decay: Megatron's rule (megatron/core/optimizer/__init__.py,
  get_standard_config_overrides): no decay on 1-D parameters (the norms) and on biases; the
  embedding, every linear weight and the output layer are decayed. TorchTitan's own builder decays
  every parameter.
- init: N(0, std) for every weight (embedding, q/k/v, w1, w3, output), N(0, std/sqrt(2L)) for the
  output projection of each residual branch (attention wo, feed-forward w2), as Megatron's
  init_method and scaled_init_method_normal; norms ones. TorchTitan's own init draws the embedding
  from N(0, 1), the outputs of each branch by depth, and the output layer from dim^-0.5.
- LR schedule: Megatron's (warm-up from 0, iteration i trains at the rate after i - 1 steps), where
  TorchTitan's warm-up trains iteration 1 at lr/warmup.
- RoPE: the model's Llama 3 scaling from rival_titan.json; TorchTitan scales every Llama 3 model.
- sliding window (Mistral past its window): TorchTitan's Llama attention has none, so the model runs
  TorchTitan's FlexAttention path with one more mask, `sliding_window_mask_mod`, beside its causal
  (and document) masks: a query sees itself and the `window` keys before it, Megatron's
  window_size (window, 0).

- held-out evaluation (when rival_titan.json names the held-out set): TorchTitan's own validator,
  whose loader reads Rival's held-out set from the first sequence at every evaluation
  (build_validator).

Parallelisms, loss and the metrics line stay TorchTitan's own. Run as a script it prints
one rank's samples as JSON, or writes the first COUNT samples all ranks read, in global order, as
little-endian int64 to OUT; that is how Rival tests the reader:

    python3 rival_titan.py samples PREFIX ORDER_DIR SEQ_LEN SEED NUM_SAMPLES MBS DP_RANK DP_WORLD COUNT
    python3 rival_titan.py dump PREFIX ORDER_DIR SEQ_LEN SEED NUM_SAMPLES MBS DP_WORLD COUNT OUT
"""
import dataclasses
import json
import math
import os
import struct
import sys

import numpy as np

SPEC_NAME = "rival_llama"
CONFIG_NAME = "rival_titan.json"

# Megatron .idx (indexed_dataset.py, version 1): dtype codes to numpy types.
_DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64,
           6: np.float64, 7: np.float32, 8: np.uint16}
_MAGIC = b"MMIDIDX\x00\x00"


def read_index(prefix):
    """Returns (dtype, sequence lengths, sequence starts in tokens) of PREFIX.idx after checking its header
    and that PREFIX.bin holds exactly those tokens."""
    path = prefix + ".idx"
    with open(path, "rb") as f:
        head = f.read(9 + 8 + 1 + 8 + 8)
        if len(head) < 34 or head[:9] != _MAGIC:
            raise ValueError(f"{path}: not a Megatron index (magic {head[:9]!r})")
        version, code, seqs, docs = struct.unpack("<QBQQ", head[9:])
        if version != 1:
            raise ValueError(f"{path}: index version {version}, want 1")
        if code not in _DTYPES:
            raise ValueError(f"{path}: unknown dtype code {code}")
        sizes = np.frombuffer(f.read(4 * seqs), dtype="<i4")
        pointers = np.frombuffer(f.read(8 * seqs), dtype="<i8")
        if len(sizes) != seqs or len(pointers) != seqs:
            raise ValueError(f"{path}: truncated: {seqs} sequence lengths and pointers announced")
    dtype = np.dtype(_DTYPES[code]).newbyteorder("<")
    bin_size = os.path.getsize(prefix + ".bin")
    want = int(sizes.astype(np.int64).sum()) * dtype.itemsize
    if bin_size != want:
        raise ValueError(f"{prefix}.bin: {bin_size} bytes, the index describes {want}")
    return dtype, sizes, pointers // dtype.itemsize


def order_base(seed, seq_len, num_samples):
    """The file stem of the sample order Rival writes for a run (gptorder.Order.Base)."""
    return f"rival-gptorder-seed{seed}-sl{seq_len}-n{num_samples}-x1"


def data_files(prefix, order_dir, seed, seq_len, num_samples):
    """The files MegatronSamples reads: the dataset's .idx and .bin and the order's three indices."""
    base = os.path.join(order_dir, order_base(seed, seq_len, num_samples))
    return [prefix + ".idx", prefix + ".bin"] + [base + "-%s_index.npy" % k for k in ("document", "sample", "shuffle")]


def input_files(job_config):
    """The files the train spec's dataloader reads for job_config (rival_titan.json's dataset and
    order): titan's preflight digests the first samples only when they are all there."""
    cfg = load_config()
    return data_files(cfg["data_prefix"], cfg["order_dir"], cfg["seed"], job_config.training.seq_len, cfg["num_samples"])


class MegatronSamples:
    """Megatron's GPT samples in Megatron's order (docs/sample-order.md). Rival writes GPTDataset's
    document, sample and shuffle indices for the seed into order_dir; sample g of training is row
    shuffle[g] of the sample index, seq_len + 1 tokens from one (document index position, offset)
    boundary to the next, across sequences, as GPTDataset reads it."""

    def __init__(self, prefix, order_dir, seed, seq_len, num_samples):
        dtype, self.sizes, self.starts = read_index(prefix)
        self.tokens = np.memmap(prefix + ".bin", dtype=dtype, mode="r")
        doc, index, shuffle = data_files(prefix, order_dir, seed, seq_len, num_samples)[2:]
        self.doc = np.load(doc, mmap_mode="r")
        self.index = np.load(index, mmap_mode="r")
        self.shuffle = np.load(shuffle, mmap_mode="r")
        base = os.path.join(order_dir, order_base(seed, seq_len, num_samples))
        if self.index.ndim != 2 or self.index.shape[1] != 2 or len(self.shuffle) < num_samples:
            raise ValueError(f"{base}-*.npy: {len(self.shuffle)} samples of shape {self.index.shape}, "
                             f"the run needs {num_samples}")
        self.seq_len, self.count = seq_len, num_samples

    def sample(self, g):
        row = int(self.shuffle[g])
        (d0, o0), (d1, o1) = self.index[row], self.index[row + 1]
        parts = []
        for d in range(int(d0), int(d1) + 1):
            seq = int(self.doc[d])
            lo = int(o0) if d == d0 else 0
            hi = int(o1) + 1 if d == d1 else int(self.sizes[seq])
            s = int(self.starts[seq])
            parts.append(self.tokens[s + lo:s + hi])
        out = np.concatenate(parts).astype(np.int64)
        if len(out) != self.seq_len + 1:
            raise ValueError(f"sample {g}: {len(out)} tokens, want {self.seq_len + 1}: the order does not fit the dataset")
        return out


class RankSamples:
    """What one data-parallel rank reads, as Megatron's MegatronPretrainingSampler hands it out: micro-batch
    step k gives rank r the samples k*mbs*dp_world + r*mbs ... + mbs - 1 of training order. TorchTitan draws
    its gradient-accumulation micro-batches one after another, so step after step every rank trains on
    Megatron's global batches."""

    def __init__(self, samples, mbs, dp_rank, dp_world):
        if mbs < 1 or dp_world < 1 or not 0 <= dp_rank < dp_world:
            raise ValueError(f"micro batch {mbs}, dp_rank {dp_rank}, dp_world {dp_world}")
        if samples.count % (mbs * dp_world):
            raise ValueError(f"{samples.count} samples do not split into micro-batches of {mbs} on {dp_world} ranks")
        self.samples, self.mbs, self.dp_rank, self.dp_world = samples, mbs, dp_rank, dp_world

    def __iter__(self):
        step = self.mbs * self.dp_world
        for first in range(self.dp_rank * self.mbs, self.samples.count, step):
            for j in range(self.mbs):
                yield self.samples.sample(first + j)


def load_config():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), CONFIG_NAME)
    with open(path) as f:
        return json.load(f)


def ffn_arguments(dim, ffn):
    """TorchTitan's Llama FeedForward sizes its hidden layer as
    multiple_of * ceil(int(ffn_dim_multiplier * int(2 * 4 * dim / 3)) / multiple_of).
    With multiple_of = ffn and the multiplier ffn / int(8 * dim / 3), that is exactly ffn."""
    base = int(2 * (4 * dim) / 3)
    mult = ffn / base
    hidden = int(mult * base)
    if -(-hidden // ffn) * ffn != ffn:
        raise ValueError(f"cannot express FFN width {ffn} for dim {dim}")
    return ffn, mult


def decays(name, param):
    """Megatron's weight-decay rule: a 1-D parameter (a norm's weight) or a bias is not decayed."""
    return not (param.ndim == 1 or name.endswith(".bias"))


def param_groups(named_params, weight_decay):
    """AdamW parameter groups under Megatron's rule: decayed with weight_decay, the rest with 0."""
    decay, no_decay = [], []
    for name, p in named_params:
        if p.requires_grad:
            (decay if decays(name, p) else no_decay).append(p)
    groups = []
    if decay:
        groups.append({"params": decay, "weight_decay": weight_decay})
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


# The output projections of each residual branch in TorchTitan's Llama (Megatron's linear_proj and
# linear_fc2), initialised with Megatron's scaled init.
RESIDUAL_OUTPUTS = ("attention.wo.weight", "feed_forward.w2.weight")


def megatron_init(torch, model, std, layers):
    """Megatron's init on a TorchTitan Llama: every weight matrix N(0, std), the residual branches'
    output projections N(0, std / sqrt(2 * layers)), biases 0; 1-D norm weights are left as their
    reset_parameters set them (ones)."""
    import math
    scaled = std / math.sqrt(2.0 * layers)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                torch.nn.init.zeros_(p)
            elif p.ndim >= 2:
                torch.nn.init.normal_(p, mean=0.0, std=scaled if name.endswith(RESIDUAL_OUTPUTS) else std)


class HeldOutSamples:
    """Rival's held-out set (core.HeldOutName): one sequence of count x seq_len + 1 tokens whose window
    k (tokens k*seq_len .. k*seq_len + seq_len) is held-out sequence k, read in file order."""

    def __init__(self, prefix, count, seq_len):
        dtype, sizes, starts = read_index(prefix)
        if len(sizes) != 1 or int(sizes[0]) < count * seq_len + 1:
            raise ValueError(f"{prefix}: the held-out set must be one sequence of at least {count * seq_len + 1} tokens "
                             f"({len(sizes)} sequence(s) found): Rival writes it before training")
        self.tokens = np.memmap(prefix + ".bin", dtype=dtype, mode="r")
        self.start, self.seq_len, self.count = int(starts[0]), seq_len, count

    def sample(self, k):
        s = self.start + k * self.seq_len
        return np.asarray(self.tokens[s:s + self.seq_len + 1]).astype(np.int64)


def loader(reader, dp_rank, dp_world_size, batch_size):
    """TorchTitan's ParallelAwareDataloader over one rank's samples (a RankSamples): batches of
    batch_size samples, each ({"input": tokens[:-1]}, tokens[1:]). Each iteration of it starts again
    from the reader's first sample."""
    import torch
    from torch.utils.data import IterableDataset
    from torchtitan.components.dataloader import ParallelAwareDataloader

    class Samples(IterableDataset):
        def __init__(self, reader):
            super().__init__()
            self.reader = reader

        def __iter__(self):
            for x in self.reader:
                t = torch.from_numpy(x)
                yield {"input": t[:-1]}, t[1:]

    return ParallelAwareDataloader(Samples(reader), dp_rank=dp_rank, dp_world_size=dp_world_size, batch_size=batch_size)


def build_dataloader(cfg, dp_world_size, dp_rank, job_config):
    """The training loader: this rank's samples of Megatron's order (RankSamples), local_batch_size at a time."""
    samples = MegatronSamples(cfg["data_prefix"], cfg["order_dir"], cfg["seed"], job_config.training.seq_len,
                              cfg["num_samples"])
    reader = RankSamples(samples, job_config.training.local_batch_size, dp_rank, dp_world_size)
    return loader(reader, dp_rank, dp_world_size, job_config.training.local_batch_size)


def held_out_files(cfg):
    """The files the held-out loader reads; none when the run does not evaluate."""
    held = cfg.get("held_out")
    return [held["prefix"] + ".idx", held["prefix"] + ".bin"] if held else []


def build_validator(cfg, **kw):
    """TorchTitan's own validator (components/validate.py build_validator, with the arguments the
    trainer passes), reading Rival's held-out set instead of a Hugging Face dataset: its loader is
    this rank's share of the held-out sequences, as Megatron's sampler would hand them out, and starts
    again from the first at every validate() (which re-iterates it). validation.steps x
    local_batch_size x the data-parallel ranks must be the held-out count, so each evaluation reads
    every sequence once. TorchTitan also validates after step 1; Rival's evaluations are at the
    interval only (validation.freq), as Megatron's and fsdp's are."""
    from torchtitan.components import validate

    held = cfg["held_out"]
    job_config, dp_world, dp_rank = kw["job_config"], kw["dp_world_size"], kw["dp_rank"]
    v = job_config.validation
    if v.steps * v.local_batch_size * dp_world != held["samples"]:
        raise ValueError(f"rival_titan: validation.steps {v.steps} x local_batch_size {v.local_batch_size} x {dp_world} "
                         f"data-parallel ranks is not the {held['samples']} held-out sequences")
    samples = HeldOutSamples(held["prefix"], held["samples"], v.seq_len)

    def held_out_loader(*_, **__):
        return loader(RankSamples(samples, v.local_batch_size, dp_rank, dp_world), dp_rank, dp_world, v.local_batch_size)

    # v0.2.2 builds its loader with build_text_validation_dataloader, v0.2.0 with build_hf_validation_dataloader.
    names = [n for n in ("build_text_validation_dataloader", "build_hf_validation_dataloader") if hasattr(validate, n)]
    if not names:
        raise ImportError("rival_titan: torchtitan.components.validate has neither build_text_validation_dataloader "
                          "(v0.2.2) nor build_hf_validation_dataloader (v0.2.0): this TorchTitan builds its validation loader otherwise")
    name = names[0]
    hf = getattr(validate, name)
    setattr(validate, name, held_out_loader)
    try:
        validator = validate.build_validator(**kw)
    finally:
        setattr(validate, name, hf)
    validator.should_validate = lambda step: step % v.freq == 0
    return validator


def rope_scaling_args(default, scaling):
    """TorchTitan's RoPEScalingArgs for the model's Llama 3 scaling; without one, factor 1, which
    makes TorchTitan's scaling (applied to every Llama 3 model) the identity."""
    if scaling is None:
        return dataclasses.replace(default, scaling_factor=1.0)
    return dataclasses.replace(default, **scaling)


def megatron_lr_factor(steps_done, warmup, decay_end, min_factor):
    """Megatron's OptimizerParamScheduler (warm-up from 0, cosine to min_lr at lr_decay_iters) as the
    factor of the peak rate after steps_done optimizer steps. Megatron steps its scheduler after the
    optimizer, so iteration i trains at the factor after i - 1 steps: 0 at iteration 1 with warm-up.
    TorchTitan's own warm-up trains iteration 1 at 1/warmup, one step ahead."""
    if warmup > 0 and steps_done <= warmup:
        return steps_done / warmup
    if steps_done > decay_end or decay_end == warmup:
        return min_factor
    ratio = (steps_done - warmup) / (decay_end - warmup)
    return min_factor + (1.0 - min_factor) * 0.5 * (1.0 + math.cos(math.pi * ratio))


def build_lr_schedulers(optimizers, lr_scheduler_config, training_steps):
    """TorchTitan's LRSchedulersContainer (one LambdaLR per optimizer) on Megatron's schedule: warm-up
    over lr_scheduler.warmup_steps, cosine decay to min_lr_factor at the last training step."""
    import functools
    from torchtitan.components.lr_scheduler import LRSchedulersContainer
    c = lr_scheduler_config
    warmup = int(c.warmup_steps)
    if c.decay_type != "cosine" or getattr(c, "decay_ratio", None) is not None or not 0 <= warmup <= training_steps:
        # Not the schedule Rival launches: TorchTitan's own, whose rates the read-back reports.
        from torchtitan.components.lr_scheduler import build_lr_schedulers as titan_builder
        return titan_builder(optimizers, lr_scheduler_config, training_steps)
    lam = functools.partial(megatron_lr_factor, warmup=warmup, decay_end=training_steps, min_factor=float(c.min_lr_factor))
    return LRSchedulersContainer(optimizers, lam)


def sliding_window_mask_mod(window):
    """FlexAttention's mask for Megatron's window_size (window, 0): query q sees key kv when
    q - kv <= window (with the causal mask: itself and the window keys before it)."""
    def sliding_window(b, h, q_idx, kv_idx):
        return q_idx - kv_idx <= window
    # The name says which window a mask applies where torch prints or compiles it.
    sliding_window.__name__ = "sliding_window_%d" % window
    return sliding_window


_HF_BIAS = {"model.layers.{}.self_attn.%s_proj.bias" % x: "layers.{}.attention.w%s.bias" % x for x in "qkv"}


def qkv_bias_adapter(base):
    """TorchTitan's Hugging Face state-dict adapter, with Qwen's q, k and v biases. The adapter permutes
    the q and k weights' output rows per head from Hugging Face's rotate-half layout to TorchTitan's
    interleaved one; the biases of those rows are permuted the same way."""
    import re

    def rows(b, heads, to_hf):
        half = b.shape[0] // heads // 2
        shape = (heads, half, 2) if to_hf else (heads, 2, half)
        return b.view(*shape).transpose(1, 2).reshape(-1).clone()

    class QKVBiasAdapter(base):
        def _heads(self, key):
            a = self.model_args
            return a.n_heads if ".q" in key or ".wq" in key else (a.n_kv_heads or a.n_heads)

        def from_hf(self, hf_state_dict):
            plain = {k: v for k, v in hf_state_dict.items() if not k.endswith("_proj.bias")}
            out = super().from_hf(plain)
            for k, v in hf_state_dict.items():
                if k.endswith("_proj.bias"):
                    n = re.search(r"\d+", k).group(0)
                    abstract = re.sub(r"(\d+)", "{}", k, count=1)
                    if abstract not in _HF_BIAS:
                        raise KeyError("rival_titan: no TorchTitan name for %s" % k)
                    out[_HF_BIAS[abstract].format(n)] = v if ".v_proj" in k else rows(v, self._heads(k), False)
            return out

        def to_hf(self, state_dict):
            plain = {k: v for k, v in state_dict.items() if not k.endswith(("wq.bias", "wk.bias", "wv.bias"))}
            out = super().to_hf(plain)
            back = {v: k for k, v in _HF_BIAS.items()}
            for k, v in state_dict.items():
                if k.endswith(("wq.bias", "wk.bias", "wv.bias")):
                    n = re.search(r"\d+", k).group(0)
                    hf = back[re.sub(r"(\d+)", "{}", k, count=1)].format(n)
                    out[hf] = v if k.endswith("wv.bias") else rows(v, self._heads(k), True)
            return out

    return QKVBiasAdapter


def _register():
    import torch
    from torchtitan.protocols.train_spec import get_train_spec, register_train_spec

    cfg = load_config()
    m = cfg["model"]
    base = get_train_spec("llama3")
    multiple_of, mult = ffn_arguments(m["hidden"], m["ffn"])
    args = dataclasses.replace(
        base.model_args["8B"],
        dim=m["hidden"], n_layers=m["layers"], n_heads=m["heads"], n_kv_heads=m["kv_heads"],
        vocab_size=m["vocab"], multiple_of=multiple_of, ffn_dim_multiplier=mult,
        rope_theta=m["rope_theta"], max_seq_len=m["max_positions"], norm_eps=m["norm_eps"],
        rope_scaling_args=rope_scaling_args(base.model_args["8B"].rope_scaling_args, m.get("rope_scaling")),
    )
    window = int(m.get("window", 0))
    if window:
        # The window is a FlexAttention mask: TorchTitan's trainer then builds the model's masks
        # (get_attention_masks below) for every batch and its attention applies them.
        # v0.2.0 switches FlexAttention on with use_flex_attn, v0.2.2 with attn_type.
        fields = {f.name for f in dataclasses.fields(args)}
        args = dataclasses.replace(args, **({"use_flex_attn": True} if "use_flex_attn" in fields else {"attn_type": "flex"}))
    vocab = m["vocab"]
    args_cls = type(args)

    @dataclasses.dataclass
    class RivalArgs(args_cls):
        def update_from_config(self, job_config, *a, **kw):
            # Some TorchTitan versions size the embedding from the tokenizer; Rival trains
            # config.json's vocabulary, as the other frameworks' launches do.
            super().update_from_config(job_config, *a, **kw)
            self.vocab_size = vocab

    args = RivalArgs(**{f.name: getattr(args, f.name) for f in dataclasses.fields(args_cls)})

    def build(dp_world_size, dp_rank, tokenizer=None, job_config=None, **_):
        return build_dataloader(cfg, dp_world_size, dp_rank, job_config)

    from torchtitan.components.optimizer import OptimizersContainer

    init_std, layers = m["init_std"], m["layers"]

    qkv_bias = bool(m.get("qkv_bias", False))

    window_masks = {}  # sequence length -> the causal-and-window BlockMask

    class RivalTransformer(base.model_cls):
        def __init__(self, model_args, *a, **kw):
            super().__init__(model_args, *a, **kw)
            if qkv_bias:
                # Qwen 2.5's attention: q, k and v projections with biases, same shapes otherwise.
                for layer in self.layers.values():
                    att = layer.attention
                    for name in ("wq", "wk", "wv"):
                        old = getattr(att, name)
                        setattr(att, name, torch.nn.Linear(old.in_features, old.out_features, bias=True,
                                                           device=old.weight.device, dtype=old.weight.dtype))

        def init_weights(self, *a, **kw):
            super().init_weights(*a, **kw)  # rope buffers, norms
            megatron_init(torch, self, init_std, self.model_args.n_layers)

        def get_attention_masks(self, input_batch, tokenizer, *a, **kw):
            if not window:
                return super().get_attention_masks(input_batch, tokenizer, *a, **kw)
            # TorchTitan's masks (causal; documents when attn_mask_type is block_causal) and the window.
            from torch.nn.attention.flex_attention import and_masks
            from torchtitan.models import attention
            mods, batch = [attention.get_causal_mask_mod(), sliding_window_mask_mod(window)], 1
            if self.model_args.attn_mask_type == "block_causal":
                mods.append(attention.get_document_mask_mod(input_batch, tokenizer.eos_id))
                batch = input_batch.shape[0]
            elif self.model_args.attn_mask_type != "causal":
                raise ValueError("rival_titan: unknown attention mask type %r" % self.model_args.attn_mask_type)
            seq = input_batch.shape[1]
            if batch > 1:  # documents: the mask follows the batch's tokens
                return attention.create_attention_mask(and_masks(*mods), batch, None, seq, seq)
            # Causal and window depend on the length alone: one BlockMask per length for the run.
            # (TorchTitan's lru_cache on create_attention_mask never hits here: and_masks returns
            # a new function on every call.)
            if seq not in window_masks:
                window_masks[seq] = attention.create_attention_mask(and_masks(*mods), batch, None, seq, seq)
            return window_masks[seq]

    class RivalOptimizers(OptimizersContainer):
        """TorchTitan's container, its optimizers built over Megatron's parameter groups."""

        def __init__(self, model_parts, optimizer_cls, optimizer_kwargs):
            self.optimizers, self.model_parts, all_params = [], model_parts, []
            for model in model_parts:
                groups = param_groups(model.named_parameters(), optimizer_kwargs["weight_decay"])
                self.optimizers.append(optimizer_cls(groups, **optimizer_kwargs))
                all_params.extend(p for g in groups for p in g["params"])
            self._validate_length(len(model_parts))
            self._post_init(all_params, optimizer_kwargs)

    def build_optimizers(model_parts, optimizer_config, parallel_dims, ft_manager=None):
        c = optimizer_config
        if c.early_step_in_backward or (ft_manager is not None and getattr(ft_manager, "enabled", False)):
            raise NotImplementedError("rival_titan: Rival's optimizer builder runs neither optimizers in backward nor TorchFT")
        classes = {"Adam": torch.optim.Adam, "AdamW": torch.optim.AdamW}
        if c.name not in classes:
            raise NotImplementedError(f"rival_titan: optimizer {c.name}: Rival trains AdamW")
        if c.implementation not in ("fused", "foreach", "for-loop"):
            raise ValueError(f"rival_titan: optimizer implementation {c.implementation!r}")
        kwargs = {"lr": c.lr, "betas": (c.beta1, c.beta2), "eps": c.eps, "weight_decay": c.weight_decay,
                  "fused": c.implementation == "fused", "foreach": c.implementation == "foreach"}
        return RivalOptimizers(model_parts, classes[c.name], kwargs)

    adapter = base.state_dict_adapter
    if qkv_bias and adapter is not None:
        adapter = qkv_bias_adapter(adapter)
    assert layers == args.n_layers
    validator = (lambda **kw: build_validator(cfg, **kw)) if cfg.get("held_out") else None
    spec = dataclasses.replace(base, model_cls=RivalTransformer, model_args={cfg["flavor"]: args}, state_dict_adapter=adapter,
                               build_dataloader_fn=build, build_validator_fn=validator,
                               build_optimizers_fn=build_optimizers, build_lr_schedulers_fn=build_lr_schedulers)
    register_train_spec(SPEC_NAME, spec)


def _main(argv):
    if len(argv) == 11 and argv[1] == "samples":
        prefix, order_dir = argv[2], argv[3]
        seq_len, seed, num_samples, mbs, rank, world, n = map(int, argv[4:])
        it = iter(RankSamples(MegatronSamples(prefix, order_dir, seed, seq_len, num_samples), mbs, rank, world))
        json.dump([next(it).tolist() for _ in range(n)], sys.stdout)
    elif len(argv) == 11 and argv[1] == "dump":
        prefix, order_dir = argv[2], argv[3]
        seq_len, seed, num_samples, mbs, world, n = map(int, argv[4:10])
        samples = MegatronSamples(prefix, order_dir, seed, seq_len, num_samples)
        ranks = [iter(RankSamples(samples, mbs, r, world)) for r in range(world)]
        with open(argv[10], "wb") as f:
            done = 0
            while done < n:  # micro-batch step by step, rank by rank: global order
                for it in ranks:
                    for _ in range(mbs):
                        if done < n:
                            f.write(next(it).astype("<i8").tobytes())
                            done += 1
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    _main(sys.argv)
else:
    try:
        import torchtitan  # noqa: F401  (present whenever TorchTitan imports this module)
    except ImportError:
        torchtitan = None
    if torchtitan is not None:
        _register()
