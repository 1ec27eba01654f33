#!/usr/bin/env python3
"""Real-torch checks of rival_titan.py's weight-decay groups and Megatron init (torch >= 1.13, no
TorchTitan): a module with TorchTitan's Llama parameter names and shapes, the groups AdamW gets,
and the std each weight is drawn with (measured on large matrices).

    /usr/bin/python3 -m unittest frameworks/titan/test_rival_titan_torch.py
"""
import math
import os
import sys
import unittest

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rival_titan  # noqa: E402  (TorchTitan absent: only the helpers load)
import rival_titan_check  # noqa: E402  (the preflight's read-back helpers)


class Norm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))


class Block(nn.Module):
    def __init__(self, d, ffn, bias):
        super().__init__()
        self.attention = nn.Module()
        for n in ("wq", "wk", "wv"):
            setattr(self.attention, n, nn.Linear(d, d, bias=bias))
        self.attention.wo = nn.Linear(d, d, bias=False)
        self.feed_forward = nn.Module()
        self.feed_forward.w1 = nn.Linear(d, ffn, bias=False)
        self.feed_forward.w2 = nn.Linear(ffn, d, bias=False)
        self.feed_forward.w3 = nn.Linear(d, ffn, bias=False)
        self.attention_norm, self.ffn_norm = Norm(d), Norm(d)


class Llama(nn.Module):
    """TorchTitan's Llama parameter names: tok_embeddings, layers.N.attention.w*,
    layers.N.feed_forward.w*, layers.N.*_norm, norm, output."""

    def __init__(self, vocab=512, d=256, ffn=512, layers=4, bias=False):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, d)
        self.layers = nn.ModuleDict({str(i): Block(d, ffn, bias) for i in range(layers)})
        self.norm = Norm(d)
        self.output = nn.Linear(d, vocab, bias=False)


class DecayGroups(unittest.TestCase):
    def test_megatron_rule(self):
        m = Llama(bias=True)
        groups = rival_titan.param_groups(m.named_parameters(), 0.1)
        names = {id(p): n for n, p in m.named_parameters()}
        decayed = sorted(names[id(p)] for p in groups[0]["params"])
        kept = sorted(names[id(p)] for p in groups[1]["params"])
        self.assertEqual((groups[0]["weight_decay"], groups[1]["weight_decay"]), (0.1, 0.0))
        self.assertIn("tok_embeddings.weight", decayed)  # Megatron decays the embedding (2-D)
        self.assertIn("output.weight", decayed)
        self.assertIn("layers.0.attention.wq.weight", decayed)
        self.assertIn("layers.3.feed_forward.w2.weight", decayed)
        self.assertIn("norm.weight", kept)
        self.assertIn("layers.1.attention_norm.weight", kept)
        self.assertIn("layers.1.attention.wq.bias", kept)
        self.assertEqual(len(decayed) + len(kept), len(list(m.parameters())))
        self.assertTrue(all(p.ndim == 1 for p in groups[1]["params"]))
        # AdamW takes the groups as they are.
        opt = torch.optim.AdamW(groups, lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
        self.assertEqual([g["weight_decay"] for g in opt.param_groups], [0.1, 0.0])

    def test_frozen_parameters_are_left_out(self):
        m = Llama()
        m.norm.weight.requires_grad_(False)
        groups = rival_titan.param_groups(m.named_parameters(), 0.1)
        self.assertNotIn(id(m.norm.weight), [id(p) for g in groups for p in g["params"]])


class Init(unittest.TestCase):
    def test_megatron_std(self):
        torch.manual_seed(0)
        layers = 8
        m = Llama(vocab=2048, d=512, ffn=1024, layers=layers, bias=True)
        for p in m.parameters():
            nn.init.constant_(p, 3.0)
        m.norm.weight.data.fill_(1.0)
        rival_titan.megatron_init(torch, m, 0.02, layers)
        scaled = 0.02 / math.sqrt(2 * layers)
        for name, p in m.named_parameters():
            if name.endswith(".bias"):
                self.assertEqual(float(p.abs().max()), 0.0, name)
            elif p.ndim == 1:
                self.assertTrue(bool((p == (1.0 if name == "norm.weight" else 3.0)).all()), name + " is left alone")
            else:
                want = scaled if name.endswith(("attention.wo.weight", "feed_forward.w2.weight")) else 0.02
                self.assertAlmostEqual(float(p.std()), want, delta=want * 0.03, msg=name)
                self.assertAlmostEqual(float(p.mean()), 0.0, delta=want * 0.05, msg=name)


class ReadbackInit(unittest.TestCase):
    """The preflight's init read-back: the std each torch.nn.init call draws with, measured."""

    def test_truncated_std_matches_samples(self):
        torch.manual_seed(1)
        for std, cut in ((0.0625, 3.0), (0.02, 100.0), (1.0, 1.0)):
            t = torch.empty(2_000_000)
            nn.init.trunc_normal_(t, mean=0.0, std=std, a=-cut * std, b=cut * std)
            want = float(t.std())
            self.assertAlmostEqual(rival_titan_check.truncated_std(std, -cut * std, cut * std), want, delta=want * 0.01)

    def test_recorder_sees_the_last_call(self):
        m = Llama(vocab=64, d=16, ffn=32, layers=2)
        with rival_titan_check.InitRecorder(torch) as r:
            nn.init.normal_(m.tok_embeddings.weight)
            nn.init.trunc_normal_(m.output.weight, mean=0.0, std=0.25, a=-0.75, b=0.75)
            nn.init.trunc_normal_(m.layers["0"].attention.wq.weight, std=0.5)
            nn.init.normal_(m.layers["0"].attention.wq.weight, 0.0, 0.02)
            nn.init.ones_(m.norm.weight)
        self.assertEqual(r.calls[id(m.tok_embeddings.weight)], ("normal", 1.0, 0.0))
        self.assertAlmostEqual(r.calls[id(m.output.weight)][1], rival_titan_check.truncated_std(0.25, -0.75, 0.75))
        self.assertEqual(r.calls[id(m.layers["0"].attention.wq.weight)], ("normal", 0.02, 0.0))
        self.assertEqual(r.calls[id(m.norm.weight)][0], "constant")
        self.assertIs(nn.init.normal_, r.saved["normal_"], "torch.nn.init is restored")

    def test_one_value_names_a_disagreement(self):
        out, unread = {}, []
        rival_titan_check.one_value("residual_init_std", [("layers.0.attention.wo.weight", 0.01), ("layers.1.attention.wo.weight", 0.007)], out, unread)
        self.assertNotIn("residual_init_std", out)
        self.assertIn("residual_init_std: differs by parameter (layers.0.attention.wo.weight 0.01, layers.1.attention.wo.weight 0.007)", unread)
        rival_titan_check.one_value("init_std", [("a", 0.02), ("b", 0.02)], out, unread)
        self.assertEqual(out["init_std"], 0.02)


if __name__ == "__main__":
    unittest.main()
