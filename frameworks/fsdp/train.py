"""Rival's plain-PyTorch trainer.

A Llama-architecture decoder (RMSNorm, rotary embeddings, grouped-query attention, SwiGLU, optional
QKV bias as in Qwen, optional sliding-window attention as in Mistral, untied output head unless
--tie-embeddings) trained with AdamW on a Megatron indexed dataset (.bin/.idx,
version 1). It prints Megatron-format iteration lines so that one log parser serves every framework.
One process: `python3 train.py ...`; more: torchrun, which sets RANK, WORLD_SIZE and LOCAL_RANK.
Exit codes: 0 done, 2 bad arguments or data, 3 torch/numpy missing or too old for what was asked.

Which data-parallel path runs depends on the torch it finds (docs/fsdp.md); the run prints it as
rival_fsdp_* entries of the arguments block:
  fsdp2   torch >= 2.6: fully_shard per decoder block and the root, MixedPrecisionPolicy (bf16 parameters
          for bf16 runs, fp32 gradient reduction), DTensor shards on a 1-D device mesh, parameters kept
          gathered from forward to backward
  fsdp1   torch 2.0-2.5: FullyShardedDataParallel per block, SHARD_GRAD_OP, MixedPrecision (same dtypes)
  ddp     torch whose FSDP cannot be imported (Debian 12's 1.13 under Python 3.11): DistributedDataParallel,
          fp32 parameters, bf16 runs under autocast
  single  one process: fp32 parameters, bf16 runs under autocast
Attention is scaled_dot_product_attention with enable_gqa (torch >= 2.5), else K/V repeated per group;
a sliding window on a GPU runs through FlexAttention (torch >= 2.5).
AdamW is fused where torch has the kernel for the device (CUDA from 2.0, CPU from 2.4), else foreach.
"""
import argparse
import contextlib
import importlib.util
import math
import os
import random
import struct
import sys
import time

MIN_TORCH = (1, 13)
HOW_TO_GET = ("Debian/Ubuntu: apt-get install python3-torch python3-numpy libopenblas0-pthread; "
              "elsewhere: pip install torch numpy (see https://pytorch.org/get-started)")
PREFIX = "[rival-fsdp]"


def fail(msg, code=2):
    print(f"train.py: error: {msg}", file=sys.stderr, flush=True)
    sys.exit(code)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a = p.add_argument
    a("--data-prefix", required=True, help="Megatron dataset path without .bin/.idx")
    a("--order-dir", required=True,
      help="folder of the sample order Rival wrote for the dataset (Megatron's document, sample and shuffle indices)")
    a("--dump-samples", default=None, metavar="FILE",
      help="write the first --dump-count samples the ranks will read, in global order, as int64 to FILE and exit")
    a("--dump-count", type=int, default=0)
    a("--check", action="store_true",
      help="with the run's own arguments: build the model on the meta device, its optimizer and LR schedule as"
           " training does, print the effective configuration (\"preflight effective: {json}\") and exit")
    a("--dump-world", type=int, default=1, help="the data-parallel world size the dump is for")
    a("--layers", type=int, required=True)
    a("--hidden", type=int, required=True)
    a("--ffn", type=int, required=True)
    a("--heads", type=int, required=True)
    a("--kv-heads", type=int, required=True)
    a("--vocab", type=int, required=True)
    a("--rope-theta", type=float, default=10000.0)
    a("--rope-scaling-factor", type=float, default=1.0,
      help="Llama 3 RoPE scaling (config.json rope_scaling, rope_type llama3): long wavelengths turn this many times slower; 1: plain RoPE")
    a("--rope-scaling-low-freq-factor", type=float, default=1.0)
    a("--rope-scaling-high-freq-factor", type=float, default=4.0)
    a("--rope-scaling-original-positions", type=int, default=8192)
    a("--qkv-bias", action="store_true")
    a("--norm-eps", type=float, default=1e-5)
    a("--init-std", type=float, default=0.02, help="std of the normal weight init (config.json initializer_range)")
    a("--window", type=int, default=0,
      help="sliding attention window: query i sees keys i-window..i, as Megatron's window_size (window, 0); 0: full causal")
    a("--tie-embeddings", action="store_true", help="the output layer shares the input embedding matrix")
    a("--adam-eps", type=float, default=1e-8)
    a("--seq-len", type=int, required=True)
    a("--micro-batch", type=int, default=1)
    a("--grad-accum", type=int, default=1)
    a("--train-iters", type=int, required=True)
    a("--lr", type=float, default=3e-4)
    a("--min-lr", type=float, default=None, help="cosine floor; default lr/10")
    a("--warmup-steps", type=int, default=0)
    a("--weight-decay", type=float, default=0.1)
    a("--beta1", type=float, default=0.9)
    a("--beta2", type=float, default=0.95)
    a("--seed", type=int, default=42)
    a("--precision", choices=["auto", "bf16", "fp32"], default="auto",
      help="auto: bf16 autocast on GPUs, fp32 on CPU")
    a("--attention", choices=["auto", "sdpa", "flex", "manual"], default="auto",
      help="auto: FlexAttention for a sliding window on GPUs when torch has it (torch >= 2.5), else "
           "scaled_dot_product_attention when torch has it")
    a("--compile", action="store_true", help="torch.compile the model (torch >= 2.0)")
    a("--log-interval", type=int, default=1)
    a("--threads", type=int, default=0, help="CPU threads per process; 0: all cores shared by local ranks")
    a("--eval-prefix", default=None,
      help="the held-out set Rival writes: one document of --eval-samples x --seq-len + 1 tokens whose windows"
           " k*seq_len .. +seq_len+1 are the held-out sequences")
    a("--eval-samples", type=int, default=0, help="held-out sequences each evaluation reads, the same ones every time")
    a("--eval-interval", type=int, default=0, help="iterations between evaluations; 0: none")
    a("--nproc-per-node", type=int, default=1,
      help="start this many local workers itself (one node, loopback rendezvous) instead of torchrun")
    args = p.parse_args(argv)
    positive = ["layers", "hidden", "ffn", "heads", "kv_heads", "vocab", "seq_len", "micro_batch",
                "grad_accum", "train_iters", "log_interval"]
    for name in positive:
        if getattr(args, name) <= 0:
            fail(f"--{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
    if args.heads % args.kv_heads:
        fail(f"--heads {args.heads} is not a multiple of --kv-heads {args.kv_heads}")
    if args.hidden % args.heads or (args.hidden // args.heads) % 2:
        fail(f"--hidden {args.hidden} must split into --heads {args.heads} heads of even size (rotary)")
    if args.min_lr is None:
        args.min_lr = args.lr / 10
    if not 0 < args.lr or not 0 <= args.min_lr <= args.lr:
        fail(f"need 0 <= --min-lr ({args.min_lr}) <= --lr ({args.lr}) and --lr > 0")
    if not 0 <= args.warmup_steps <= args.train_iters:
        fail(f"--warmup-steps {args.warmup_steps} must be in [0, --train-iters {args.train_iters}]")
    if not (0 <= args.beta1 < 1 and 0 <= args.beta2 < 1 and args.weight_decay >= 0):
        fail("--beta1/--beta2 must be in [0, 1) and --weight-decay >= 0")
    if not (0 < args.norm_eps < 1 and 0 < args.init_std < 1 and 0 < args.adam_eps < 1) or args.window < 0:
        fail("--norm-eps, --init-std and --adam-eps must lie in (0, 1) and --window must be >= 0")
    if args.threads < 0 or args.nproc_per_node < 1:
        fail("--threads must be >= 0 and --nproc-per-node >= 1")
    if args.eval_interval < 0 or args.eval_interval > 0 and (not args.eval_prefix or args.eval_samples < 1):
        fail("--eval-interval needs --eval-prefix and --eval-samples >= 1")
    if args.dump_samples and (args.dump_count < 1 or args.dump_world < 1):
        fail("--dump-samples needs --dump-count >= 1 and --dump-world >= 1")
    return args


def import_torch(args):
    """Imports torch and numpy, exiting 3 with how to get them when missing or too old."""
    try:
        import numpy  # noqa: F401
    except ImportError as e:
        fail(f"numpy is not importable ({e}). {HOW_TO_GET}", 3)
    try:
        import torch
    except ImportError as e:
        fail(f"PyTorch is not importable by {sys.executable} ({e}). {HOW_TO_GET}", 3)
    version = tuple(int("".join(c for c in part if c.isdigit()) or 0)
                    for part in torch.__version__.split("+")[0].split(".")[:2])
    if version < MIN_TORCH:
        fail(f"PyTorch {torch.__version__} is too old: need >= {'.'.join(map(str, MIN_TORCH))}. {HOW_TO_GET}", 3)
    if args.compile and not hasattr(torch, "compile"):
        fail(f"--compile needs torch >= 2.0, this is {torch.__version__}. {HOW_TO_GET}", 3)
    has_sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    if args.attention == "sdpa" and not has_sdpa:
        fail(f"--attention sdpa needs torch >= 2.0, this is {torch.__version__}. {HOW_TO_GET}", 3)
    try:
        has_flex = importlib.util.find_spec("torch.nn.attention.flex_attention") is not None
    except ImportError:  # torch < 2.2 has no torch.nn.attention package
        has_flex = False
    if args.attention == "flex" and not has_flex:
        fail(f"--attention flex needs torch >= 2.5 (torch.nn.attention.flex_attention), this is {torch.__version__}. {HOW_TO_GET}", 3)
    if args.attention == "auto" and has_flex and window_at(args, args.seq_len) and torch.cuda.is_available():
        # SDPA given an explicit mask leaves its fused causal kernels; FlexAttention's compiled kernel
        # skips the blocks the window masks.
        args.attention = "flex"
    elif args.attention != "flex":
        args.attention = "sdpa" if args.attention in ("auto", "sdpa") and has_sdpa else "manual"
    args.torch_version = version
    # enable_gqa (torch >= 2.5) lets the kernel read each K/V head for its group of query heads;
    # without it K and V are copied per group (repeat_interleave) before the call.
    args.gqa_native = False
    if args.attention == "flex":
        args.gqa_native = args.kv_heads != args.heads  # flex_attention's enable_gqa (torch >= 2.5)
    elif args.attention == "sdpa" and args.kv_heads != args.heads:
        q, kv = torch.zeros(1, 2, 2, 2), torch.zeros(1, 1, 2, 2)
        try:
            torch.nn.functional.scaled_dot_product_attention(q, kv, kv, is_causal=True, enable_gqa=True)
            args.gqa_native = True
        except TypeError:
            pass
    return torch


# Megatron .idx version 1 dtype codes.
DTYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 8: "uint16"}


def load_tokens(prefix):
    """Memory-maps a Megatron indexed dataset: its tokens, each sequence's first token and length, and the dtype."""
    import numpy as np
    idx_path, bin_path = prefix + ".idx", prefix + ".bin"
    try:
        with open(idx_path, "rb") as f:
            head = f.read(34)
        idx_size, bin_size = os.path.getsize(idx_path), os.path.getsize(bin_path)
    except OSError as e:
        fail(f"read dataset: {e}")
    if len(head) < 34 or head[:9] != b"MMIDIDX\x00\x00":
        fail(f"{idx_path}: not a Megatron indexed dataset index (bad magic or too short)")
    version, code, nseq, ndoc = struct.unpack("<QBQQ", head[9:])
    if version != 1 or code not in DTYPES:
        fail(f"{idx_path}: unsupported version {version} or token dtype code {code}")
    if idx_size != 34 + 12 * nseq + 8 * ndoc:
        fail(f"{idx_path}: size {idx_size} does not match {nseq} sequences and {ndoc} document entries")
    dtype = np.dtype(DTYPES[code])
    if nseq == 0 or bin_size == 0:
        fail(f"{prefix}: the dataset holds no tokens")
    lengths = np.memmap(idx_path, np.int32, "r", 34, (nseq,)).astype(np.int64)
    offsets = np.memmap(idx_path, np.int64, "r", 34 + 4 * nseq, (nseq,))
    data = np.memmap(bin_path, dtype, "r")
    starts = offsets // dtype.itemsize
    if (offsets % dtype.itemsize).any() or (lengths < 0).any() or int((starts + lengths).max()) > len(data):
        fail(f"{idx_path}: sequence offsets/lengths point outside {bin_path}")
    return data, starts, lengths, dtype


def order_base(seed, seq_len, num_samples):
    """The file stem of the sample order Rival writes for a run (gptorder.Order.Base)."""
    return f"rival-gptorder-seed{seed}-sl{seq_len}-n{num_samples}-x1"


class Samples:
    """Megatron's GPT samples in Megatron's order (docs/sample-order.md): sample g of training is row
    shuffle[g] of the sample index, seq_len+1 tokens running from one (document index position, offset)
    boundary to the next across sequences, as GPTDataset reads them. Rival writes the document, sample and
    shuffle indices (equal to Megatron's own for the seed) into order_dir before training."""

    def __init__(self, data, starts, lengths, order_dir, seed, seq_len, num_samples):
        import numpy as np
        base = os.path.join(order_dir, order_base(seed, seq_len, num_samples))
        try:
            self.doc = np.load(base + "-document_index.npy", mmap_mode="r")
            self.sample = np.load(base + "-sample_index.npy", mmap_mode="r")
            self.shuffle = np.load(base + "-shuffle_index.npy", mmap_mode="r")
        except (OSError, ValueError) as e:
            fail(f"read the sample order: {e} (Rival writes it before training: go run mage.go train:run ...)")
        if self.sample.ndim != 2 or self.sample.shape[1] != 2 or len(self.shuffle) < num_samples:
            fail(f"{base}-*.npy: {len(self.shuffle)} samples of shape {self.sample.shape}, the run needs {num_samples}")
        self.data, self.starts, self.lengths, self.seq_len = data, starts, lengths, seq_len
        self.count = num_samples

    def get(self, g):
        import numpy as np
        row = int(self.shuffle[g])
        (d0, o0), (d1, o1) = self.sample[row], self.sample[row + 1]
        parts = []
        for d in range(int(d0), int(d1) + 1):
            seq = int(self.doc[d])
            lo = int(o0) if d == d0 else 0
            hi = int(o1) + 1 if d == d1 else int(self.lengths[seq])
            s = int(self.starts[seq])
            parts.append(self.data[s + lo:s + hi])
        out = np.concatenate(parts).astype(np.int64)
        if len(out) != self.seq_len + 1:
            fail(f"sample {g}: {len(out)} tokens, want {self.seq_len + 1}: the sample order does not fit the dataset")
        return out


def sample_number(it, micro, rank, j, args, world):
    """The global sample a rank reads: iteration, micro step, then rank, as Megatron's
    MegatronPretrainingSampler hands out each global batch, so any world size sees the same stream."""
    return ((it - 1) * args.grad_accum + micro) * args.micro_batch * world + rank * args.micro_batch + j


def first_samples(args, samples, world, n):
    """The first n samples the ranks of a world of `world` read, in global order (iteration, micro step,
    rank, then place in the micro batch), each as little-endian int64 bytes."""
    done = 0
    for it in range(1, args.train_iters + 1):
        for micro in range(args.grad_accum):
            for rank in range(world):
                for j in range(args.micro_batch):
                    if done == n:
                        return
                    yield samples.get(sample_number(it, micro, rank, j, args, world)).astype("<i8").tobytes()
                    done += 1
    if done < n:
        fail(f"{n} samples asked: the run reads only {args.train_iters * global_batch(args, world)} samples")


def dump_samples(args, samples, world, n):
    """Writes the first n samples the ranks of a world of `world` would read, in global order, as
    little-endian int64 to args.dump_samples (Rival digests them with BLAKE3)."""
    with open(args.dump_samples, "wb") as f:
        for b in first_samples(args, samples, world, n):
            f.write(b)


# Global batches the check digests (as many as the sample digest a result records).
DIGEST_BATCHES = 8


def check_samples(args, world):
    """The SHA-256 of the first DIGEST_BATCHES global batches the run's ranks will read, through the
    trainer's own data path, as {"samples": n, "sha256": hex}; None when the dataset or the sample order
    is not there yet (train:check before encoding)."""
    import hashlib
    gbs = global_batch(args, world)
    base = os.path.join(args.order_dir, order_base(args.seed, args.seq_len, args.train_iters * gbs))
    if not (os.path.isfile(args.data_prefix + ".idx") and os.path.isfile(base + "-shuffle_index.npy")):
        return None
    tokens, starts, lengths, _ = load_tokens(args.data_prefix)
    samples = Samples(tokens, starts, lengths, args.order_dir, args.seed, args.seq_len, args.train_iters * gbs)
    n = min(DIGEST_BATCHES * gbs, samples.count)
    h = hashlib.sha256()
    for b in first_samples(args, samples, world, n):
        h.update(b)
    return {"samples": n, "sha256": h.hexdigest()}


class HeldOut:
    """Rival's held-out set (--eval-prefix): one sequence of n*seq_len + 1 tokens; held-out sequence k is
    its window k*seq_len .. k*seq_len + seq_len + 1, read in file order, the same every evaluation."""

    def __init__(self, args):
        tokens, starts, lengths, _ = load_tokens(args.eval_prefix)
        self.n, self.seq_len = args.eval_samples, args.seq_len
        if len(lengths) != 1 or int(lengths[0]) < self.n * self.seq_len + 1:
            fail(f"{args.eval_prefix}: the held-out set must be one sequence of at least"
                 f" {self.n * self.seq_len + 1} tokens ({len(lengths)} sequence(s) found): Rival writes it before training")
        self.tokens = tokens[int(starts[0]):int(starts[0]) + self.n * self.seq_len + 1]

    def get(self, k):
        return self.tokens[k * self.seq_len:k * self.seq_len + self.seq_len + 1].astype("int64")

    def ranks(self, rank, world):
        """The sequences a rank evaluates: a contiguous share, so the ranks together read each one once."""
        share = self.n // world
        return range(rank * share, (rank + 1) * share)


def check_held_out(args):
    """The SHA-256 of the held-out sequences the evaluation reads, in order, each as little-endian int64,
    as {"samples": n, "sha256": hex}; None without evaluation or before Rival wrote the set."""
    import hashlib
    if not args.eval_interval or not os.path.isfile(args.eval_prefix + ".idx"):
        return None
    held = HeldOut(args)
    h = hashlib.sha256()
    for k in range(held.n):
        h.update(held.get(k).astype("<i8").tobytes())
    return {"samples": held.n, "sha256": h.hexdigest()}


def evaluate(torch, model, held, args, rank, world, device, amp):
    """The held-out loss: cross entropy summed over every next token of every held-out sequence, over
    all ranks, divided by the number of tokens (weighted by valid tokens, as Megatron's evaluation)."""
    import numpy as np
    import torch.distributed as dist
    model.eval()
    total = torch.zeros(2, dtype=torch.float64, device=device)
    ks = list(held.ranks(rank, world))
    with torch.no_grad():
        for i in range(0, len(ks), args.micro_batch):
            batch = torch.from_numpy(np.stack([held.get(k) for k in ks[i:i + args.micro_batch]])).to(device)
            with amp:
                logits = model(batch[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, args.vocab), batch[:, 1:].reshape(-1),
                                                     reduction="sum")
            total[0] += loss.double()
            total[1] += batch[:, 1:].numel()
    if world > 1:
        dist.all_reduce(total)
    model.train()
    return float(total[0] / total[1])


def attention_mask(torch, t, window, device):
    """Boolean (t, t), True where query i must not see key j: every later key (j > i) and, with a
    window, every key more than `window` positions back (i - j > window): Megatron's window_size
    (window, 0), flash-attention's convention, under which a query sees itself and `window` keys
    before it."""
    pos = torch.arange(t, device=device)
    back = pos[:, None] - pos[None, :]
    masked = back < 0
    if window:
        masked = masked | (back > window)
    return masked


def sliding_window_mask_mod(window):
    """FlexAttention's mask function for attention_mask's rule: query q sees key kv when kv <= q and,
    with a window, q - kv <= window."""
    def mask_mod(b, h, q, kv):
        seen = kv <= q
        return seen & (q - kv <= window) if window else seen
    return mask_mod


FLEX_KERNELS = {}  # device type -> flex_attention, compiled on CUDA
BLOCK_MASKS = {}  # (length, window, device) -> BlockMask


def flex_attention(torch, device):
    """flex_attention compiled for CUDA (its fused kernel, which skips fully masked blocks), eager
    elsewhere (the same arithmetic, unfused: torch.compile on a CPU needs a C++ toolchain)."""
    if device.type not in FLEX_KERNELS:
        from torch.nn.attention.flex_attention import flex_attention as flex
        FLEX_KERNELS[device.type] = torch.compile(flex, dynamic=False) if device.type == "cuda" else flex
    return FLEX_KERNELS[device.type]


def flex_block_mask(torch, t, window, device):
    """The BlockMask of attention_mask(t, window) for flex_attention, built once per length and device."""
    key = (t, window, str(device))
    if key not in BLOCK_MASKS:
        from torch.nn.attention.flex_attention import create_block_mask
        BLOCK_MASKS[key] = create_block_mask(sliding_window_mask_mod(window), None, None, t, t, device=device)
    return BLOCK_MASKS[key]


def window_at(args, t):
    """The sliding window the decoder applies to t positions: --window when it masks anything there
    (a query sees itself and `window` keys back, so t - 1 > window), else 0 (full causal attention)."""
    return args.window if 0 < args.window < t - 1 else 0


def build_model(torch, args, device=None):
    """The decoder and its block class. device: where the weights are made (None: torch's default, or
    the device context training opens); "meta" builds the shapes without memory (--check)."""
    nn, F = torch.nn, torch.nn.functional
    head_dim = args.hidden // args.heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.eps = args.norm_eps
            self.weight = nn.Parameter(torch.ones(args.hidden, device=device))

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight

    def rotate(x, cos, sin):
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads, self.kv_heads = args.heads, args.kv_heads
            self.q = nn.Linear(args.hidden, args.heads * head_dim, bias=args.qkv_bias, device=device)
            self.k = nn.Linear(args.hidden, args.kv_heads * head_dim, bias=args.qkv_bias, device=device)
            self.v = nn.Linear(args.hidden, args.kv_heads * head_dim, bias=args.qkv_bias, device=device)
            self.o = nn.Linear(args.heads * head_dim, args.hidden, bias=False, device=device)

        def forward(self, x, cos, sin, mask):
            b, t, _ = x.shape
            heads, kv_heads = self.heads, self.kv_heads
            q = self.q(x).view(b, t, heads, head_dim).transpose(1, 2)
            k = self.k(x).view(b, t, kv_heads, head_dim).transpose(1, 2)
            v = self.v(x).view(b, t, kv_heads, head_dim).transpose(1, 2)
            cos, sin = cos.to(q.dtype), sin.to(q.dtype)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            # SDPA takes a mask only for a sliding window (True: attend); else its causal kernel.
            sdpa = dict(is_causal=True) if mask is None or args.attention == "flex" else dict(attn_mask=~mask)
            if args.attention == "flex":
                flex = flex_attention(torch, q.device)
                y = flex(q, k, v, block_mask=mask, enable_gqa=True) if args.gqa_native else flex(q, k, v, block_mask=mask)
            elif args.gqa_native:
                y = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **sdpa)
            elif args.attention == "sdpa":
                if kv_heads != heads:
                    k = k.repeat_interleave(heads // kv_heads, dim=1)
                    v = v.repeat_interleave(heads // kv_heads, dim=1)
                y = F.scaled_dot_product_attention(q, k, v, **sdpa)
            else:
                if kv_heads != heads:
                    k = k.repeat_interleave(heads // kv_heads, dim=1)
                    v = v.repeat_interleave(heads // kv_heads, dim=1)
                scores = (q @ k.transpose(-2, -1)).float() * head_dim ** -0.5
                y = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1).to(v.dtype) @ v
            return self.o(y.transpose(1, 2).reshape(b, t, heads * head_dim))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm, self.attn, self.mlp_norm = RMSNorm(), Attention(), RMSNorm()
            self.gate = nn.Linear(args.hidden, args.ffn, bias=False, device=device)
            self.up = nn.Linear(args.hidden, args.ffn, bias=False, device=device)
            self.down = nn.Linear(args.ffn, args.hidden, bias=False, device=device)

        def forward(self, x, cos, sin, mask):
            x = x + self.attn(self.attn_norm(x), cos, sin, mask)
            h = self.mlp_norm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(args.vocab, args.hidden, device=device)
            self.blocks = nn.ModuleList(Block() for _ in range(args.layers))
            self.norm = RMSNorm()
            self.head = nn.Linear(args.hidden, args.vocab, bias=False, device=device)
            if args.tie_embeddings:
                self.head.weight = self.embed.weight
            cos, sin = rotary_tables(torch, args, head_dim, args.seq_len, device)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)
            # Megatron's init: normal(0, init_std); output projections of each residual branch scaled by
            # 1/sqrt(2L). named_parameters lists a tied matrix once.
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    nn.init.zeros_(p)
                elif p.dim() == 2:
                    std = args.init_std
                    if name.endswith(("o.weight", "down.weight")):
                        std = args.init_std / math.sqrt(2 * args.layers)
                    nn.init.normal_(p, 0.0, std)

        def forward(self, tokens):
            t = tokens.shape[1]
            x = self.embed(tokens)
            # Built per call, not a buffer: gloo (CPU) cannot broadcast bool tensors when DDP syncs buffers.
            window = window_at(args, t)
            if args.attention == "flex":
                mask = flex_block_mask(torch, t, window, x.device)
            else:
                mask = None if args.attention == "sdpa" and not window else attention_mask(torch, t, window, x.device)
            for block in self.blocks:
                x = block(x, self.cos[:t], self.sin[:t], mask)
            return self.head(self.norm(x))

    return Decoder(), Block


def import_fsdp2(torch):
    """FSDP2's fully_shard, MixedPrecisionPolicy and DTensor: public in torch.distributed.fsdp from 2.6 on."""
    try:
        from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
        from torch.distributed.tensor import DTensor
    except ImportError:
        return None
    return fully_shard, MixedPrecisionPolicy, DTensor


def cpu_stream_events(torch):
    """FSDP2 orders its collectives with Stream.record_event and wait_event. torch 2.6's CPU stream stub
    lacks both (torch 2.7 adds them, as no-ops: pytorch/pytorch#145935); on the CPU every op runs in
    issue order on one stream, so the same no-ops are exact. Added only where missing."""
    stream = torch.cpu.Stream
    if not hasattr(stream, "record_event"):
        def record_event(self, event=None):
            event = event or torch.cpu.Event()
            event.record(self)
            return event
        stream.record_event = record_event
    if not hasattr(stream, "wait_event"):
        stream.wait_event = lambda self, event: None


def wrap(torch, model, Block, args, world, device, precision):
    """Wraps the model for data parallelism on this torch: fsdp2, fsdp1, ddp or (one process) single.
    Returns the model and what ran: path, the parameter dtype the matmuls see, the gradient reduction dtype,
    whether bf16 comes from autocast, and why a newer path was not taken."""
    cuda = device.type == "cuda"
    bf16 = precision == "bf16"
    dtype = torch.bfloat16 if bf16 else torch.float32
    run = {"path": "single", "param_dtype": "fp32", "reduce_dtype": "none (one process)", "autocast": bf16,
           "why": "", "sharding": ""}
    if world == 1:
        return model, run
    run["reduce_dtype"] = "fp32"
    fsdp2 = import_fsdp2(torch) if args.torch_version >= (2, 6) else None
    if fsdp2:
        fully_shard, MixedPrecisionPolicy, _ = fsdp2
        if device.type == "cpu":
            cpu_stream_events(torch)
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh(device.type, (world,))
        # Parameters all-gathered and used in bf16 (the sharded fp32 copy is what AdamW updates);
        # gradients reduce-scattered in fp32, as Megatron's distributed optimizer does. Kept unsharded
        # from forward to backward (ZeRO-2): one all-gather per step, as that optimizer does, not a
        # second one in backward; torch 2.6 on the CPU also fails that second gather (docs/fsdp.md).
        policy = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
        for block in model.blocks:
            fully_shard(block, mesh=mesh, mp_policy=policy, reshard_after_forward=False)
        fully_shard(model, mesh=mesh, mp_policy=policy, reshard_after_forward=False)
        run.update(path="fsdp2", param_dtype=precision, autocast=False)
        return model, run
    if args.torch_version >= (2, 6):
        run["why"] = "torch.distributed.fsdp lacks fully_shard"
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision, ShardingStrategy
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
        import inspect
        # use_orig_params (torch >= 2.0) keeps per-parameter names for weight decay and torch.compile.
        why = None if "use_orig_params" in inspect.signature(FSDP).parameters else "it lacks use_orig_params"
    except (ImportError, ValueError) as e:  # Debian's torch 1.13 on Python 3.11 cannot import its FSDP
        why = f"importing torch.distributed.fsdp raised {type(e).__name__}"
    if why:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if cuda else None)
        run.update(path="ddp", why=f"this torch's FSDP is unusable: {why}")
        return model, run
    import functools
    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    mixed = MixedPrecision(param_dtype=dtype, reduce_dtype=torch.float32) if bf16 else None
    # SHARD_GRAD_OP: the same one all-gather per step as fsdp2 above.
    model = FSDP(model, auto_wrap_policy=policy, device_id=device if cuda else None, use_orig_params=True,
                 mixed_precision=mixed, sharding_strategy=ShardingStrategy.SHARD_GRAD_OP)
    run.update(path="fsdp1", param_dtype=precision, autocast=False)
    return model, run


def fsdp2_sharding(torch, model, world):
    """Says how FSDP2 sharded the parameters: how many are DTensors, their placements, and the local
    element count on every rank (gathered, so rank 0 can print all of them)."""
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor
    params = list(model.parameters())
    shards = [p for p in params if isinstance(p, DTensor)]
    placements = sorted({repr(pl) for p in shards for pl in p.placements})
    local = sum(p.to_local().numel() for p in shards)
    counts = [None] * world
    dist.all_gather_object(counts, local)
    return (f"{len(shards)} of {len(params)} parameters are DTensors {'/'.join(placements) or '-'} on a"
            f" {world}-rank mesh | local elements per rank: {', '.join(str(c) for c in counts)}")


def adamw(torch, groups, args):
    """AdamW, fused where this torch has the kernel for the parameters' device, else foreach, else
    torch's default loop. Returns the optimizer and the implementation's name."""
    kw = dict(lr=args.lr, betas=(args.beta1, args.beta2), eps=args.adam_eps)
    for impl in ("fused", "foreach"):
        try:
            return torch.optim.AdamW(groups, **kw, **{impl: True}), impl
        except (TypeError, RuntimeError, ValueError):  # unknown keyword, or no kernel for this device
            pass
    return torch.optim.AdamW(groups, **kw), "for-loop"


SDP_BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def attention_kernel(torch, args, device, dtype):
    """Names the attention that runs: SDPA with enable_gqa or with repeated K/V, and the backend SDPA
    picks for this run's shapes, dtype and device; or the manual matmul-softmax-matmul."""
    if args.attention == "flex":
        how = "enable_gqa" if args.gqa_native else "MHA"
        return f"flex {how} {'compiled' if device.type == 'cuda' else 'eager'}"
    if args.attention != "sdpa":
        return "manual (K/V repeated per group)" if args.kv_heads != args.heads else "manual"
    how = "enable_gqa" if args.gqa_native else ("K/V repeated per group" if args.kv_heads != args.heads else "MHA")
    head_dim = args.hidden // args.heads
    kv_heads = args.kv_heads if args.gqa_native else args.heads
    backend = "backend unknown"
    try:
        q = torch.zeros(args.micro_batch, args.heads, args.seq_len, head_dim, device=device, dtype=dtype,
                        requires_grad=True)
        k = torch.zeros(args.micro_batch, kv_heads, args.seq_len, head_dim, device=device, dtype=dtype,
                        requires_grad=True)
        extra = {"enable_gqa": True} if args.gqa_native else {}
        choice = int(torch._fused_sdp_choice(q, k, k, None, 0.0, True, **extra))
        backend = SDP_BACKENDS.get(choice, f"backend {choice}")
    except (AttributeError, RuntimeError, TypeError):
        pass
    return f"sdpa {how} {backend}"


def flops_per_iteration(args, batch):
    """Megatron's num_floating_point_operations for a dense GQA + SwiGLU decoder: 3 (forward, wgrad, dgrad)
    x 2 (GEMMs per block) x 2 (multiply-add) x batch x seq x layers x hidden^2 x (attention with the causal
    half of QK^T and AV + gated MLP + logit layer)."""
    h, s, n = args.hidden, args.seq_len, args.layers
    attention = (1 + args.kv_heads / args.heads + s / h / 2) * (args.heads * (h // args.heads) / h)
    mlp = args.ffn / h * 3 / 2
    logit = args.vocab / (2 * n * h)
    return 12 * batch * s * n * h * h * (attention + mlp + logit)


def lr_at(args, steps):
    """The learning rate after `steps` optimizer steps, as Megatron's OptimizerParamScheduler.get_lr with
    --lr-decay-style cosine and --lr-decay-iters train_iters: linear warmup from 0 to lr over warmup_steps,
    then cosine to min_lr at train_iters, min_lr after."""
    if args.warmup_steps > 0 and steps <= args.warmup_steps:
        return args.lr * steps / args.warmup_steps
    if steps >= args.train_iters:
        return args.min_lr
    ratio = (steps - args.warmup_steps) / (args.train_iters - args.warmup_steps)
    return args.min_lr + (args.lr - args.min_lr) * 0.5 * (1 + math.cos(math.pi * ratio))


def rope_inv_freq(torch, args, head_dim, device):
    """The rotary inverse frequencies: theta^(-2i/d), with Llama 3's scaling when --rope-scaling-factor
    is not 1 (bands slower than original/low divided by the factor, faster than original/high kept,
    those between interpolated), in float64."""
    inv = 1.0 / args.rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim)
    factor = args.rope_scaling_factor
    if factor == 1.0:
        return inv
    low, high, orig = args.rope_scaling_low_freq_factor, args.rope_scaling_high_freq_factor, args.rope_scaling_original_positions
    wavelen = 2 * math.pi / inv
    smooth = (orig / wavelen - low) / (high - low)
    mid = (1 - smooth) * inv / factor + smooth * inv
    return torch.where(wavelen > orig / low, inv / factor, torch.where(wavelen < orig / high, inv, mid))


def rotary_tables(torch, args, head_dim, seq_len, device):
    """cos and sin of every position's angles (position × inverse frequency), as the attention applies them."""
    inv = rope_inv_freq(torch, args, head_dim, device)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float64, device=device), inv)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos().float(), angles.sin().float()


def llama3_frequencies(theta, dim, scaling):
    """The read-back's own RoPE inverse frequencies from the definition (Llama 3 scaling as (factor,
    low, high, original) or None), in Python floats: independent of rope_inv_freq, which it checks."""
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


def read_rope(torch, args, head_dim, out, unread):
    """rope_theta and the scaling as the model computes them: the angles at position 1 of the tables the
    attention uses (rotary_tables on the CPU), band by band against the arguments' own definition."""
    cos, sin = rotary_tables(torch, args, head_dim, 2, "cpu")
    got = [math.atan2(float(sin[1, i]), float(cos[1, i])) for i in range(head_dim // 2)]
    declared = (args.rope_scaling_factor, args.rope_scaling_low_freq_factor, args.rope_scaling_high_freq_factor,
                args.rope_scaling_original_positions)
    want = llama3_frequencies(args.rope_theta, head_dim, None if declared[0] == 1.0 else declared)
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if abs(g - w) > 1e-5 * w]
    if bad:
        i, g, w = bad[0]
        unread.append("rope_theta: band %d of the model's rotary angles is %.9g, θ %g with scaling %s gives %.9g"
                      % (i, g, args.rope_theta, declared, w))
        for f in ("rope_scaling", "rope_scaling_low_freq_factor", "rope_scaling_high_freq_factor", "rope_scaling_original_positions"):
            unread.append("%s: the model's rotary angles differ from the declared scaling in %d bands" % (f, len(bad)))
        return
    out["rope_theta"] = float(args.rope_theta)
    if declared[0] == 1.0:
        out.update(rope_scaling=1.0, rope_scaling_low_freq_factor=0.0, rope_scaling_high_freq_factor=0.0,
                   rope_scaling_original_positions=0)
    else:
        out.update(rope_scaling=float(declared[0]), rope_scaling_low_freq_factor=float(declared[1]),
                   rope_scaling_high_freq_factor=float(declared[2]), rope_scaling_original_positions=int(declared[3]))


def next_token_loss(torch, logits, batch, vocab):
    """Cross entropy of every next token of the batch (samples of seq_len + 1 tokens), averaged in fp32."""
    return torch.nn.functional.cross_entropy(logits.float().reshape(-1, vocab), batch[:, 1:].reshape(-1))


def hf_names(args):
    """The Hugging Face (Llama, Qwen2, Mistral) name of each of the decoder's parameters."""
    names = {"embed.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight",
             "head.weight": "model.embed_tokens.weight" if args.tie_embeddings else "lm_head.weight"}
    parts = {"attn_norm.weight": "input_layernorm.weight", "mlp_norm.weight": "post_attention_layernorm.weight",
             "gate.weight": "mlp.gate_proj.weight", "up.weight": "mlp.up_proj.weight", "down.weight": "mlp.down_proj.weight"}
    for x in "qkvo":
        parts["attn.%s.weight" % x] = "self_attn.%s_proj.weight" % x
        if x != "o" and args.qkv_bias:
            parts["attn.%s.bias" % x] = "self_attn.%s_proj.bias" % x
    for i in range(args.layers):
        names.update({"blocks.%d.%s" % (i, k): "model.layers.%d.%s" % (i, v) for k, v in parts.items()})
    return names


def state_dict_from_hf(tensors, args):
    """The decoder's state dict from a Hugging Face checkpoint's tensors (the trainer's loader); a
    missing tensor is an error naming it."""
    out = {}
    for name, hf in hf_names(args).items():
        if hf not in tensors:
            fail("checkpoint: no tensor %s for the decoder's %s" % (hf, name))
        out[name] = tensors[hf]
    return out


def step_lr(args, it):
    """The learning rate iteration `it` (from 1) updates the weights with. Megatron's scheduler steps after
    the optimizer, so iteration it trains with the rate after it - 1 steps (0 at iteration 1 with warmup)
    and logs the one after it steps, lr_at(args, it)."""
    return lr_at(args, it - 1)


# The gradient norm clip (Megatron's --clip-grad, which every Rival launch sets to 1.0).
CLIP_GRAD = 1.0


def global_batch(args, world):
    """Samples per iteration over all data-parallel ranks."""
    return args.micro_batch * args.grad_accum * world


def run_precision(args, cuda):
    """The precision the run trains in: --precision, or for auto bf16 on GPUs and fp32 on the CPU."""
    return args.precision if args.precision != "auto" else ("bf16" if cuda else "fp32")


def no_decay_names(model):
    """Megatron's rule: no weight decay on biases and norm weights. Decided by name on the bare model,
    before wrapping, because FSDP flattens sharded parameters to 1-D."""
    return {n for n, _ in model.named_parameters() if n.endswith(("norm.weight", ".bias"))}


def param_groups(named, no_decay, args):
    """AdamW's parameter groups: weight decay on every parameter but those named in no_decay."""
    return [{"params": [p for n, p in named if n not in no_decay], "weight_decay": args.weight_decay},
            {"params": [p for n, p in named if n in no_decay], "weight_decay": 0.0}]


def spawn(n):
    """Runs n local workers of this script with torchrun's environment (env:// rendezvous on loopback).
    Needed where torchrun itself is unusable: Debian's torch 1.13 under Python 3.11 fails to parse its own
    default --redirects. A failing worker stops the others; the first failure's exit code is returned.
    Workers die with this process: SIGTERM/SIGINT are passed on, and on Linux a killed parent takes them along."""
    import signal
    import socket
    import subprocess
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(n),
               LOCAL_WORLD_SIZE=str(n), GROUP_RANK="0")
    # From torch 2.4 on, env:// asks for a libuv TCPStore unless USE_LIBUV=0; Debian's python3-torch 2.6
    # is built without libuv and would fail. The store only carries the rendezvous, so the plain one serves.
    env.setdefault("USE_LIBUV", "0")

    def die_with_parent():
        try:
            import ctypes
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    procs = [subprocess.Popen([sys.executable] + sys.argv, env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                              preexec_fn=die_with_parent if sys.platform == "linux" else None)
             for r in range(n)]

    def stop(signum, _frame):
        for p in procs:
            p.terminate()
        sys.exit(128 + signum)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code, running = 0, list(procs)
    while running:
        for p in list(running):
            rc = p.poll()
            if rc is None:
                continue
            running.remove(p)
            if rc and not code:
                code = rc if rc > 0 else 1
                for other in running:
                    other.terminate()
        time.sleep(0.1)
    return code


INIT_FUNCTIONS = ("normal_", "trunc_normal_", "uniform_", "zeros_", "ones_", "constant_", "kaiming_uniform_",
                  "kaiming_normal_", "xavier_uniform_", "xavier_normal_", "orthogonal_")


def build_recording_init(torch, args):
    """build_model on the meta device, recording the last torch.nn.init call on each parameter (the
    init the weights would end with): {id(parameter): (function, std or None)}."""
    init, last, saved = torch.nn.init, {}, {}

    def recorder(name, f):
        def call(tensor, *a, **kw):
            std = None
            if name in ("normal_", "trunc_normal_"):
                std = float(kw.get("std", a[1] if len(a) > 1 else 1.0))
            elif name in ("zeros_", "ones_"):
                std = 0.0
            last[id(tensor)] = (name, std)
            return f(tensor, *a, **kw)
        return call
    for name in INIT_FUNCTIONS:
        if hasattr(init, name):
            saved[name] = getattr(init, name)
            setattr(init, name, recorder(name, saved[name]))
    try:
        model, _ = build_model(torch, args, device="meta")
    finally:
        for name, f in saved.items():
            setattr(init, name, f)
    return model, last


def schedule_of(lrs, tol=1e-9):
    """Megatron's terms for a schedule given as the rate after n steps (n = 0, 1, ...): peak lr, min lr,
    warmup steps (linear from 0), decay style and the step at which the decay reaches min lr. None where
    the rates fit no warmup-then-decay schedule."""
    def near(a, b):
        return abs(a - b) <= tol * max(abs(a), abs(b), 1e-30)
    peak, floor = max(lrs), lrs[-1]
    warmup = next(n for n, v in enumerate(lrs) if near(v, peak))
    if any(not near(lrs[n], peak * n / warmup) for n in range(warmup)):
        return None
    end = next((n for n in range(warmup, len(lrs)) if near(lrs[n], floor)), None)
    if end is None or any(not near(v, floor) for v in lrs[end:]):
        return None
    style = "constant" if near(peak, floor) else None
    for name, coeff in (("cosine", lambda r: 0.5 * (1 + math.cos(math.pi * r))), ("linear", lambda r: 1 - r)):
        if style is None and all(near(lrs[n], floor + (peak - floor) * coeff((n - warmup) / (end - warmup)))
                                 for n in range(warmup, end + 1)):
            style = name
    if style is None:
        return None
    return {"lr": peak, "min_lr": floor, "lr_warmup_iters": warmup, "lr_decay_style": style, "lr_decay_iters": end}


def decay_by_kind(torch, model, args):
    """AdamW over the parameter groups training builds for model, and for each kind of parameter (by its
    module: embedding, norm, linear, bias, output) whether its groups decay it; plus the decay rates."""
    nn, kinds = torch.nn, {}
    for m in model.modules():
        if isinstance(m, nn.Embedding):
            kinds[id(m.weight)] = "embedding"
        elif type(m).__name__ == "RMSNorm":
            kinds[id(m.weight)] = "norm"
        elif isinstance(m, nn.Linear):
            if m.bias is not None:
                kinds[id(m.bias)] = "bias"
            if id(m.weight) not in kinds:  # a tied output layer's weight is the embedding
                kinds[id(m.weight)] = "output" if m is model.head else "linear"
    opt, _ = adamw(torch, param_groups(list(model.named_parameters()), no_decay_names(model), args), args)
    decayed, rates = {}, set()
    for group in opt.param_groups:
        for p in group["params"]:
            decayed.setdefault(kinds.get(id(p), "unknown"), set()).add(group["weight_decay"] != 0)
            if group["weight_decay"] != 0:
                rates.add(float(group["weight_decay"]))
    return opt, decayed, rates


def check(torch, args):
    """--check: the effective configuration of this launch, read back from what the trainer builds: the
    decoder (on the meta device: shapes and init calls, no memory), AdamW over the parameter groups
    training builds, and the learning rates the training loop sets. Prints "preflight effective: {json}"
    (frameworks/effective's fields) and "preflight ok: ..."."""
    import json
    nn = torch.nn
    world = int(os.environ.get("WORLD_SIZE", str(args.nproc_per_node)))
    model, inits = build_recording_init(torch, args)
    out, unread = {}, []
    blocks = list(model.blocks)
    attn0 = blocks[0].attn
    head_dim = attn0.q.out_features // attn0.heads
    out.update(hidden=model.embed.embedding_dim, layers=len(blocks), heads=attn0.heads,
               kv_heads=attn0.k.out_features // head_dim, ffn=blocks[0].gate.out_features,
               vocab=model.embed.num_embeddings, head_dim=head_dim,
               rotary_percent=1.0,  # the rotary tables span the whole head (rotary_tables)
               qk_norm=any(n.endswith(("q_norm", "k_norm")) for n, _ in model.named_modules()))
    if model.head.out_features != model.embed.num_embeddings:
        unread.append(f"vocab: the output layer has {model.head.out_features} rows, the embedding {model.embed.num_embeddings}")
    out["activation"] = "swiglu" if all(hasattr(b, "gate") and hasattr(b, "up") for b in blocks) else "unknown"
    norms = [m for m in model.modules() if type(m).__name__ == "RMSNorm"]
    out["norm"] = "RMSNorm"
    eps = {m.eps for m in norms}
    if len(eps) == 1:
        out["norm_eps"] = float(eps.pop())
    else:
        unread.append(f"norm_eps: the norms use {sorted(eps)}")
    read_rope(torch, args, head_dim, out, unread)
    out["window"] = window_at(args, args.seq_len)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    qkv = [l for b in blocks for l in (b.attn.q, b.attn.k, b.attn.v)]
    out["qkv_bias"] = all(l.bias is not None for l in qkv)
    if any(l.bias is not None for l in qkv) != out["qkv_bias"]:
        unread.append("qkv_bias: some query/key/value projections have a bias, others not")
    out["linear_bias"] = any(l.bias is not None for l in linears if l not in qkv)
    out["tied_embeddings"] = model.head.weight is model.embed.weight

    def std(params, field):
        got = {inits.get(id(p), ("none", None)) for p in params}
        if len(got) == 1 and next(iter(got))[0] in ("normal_", "trunc_normal_"):
            out[field] = next(iter(got))[1]
        else:
            unread.append(f"{field}: the weights' last init calls are {sorted(str(g) for g in got)}")
    std([l.weight for b in blocks for l in (b.attn.q, b.attn.k, b.attn.v, b.gate, b.up)], "init_std")
    std([model.embed.weight], "embedding_init_std")
    std([l.weight for b in blocks for l in (b.attn.o, b.down)], "residual_init_std")
    std([model.head.weight], "output_init_std")
    dropouts = [m for m in model.modules() if isinstance(m, nn.modules.dropout._DropoutNd)]
    if dropouts:
        unread.append(f"hidden_dropout: the decoder holds {len(dropouts)} dropout module(s)")
    else:
        out["hidden_dropout"] = 0.0
    out["attention_dropout"] = 0.0  # scaled_dot_product_attention and the manual path run without dropout
    if args.precision == "auto":
        unread.append("precision: --precision auto resolves on the run's device (bf16 on GPUs, fp32 on the CPU)")
    else:
        out["precision"] = run_precision(args, False)
    out["fp8_recipe"] = ""

    # AdamW over the parameter groups training builds: the decay rate, and which kinds of parameter the
    # groups decay (asked with a rate of 1 when the run's is 0, so the rule shows, as Megatron's
    # wd_mult does).
    opt, _, rates = decay_by_kind(torch, model, args)
    rule = args if args.weight_decay else argparse.Namespace(**dict(vars(args), weight_decay=1.0))
    _, decayed, rule_rates = decay_by_kind(torch, model, rule)
    if "bias" not in decayed:
        # The model has no bias: the rule is asked about the biases of the same decoder built with QKV bias.
        probe = argparse.Namespace(**dict(vars(rule), qkv_bias=True, layers=1))
        _, probed, _ = decay_by_kind(torch, build_model(torch, probe, device="meta")[0], probe)
        decayed["bias"] = probed["bias"]
    split = sorted(k for k, v in decayed.items() if len(v) > 1)
    if split or len(rates) > 1 or len(rule_rates) > 1:
        unread.append(f"no_decay: weight decay splits parameter kind(s) {split} or differs ({sorted(rates)})")
    else:
        out["no_decay"] = sorted(k for k, v in decayed.items() if True not in v)
    out["weight_decay"] = rates.pop() if len(rates) == 1 else 0.0
    beta1, beta2 = opt.defaults["betas"]
    out.update(adam_beta1=float(beta1), adam_beta2=float(beta2), adam_eps=float(opt.defaults["eps"]))

    # The schedule: the rates the training loop sets, iteration by iteration and past the end, read in
    # Megatron's terms (the rate after n optimizer steps trains iteration n + 1).
    rates = [step_lr(args, it) for it in range(1, 2 * args.train_iters + 3)]
    sched = schedule_of(rates)
    # The rate warm-up starts from is the one iteration 1 trains at (0 in Megatron's schedule).
    out["lr_warmup_init"] = rates[0] if args.warmup_steps > 0 else 0.0
    if sched is None:
        unread.append("lr: the rates the training loop sets for iterations 1, 2, 3 (%s) fit no schedule of linear"
                      " warmup from 0 then decay" % ", ".join("%g" % r for r in rates[:3]))
    else:
        out.update(sched)
    out["clip_grad"] = CLIP_GRAD
    out.update(gbs=global_batch(args, world), mbs=args.micro_batch, seq_len=args.seq_len,
               eod_mask_loss=False,  # the loss is cross entropy over every next token: the trainer knows no EOD
               reset_position_ids=False, reset_attention_mask=False,  # nor documents inside a sample
               train_iters=args.train_iters, seed=args.seed)
    if unread:
        out["unread"] = unread
    print("preflight effective: " + json.dumps(out, sort_keys=True), flush=True)
    digest = check_samples(args, world)
    if digest:
        print("preflight samples: " + json.dumps(digest, sort_keys=True), flush=True)
    held = check_held_out(args)
    if held:
        print("preflight held-out: " + json.dumps(held, sort_keys=True), flush=True)
    params = sum(p.numel() for p in model.parameters())
    print(f"preflight ok: fsdp train.py built the decoder on the meta device ({params} parameters), AdamW over its"
          f" parameter groups and the learning rates of {args.train_iters} iterations for {world} data-parallel"
          f" rank(s) (torch {torch.__version__})", flush=True)


def main():
    args = parse_args()
    if args.check:
        check(import_torch(args), args)
        return
    if args.dump_samples:
        # The data path alone (numpy, no torch): what the ranks of a --dump-world run would read.
        tokens, starts, lengths, _ = load_tokens(args.data_prefix)
        n = args.train_iters * args.micro_batch * args.grad_accum * args.dump_world
        dump_samples(args, Samples(tokens, starts, lengths, args.order_dir, args.seed, args.seq_len, n),
                     args.dump_world, args.dump_count)
        return
    # OpenMP threads that sleep rather than spin while waiting: on shared CPUs (CI) spinning made a 2-thread
    # step 7x slower (docs/fsdp.md); on GPUs the host threads matter little. Read by libgomp when torch loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    torch = import_torch(args)
    if args.nproc_per_node > 1 and "RANK" not in os.environ:
        sys.exit(spawn(args.nproc_per_node))
    import numpy as np
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    threads = args.threads or max(1, (os.cpu_count() or 1) // max(1, local_world))
    torch.set_num_threads(threads)
    if world > 1:
        dist.init_process_group("nccl" if cuda else "gloo")
    say = (lambda line: print(line, flush=True)) if rank == 0 else (lambda line: None)

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    tokens, starts, lengths, dtype = load_tokens(args.data_prefix)
    top = int(tokens.max())
    if top >= args.vocab or int(tokens.min()) < 0:
        fail(f"{args.data_prefix}: token ids span [{int(tokens.min())}, {top}] but --vocab is {args.vocab}; "
             f"give the tokenizer's vocabulary size (with added tokens)")
    gbs = global_batch(args, world)
    samples = Samples(tokens, starts, lengths, args.order_dir, args.seed, args.seq_len, args.train_iters * gbs)
    held = HeldOut(args) if args.eval_interval else None
    if held is not None and held.n % (args.micro_batch * world):
        fail(f"--eval-samples {held.n} is not a multiple of micro batch x world = {args.micro_batch * world}")

    precision = run_precision(args, cuda)
    # On GPUs, build the weights there (torch >= 2.0): an 8B model in fp32 per rank would not fit host memory.
    with device if cuda and hasattr(device, "__enter__") else contextlib.nullcontext():
        model, Block = build_model(torch, args)
    params = sum(p.numel() for p in model.parameters())
    model.to(device)
    no_decay = no_decay_names(model)
    model, run = wrap(torch, model, Block, args, world, device, precision)

    def bare(name):  # the name without the wrappers' prefixes
        name = name.replace("_fsdp_wrapped_module.", "").replace("_orig_mod.", "")
        return name[len("module."):] if name.startswith("module.") else name
    named = [(bare(n), p) for n, p in model.named_parameters()]
    assert {n for n, _ in named} >= no_decay, "parameter names changed under the wrapper"
    opt, run["optimizer"] = adamw(torch, param_groups(named, no_decay, args), args)
    run["attention"] = attention_kernel(torch, args, device, torch.bfloat16 if precision == "bf16" else torch.float32)
    if run["path"] == "fsdp2":
        run["sharding"] = fsdp2_sharding(torch, model, world)
    step_model = torch.compile(model) if args.compile else model
    flops = flops_per_iteration(args, gbs)

    param_dtype = run["param_dtype"] + (", bf16 autocast" if run["autocast"] else "")
    say(f"{PREFIX} torch version: {torch.__version__} | python: {sys.version.split()[0]}")
    say(f"{PREFIX} device: {device.type}{' ' + torch.cuda.get_device_name(device) if cuda else ''}"
        f" | threads per process: {threads} | world size: {world} | data parallel: {run['path']}"
        f"{' (' + run['why'] + ')' if run['why'] else ''} | gradient accumulation: {args.grad_accum}")
    say(f"{PREFIX} parameters: {param_dtype} | gradient reduction: {run['reduce_dtype']}")
    if run["sharding"]:
        say(f"{PREFIX} sharding: {run['sharding']}")
    # Megatron's arguments block and parameter line, so the one Megatron log parser reads these facts too.
    megatron = {
        "num_layers": args.layers, "hidden_size": args.hidden, "ffn_hidden_size": args.ffn,
        "num_attention_heads": args.heads, "num_query_groups": args.kv_heads,
        "group_query_attention": args.kv_heads != args.heads, "vocab_size": args.vocab,
        "position_embedding_type": "rope", "rotary_base": args.rope_theta, "add_qkv_bias": args.qkv_bias,
        "use_rope_scaling": args.rope_scaling_factor != 1.0, "rope_scaling_factor": args.rope_scaling_factor,
        "normalization": "RMSNorm", "norm_epsilon": args.norm_eps, "swiglu": True,
        "init_method_std": args.init_std, "window_size": f"({args.window}, 0)" if args.window else None,
        "untie_embeddings_and_output_weights": not args.tie_embeddings, "seq_length": args.seq_len,
        "micro_batch_size": args.micro_batch, "global_batch_size": gbs, "train_iters": args.train_iters,
        "lr": args.lr, "min_lr": args.min_lr, "lr_decay_style": "cosine", "lr_warmup_iters": args.warmup_steps,
        "weight_decay": args.weight_decay, "adam_beta1": args.beta1, "adam_beta2": args.beta2, "adam_eps": args.adam_eps,
        "clip_grad": CLIP_GRAD, "seed": args.seed, "bf16": precision == "bf16", "log_interval": args.log_interval,
        "world_size": world, "data_parallel_size": world, "tensor_model_parallel_size": 1,
        "pipeline_model_parallel_size": 1, "context_parallel_size": 1, "data_path": args.data_prefix,
        # What ran, for the result (docs/fsdp.md): read back by frameworks/fsdp.RuntimeFromArgs.
        "rival_fsdp_path": run["path"], "rival_fsdp_torch": torch.__version__.split("+")[0],
        "rival_fsdp_param_dtype": param_dtype, "rival_fsdp_reduce_dtype": run["reduce_dtype"],
        "rival_fsdp_attention": run["attention"], "rival_fsdp_optimizer": "AdamW " + run["optimizer"],
    }
    say("------------------------ arguments ------------------------")
    for name in sorted(megatron):
        say(f"  {name} {'.' * (48 - len(name))} {megatron[name]}")
    say("-------------------- end of arguments ---------------------")
    say(f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {params}")
    say(f"{PREFIX} data: {args.data_prefix} | {len(tokens)} tokens ({dtype}) | {samples.count} samples"
        f" of seq length + 1 in Megatron's GPTDataset order for seed {args.seed} ({args.order_dir})")
    if held is not None:
        say(f"{PREFIX} held-out: {args.eval_prefix} | {held.n} sequences of seq length + 1, in file order, every"
            f" {args.eval_interval} iterations ({args.eval_interval * gbs} samples)")
    say(f"{PREFIX} precision: {precision} | attention: {run['attention']} | compile: {args.compile}")
    say(f"{PREFIX} optimizer: AdamW ({run['optimizer']}) lr {args.lr:g} betas ({args.beta1:g}, {args.beta2:g}) eps {args.adam_eps:g}"
        f" | weight decay {args.weight_decay:g} on {len(named) - len(no_decay)} tensors, none on"
        f" {len(no_decay)} (biases, norms) | grad clip {CLIP_GRAD:g}")
    say(f"{PREFIX} lr schedule: linear warmup from 0 to {args.lr:g} over {args.warmup_steps} steps, cosine"
        f" to min lr {args.min_lr:g} at step {args.train_iters}; as in Megatron, step i trains with the rate"
        f" after i - 1 steps and the log shows the one after i")
    say(f"{PREFIX} FLOPs per iteration: {flops:.6E} (Megatron num_floating_point_operations: causal"
        f" attention, GQA, SwiGLU, logit layer; throughput = FLOPs / time / world size)")

    # fsdp2/fsdp1 hand the blocks bf16 parameters themselves; autocast only where the weights stay fp32.
    amp = (torch.autocast(device_type=device.type, dtype=torch.bfloat16) if run["autocast"]
           else contextlib.nullcontext())
    interval_loss, interval_iters, interval_time = 0.0, 0, 0.0
    skipped = nans = 0
    memory_reported = False
    # What the first block's query projection really computes with in the first forward (the policy's
    # word is not taken for it): its weight's dtype and that of its output.
    seen = {}

    def observe(module, inputs, output):
        if not seen:
            seen.update(weight=str(module.weight.dtype).replace("torch.", ""),
                        output=str(output.dtype).replace("torch.", ""))
    hook = model.blocks[0].attn.q.register_forward_hook(observe) if hasattr(model, "blocks") else None
    if hook is None:  # DDP and FSDP1 keep the decoder under .module
        hook = model.module.blocks[0].attn.q.register_forward_hook(observe)
    for it in range(1, args.train_iters + 1):
        start = time.perf_counter()
        for group in opt.param_groups:
            group["lr"] = step_lr(args, it)
        lr = lr_at(args, it)  # what Megatron logs for the iteration: its scheduler's rate after the step
        loss_sum = torch.zeros((), device=device)
        for micro in range(args.grad_accum):
            # Global sample number: iteration, micro step, then rank, so any world size sees the same stream.
            batch = np.stack([samples.get(sample_number(it, micro, rank, j, args, world))
                              for j in range(args.micro_batch)])
            batch = torch.from_numpy(batch).to(device, non_blocking=True)
            with amp:
                logits = step_model(batch[:, :-1])
            loss = next_token_loss(torch, logits, batch, args.vocab)
            (loss / args.grad_accum).backward()
            loss_sum += loss.detach()
        if run["path"] == "fsdp1":
            grad_norm = model.clip_grad_norm_(CLIP_GRAD)  # the norm over all flat shards
        else:
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_GRAD)
        if hasattr(grad_norm, "full_tensor"):  # fsdp2: a DTensor over the shards' partial norms
            grad_norm = grad_norm.full_tensor()
        grad_norm = float(grad_norm)
        if math.isfinite(grad_norm):
            opt.step()
        else:
            skipped += 1
        opt.zero_grad(set_to_none=True)
        if world > 1:
            dist.all_reduce(loss_sum)
        iter_loss = float(loss_sum) / args.grad_accum / world
        if cuda:
            torch.cuda.synchronize()
        interval_time += time.perf_counter() - start
        if math.isfinite(iter_loss):
            interval_loss += iter_loss
            interval_iters += 1
        else:
            nans += 1
        if it % args.log_interval == 0 or it == args.train_iters:
            n = it % args.log_interval or args.log_interval
            ms = interval_time / n * 1000.0
            avg = interval_loss / interval_iters if interval_iters else float("nan")
            say(f" [{time.strftime('%Y-%m-%d %H:%M:%S')}] iteration {it:8d}/{args.train_iters:8d} |"
                f" consumed samples: {it * gbs:12d} | elapsed time per iteration (ms): {ms:.1f} |"
                f" throughput per GPU (TFLOP/s/GPU): {flops / (ms / 1000.0) / 1e12 / world:.1f} |"
                f" learning rate: {lr:.6E} | global batch size: {gbs:5d} | lm loss: {avg:.6E} |"
                f" loss scale: 1.0 | grad norm: {grad_norm:.3f} | number of skipped iterations: {skipped:3d} |"
                f" number of nan iterations: {nans:3d} |")
            interval_loss, interval_iters, interval_time, skipped, nans = 0.0, 0, 0.0, 0, 0
            if cuda and not memory_reported:  # once, after the first log line, as Megatron does
                mb, c = 1024 * 1024, torch.cuda
                say(f"[Rank {rank}] (after {it} iterations) memory (MB) | allocated: {c.memory_allocated() / mb}"
                    f" | max allocated: {c.max_memory_allocated() / mb} | reserved: {c.memory_reserved() / mb}"
                    f" | max reserved: {c.max_memory_reserved() / mb}")
                memory_reported = True
        if hook is not None and seen:
            hook.remove()
            hook = None
            say(f"{PREFIX} first forward: query projection weight {seen['weight']}, output {seen['output']}")
        if held is not None and it % args.eval_interval == 0:
            # Megatron's evaluation line, between its dashed lines, so the one parser reads it.
            val = evaluate(torch, model, held, args, rank, world, device, amp)
            line = (f" validation loss at iteration {it} | lm loss value: {val:.6E} |"
                    f" lm loss PPL: {math.exp(min(20.0, val)):.6E} | ")
            say("-" * (len(line) + 1))
            say(line)
            say("-" * (len(line) + 1))
    if world > 1:
        dist.barrier()
        # Every rank is done: leave after the exit handlers (torch's temporary folders) but without the
        # interpreter's teardown. There, torch 1.13 destroys the wrapped model's Reducer, which joins a
        # gloo thread that waits for the GIL the joining thread holds (a deadlock seen at exit after
        # the last evaluation's all-reduce).
        import atexit
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
