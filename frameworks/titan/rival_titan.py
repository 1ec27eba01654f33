"""Rival's TorchTitan extension: imported by TorchTitan's trainer through
`experimental.custom_import = "rival_titan"`, it registers the train spec `rival_llama`, whose one
flavour is the run's exact model shape (from rival_titan.json next to this file) and whose
dataloader reads Rival's Megatron indexed dataset (.bin/.idx) in fixed samples of seq_len + 1
tokens, shuffled from the seed and split across data-parallel ranks.

The spec starts from TorchTitan's `llama3` train spec and replaces the model arguments, the
dataloader, and, so that titan decays and initialises as the Megatron family does, the optimizer
builder and the model's weight init:

- weight decay: Megatron's rule (megatron/core/optimizer/__init__.py,
  get_standard_config_overrides): no decay on 1-D parameters (the norms) and on biases; the
  embedding, every linear weight and the output layer are decayed. TorchTitan's own builder decays
  every parameter.
- init: N(0, std) for every weight (embedding, q/k/v, w1, w3, output), N(0, std/sqrt(2L)) for the
  output projection of each residual branch (attention wo, feed-forward w2), as Megatron's
  init_method and scaled_init_method_normal; norms ones. TorchTitan's own init draws the embedding
  from N(0, 1), the outputs of each branch by depth, and the output layer from dim^-0.5.

Parallelisms, schedule, loss and the metrics line stay TorchTitan's own. Run as a script it prints samples as JSON, which is how Rival tests the reader:

    python3 rival_titan.py samples PREFIX SEQ_LEN SEED DP_RANK DP_WORLD COUNT
"""
import dataclasses
import json
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
    """Returns (dtype, sequence lengths) of PREFIX.idx after checking its header and that PREFIX.bin
    holds exactly those tokens."""
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
        if len(sizes) != seqs:
            raise ValueError(f"{path}: truncated: {seqs} sequence lengths announced")
    dtype = np.dtype(_DTYPES[code]).newbyteorder("<")
    bin_size = os.path.getsize(prefix + ".bin")
    want = int(sizes.astype(np.int64).sum()) * dtype.itemsize
    if bin_size != want:
        raise ValueError(f"{prefix}.bin: {bin_size} bytes, the index describes {want}")
    return dtype, sizes


class MegatronSamples:
    """Fixed-length samples over the token stream of a Megatron indexed dataset.

    Sample k is tokens[k*seq_len : k*seq_len + seq_len + 1] (neighbours share one token, as
    Megatron's samples do), so there are (tokens - 1) // seq_len of them. Each epoch visits them in
    the order of a permutation drawn from seed + epoch; data-parallel rank r takes every dp_world-th
    sample of that order starting at r, so the ranks of one step see disjoint samples."""

    def __init__(self, prefix, seq_len, seed, dp_rank, dp_world):
        if seq_len < 1 or dp_world < 1 or not 0 <= dp_rank < dp_world:
            raise ValueError(f"seq_len {seq_len}, dp_rank {dp_rank}, dp_world {dp_world}")
        dtype, _ = read_index(prefix)
        self.tokens = np.memmap(prefix + ".bin", dtype=dtype, mode="r")
        self.seq_len, self.seed, self.dp_rank, self.dp_world = seq_len, seed, dp_rank, dp_world
        self.count = (len(self.tokens) - 1) // seq_len
        if self.count < dp_world:
            raise ValueError(f"{prefix}: {len(self.tokens)} tokens make {self.count} samples of "
                             f"{seq_len + 1} tokens, fewer than the {dp_world} data-parallel ranks")

    def sample(self, k):
        s = k * self.seq_len
        return np.asarray(self.tokens[s:s + self.seq_len + 1], dtype=np.int64)

    def __iter__(self):
        epoch = 0
        while True:
            order = np.random.RandomState((self.seed + epoch) % 2**32).permutation(self.count)
            for k in order[self.dp_rank::self.dp_world]:
                yield self.sample(int(k))
            epoch += 1


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


def _register():
    import torch
    from torch.utils.data import IterableDataset
    from torchtitan.components.dataloader import ParallelAwareDataloader
    from torchtitan.protocols.train_spec import get_train_spec, register_train_spec

    cfg = load_config()
    m = cfg["model"]
    base = get_train_spec("llama3")
    multiple_of, mult = ffn_arguments(m["hidden"], m["ffn"])
    args = dataclasses.replace(
        base.model_args["8B"],
        dim=m["hidden"], n_layers=m["layers"], n_heads=m["heads"], n_kv_heads=m["kv_heads"],
        vocab_size=m["vocab"], multiple_of=multiple_of, ffn_dim_multiplier=mult,
        rope_theta=m["rope_theta"], max_seq_len=m["max_positions"],
        # Scaling factor 1 makes TorchTitan's Llama 3.1 rope scaling the identity: no framework in
        # Rival applies rope scaling.
        rope_scaling_args=dataclasses.replace(base.model_args["8B"].rope_scaling_args, scaling_factor=1.0),
    )
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

    class Samples(IterableDataset):
        def __init__(self, reader):
            super().__init__()
            self.reader = reader

        def __iter__(self):
            for x in self.reader:
                t = torch.from_numpy(x)
                yield {"input": t[:-1]}, t[1:]

    def build_dataloader(dp_world_size, dp_rank, tokenizer=None, job_config=None, **_):
        reader = MegatronSamples(cfg["data_prefix"], job_config.training.seq_len, cfg["seed"],
                                 dp_rank, dp_world_size)
        return ParallelAwareDataloader(Samples(reader), dp_rank=dp_rank, dp_world_size=dp_world_size,
                                       batch_size=job_config.training.local_batch_size)

    from torchtitan.components.optimizer import OptimizersContainer

    init_std, layers = cfg["init_std"], m["layers"]

    class RivalTransformer(base.model_cls):
        def init_weights(self, *a, **kw):
            super().init_weights(*a, **kw)  # rope buffers, norms
            megatron_init(torch, self, init_std, self.model_args.n_layers)

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

    assert layers == args.n_layers
    spec = dataclasses.replace(base, model_cls=RivalTransformer, model_args={cfg["flavor"]: args},
                               build_dataloader_fn=build_dataloader, build_validator_fn=None,
                               build_optimizers_fn=build_optimizers)
    register_train_spec(SPEC_NAME, spec)


def _main(argv):
    if len(argv) != 8 or argv[1] != "samples":
        sys.exit(__doc__)
    prefix, seq_len, seed, rank, world, n = argv[2], *map(int, argv[3:])
    it = iter(MegatronSamples(prefix, seq_len, seed, rank, world))
    json.dump([next(it).tolist() for _ in range(n)], sys.stdout)


if __name__ == "__main__":
    _main(sys.argv)
else:
    try:
        import torchtitan  # noqa: F401  (present whenever TorchTitan imports this module)
    except ImportError:
        torchtitan = None
    if torchtitan is not None:
        _register()
