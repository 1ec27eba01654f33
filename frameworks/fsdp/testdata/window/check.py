#!/usr/bin/env python3
"""Checks train.py's sliding-window attention against an independent reference.

Usage: check.py TRAIN_PY ATTENTION   (ATTENTION: manual, sdpa or flex)

1. The attention of one block, computed by train.py's model on random inputs, equals a reference that
   loops over queries and, for query i, takes softmax over keys max(0, i - W) .. i only: Megatron's
   window_size (W, 0), under which a query sees itself and the W keys before it.
2. A one-layer model's logits at position i move when the token at position j changes exactly when
   i - W <= j <= i: the window reaches the model's forward, not only the attention module.
3. Without a window the same model is full causal attention: every j <= i moves position i.
Prints "window ok: ..." and exits 0, or fails with the first mismatch.
"""
import importlib.util
import math
import sys

import torch


def load(path):
    spec = importlib.util.spec_from_file_location("rival_train", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def reference(q, k, v, window):
    """softmax(q_i . k_j / sqrt(d)) v_j over j in [max(0, i - window), i], one query at a time."""
    b, h, t, d = q.shape
    out = torch.zeros_like(q)
    for i in range(t):
        lo = max(0, i - window) if window else 0
        s = (q[:, :, i:i + 1, :] @ k[:, :, lo:i + 1, :].transpose(-2, -1)) / math.sqrt(d)
        out[:, :, i:i + 1, :] = torch.softmax(s, dim=-1) @ v[:, :, lo:i + 1, :]
    return out


def model_args(train, attention, window, seq_len, layers=1):
    argv = ["--data-prefix", "unused", "--order-dir", "unused", "--layers", str(layers), "--hidden", "32", "--ffn", "64", "--heads", "4",
            "--kv-heads", "2", "--vocab", "50", "--seq-len", str(seq_len), "--train-iters", "1",
            "--attention", attention, "--window", str(window)]
    args = train.parse_args(argv)
    train.import_torch(args)
    if args.attention != attention:
        sys.exit(f"window check: this torch ({torch.__version__}) runs attention {args.attention}, not {attention}")
    return args


def main():
    train = load(sys.argv[1])
    attention = sys.argv[2]
    torch.manual_seed(0)
    t, window = 12, 3
    args = model_args(train, attention, window, t)
    model, _ = train.build_model(torch, args)
    model.eval()
    attn = model.blocks[0].attn

    # 1. The attention numerics, with rotary angles and the model's own projections.
    x = torch.randn(2, t, args.hidden)
    captured = {}

    def grab(name):
        def hook(module, inp, out):
            captured[name] = out
        return hook
    hooks = [getattr(attn, n).register_forward_hook(grab(n)) for n in ("q", "k", "v")]
    if attention == "flex":
        mask = train.flex_block_mask(torch, t, window, x.device)
    else:
        mask = train.attention_mask(torch, t, window, x.device)
    got = attn(x, model.cos[:t], model.sin[:t], mask)
    for hk in hooks:
        hk.remove()
    hd = args.hidden // args.heads
    q = captured["q"].view(2, t, args.heads, hd).transpose(1, 2)
    k = captured["k"].view(2, t, args.kv_heads, hd).transpose(1, 2)
    v = captured["v"].view(2, t, args.kv_heads, hd).transpose(1, 2)
    cos, sin = model.cos[:t], model.sin[:t]

    def rot(z):
        z1, z2 = z.chunk(2, dim=-1)
        return z * cos + torch.cat((-z2, z1), dim=-1) * sin
    q, k = rot(q), rot(k)
    rep = args.heads // args.kv_heads
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    want = attn.o(reference(q, k, v, window).transpose(1, 2).reshape(2, t, args.hidden))
    err = (got - want).abs().max().item()
    if err > 1e-5:
        sys.exit(f"window check: attention differs from the windowed reference by {err:g}")
    full = attn.o(reference(q, k, v, 0).transpose(1, 2).reshape(2, t, args.hidden))
    if (got - full).abs().max().item() < 1e-3:
        sys.exit("window check: the windowed attention equals full causal attention: the window masks nothing")

    # 2 and 3. Which input positions reach which output positions, through the whole model.
    def reach(window):
        a = model_args(train, attention, window, t)
        torch.manual_seed(1)
        m, _ = train.build_model(torch, a)
        m.eval()
        tokens = torch.randint(0, a.vocab, (1, t))
        base = m(tokens)
        moved = set()
        for j in range(t):
            other = tokens.clone()
            other[0, j] = (other[0, j] + 1) % a.vocab
            diff = (m(other) - base).abs().amax(dim=-1)[0]
            moved |= {(i, j) for i in range(t) if diff[i].item() > 1e-6}
        return moved
    for w in (window, 0):
        want = {(i, j) for i in range(t) for j in range(t) if j <= i and (w == 0 or i - j <= w)}
        got = reach(w)
        if got != want:
            sys.exit(f"window check: window {w}: positions reached {sorted(got ^ want)[:8]} differ from the rule")
    print(f"window ok: torch {torch.__version__}, attention {attention}, SL {t}, window {window}")


if __name__ == "__main__":
    with torch.no_grad():
        main()
