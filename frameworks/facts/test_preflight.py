#!/usr/bin/env python3
"""Tests of the preflight's Python side. The stand-in tests always run; the upstream ones run when
RIVAL_UPSTREAM_DIR names a folder of fetched trees (megatron-b0cc2706, megatron-3bec9aa9,
primus-v26.2), as docs/frameworks.md describes:

    RIVAL_UPSTREAM_DIR=that/folder python3 -m unittest frameworks/facts/test_preflight.py
"""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
UPSTREAM = os.environ.get("RIVAL_UPSTREAM_DIR", "")

# A small Llama-shaped launch, as Rival passes it to pretrain_gpt.py.
ARGS = ["--num-layers", "2", "--hidden-size", "256", "--ffn-hidden-size", "688", "--num-attention-heads", "4",
        "--group-query-attention", "--num-query-groups", "4", "--position-embedding-type", "rope",
        "--max-position-embeddings", "4096", "--normalization", "RMSNorm", "--swiglu",
        "--seq-length", "2048", "--micro-batch-size", "1", "--global-batch-size", "8", "--train-iters", "10",
        "--lr", "0.0003", "--min-lr", "0.00003", "--bf16", "--tokenizer-type", "NullTokenizer",
        "--vocab-size", "32000", "--mock-data"]


def preflight(*argv, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, os.path.join(HERE, "preflight.py")] + list(argv),
                          capture_output=True, text=True, env=e)


class Stubs(unittest.TestCase):
    def test_torch_stand_in(self):
        sys.path.insert(0, HERE)
        import pystubs
        pystubs.install()
        import torch
        self.assertTrue(isinstance(torch.bfloat16, torch.dtype))
        self.assertEqual(torch.cuda.get_device_capability(), (9, 0))

        class M(torch.nn.Module):
            pass

        self.assertIsNotNone(M())


@unittest.skipUnless(UPSTREAM, "set RIVAL_UPSTREAM_DIR to run against fetched trees")
class Upstream(unittest.TestCase):
    def tree(self, name):
        return os.path.join(UPSTREAM, name)

    def test_megatron_accepts(self):
        for c in ("megatron-b0cc2706", "megatron-3bec9aa9"):
            r = preflight("mega", self.tree(c), "8", "--", *ARGS)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("preflight ok: ", r.stdout)
            self.assertIn('"megatron_core": "0.16.0"', r.stdout)
            # What Megatron built, read back: NullTokenizer leaves the padded vocabulary unread.
            line = [x for x in r.stdout.splitlines() if x.startswith("preflight effective: ")]
            self.assertEqual(len(line), 1, r.stdout)
            import json
            eff = json.loads(line[0][len("preflight effective: "):])
            self.assertEqual((eff["hidden"], eff["layers"], eff["ffn"], eff["kv_heads"]), (256, 2, 688, 4))
            self.assertEqual(eff["no_decay"], ["bias", "norm"])
            self.assertAlmostEqual(eff["residual_init_std"], 0.02 / 2)
            self.assertEqual(eff["norm_eps"], 1e-5)
            self.assertTrue(any(u.startswith("vocab: ") for u in eff["unread"]))

    def test_megatron_rejects_min_lr_above_lr(self):
        args = list(ARGS)
        args[args.index("--min-lr") + 1] = "0.003"
        r = preflight("mega", self.tree("megatron-b0cc2706"), "8", "--", *args)
        self.assertEqual(r.returncode, 1)
        self.assertIn("assert args.min_lr <= args.lr", r.stderr)

    def test_megatron_rejects_unknown_option(self):
        r = preflight("mega", self.tree("megatron-b0cc2706"), "8", "--", *(ARGS + ["--no-such-option"]))
        self.assertEqual(r.returncode, 1)
        self.assertIn("unrecognized arguments: --no-such-option", r.stderr)

    def test_tree_not_found(self):
        r = preflight("mega", "/nonexistent", "8", "--", *ARGS)
        self.assertEqual(r.returncode, 1)
        self.assertIn("/nonexistent/megatron/training/arguments.py", r.stderr)


if __name__ == "__main__":
    unittest.main()
