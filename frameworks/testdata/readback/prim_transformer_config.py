#!/usr/bin/env python3
"""Reads back the model facts Megatron Core builds from a Primus experiment file.

Usage: prim_transformer_config.py FACTS_DIR PRIMUS_TREE MEGATRON_TREE WORLD EXP

Runs Primus's own path for its default ("core") runtime with torch and the GPU stack stood in
(FACTS_DIR/pystubs.py): the experiment's config load and override merge
(primus.core.config.primus_config), Primus's Megatron argument builder over Megatron's defaults, then
Megatron's validate_args and core_transformer_config_from_args. It prints one JSON object of what the
TransformerConfig holds for the fields a Rival model fact sets, so a test compares the model it asked
for with the model Megatron would build. Exits 1 with the upstream error when any stage fails.
"""
import argparse
import contextlib
import importlib
import io
import json
import os
import sys

FIELDS = ("num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_query_groups",
          "kv_channels", "layernorm_epsilon", "normalization", "add_qkv_bias", "add_bias_linear",
          "window_size", "init_method_std", "gated_linear_unit", "hidden_dropout", "attention_dropout")
ARGS = ("rotary_base", "untie_embeddings_and_output_weights", "use_rope_scaling", "max_position_embeddings",
        "norm_epsilon", "layernorm_epsilon")


def main():
    facts_dir, primus_tree, mtree, world, exp = sys.argv[1:6]
    sys.path.insert(0, facts_dir)
    import pystubs
    pystubs.install()
    os.environ["WORLD_SIZE"] = world
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("LOCAL_RANK", "0")
    sys.path.insert(0, primus_tree)
    sys.path.insert(0, mtree)
    pystubs.skip_package_init("megatron.training", os.path.join(mtree, "megatron", "training"))
    arguments = importlib.import_module("megatron.training.arguments")
    pc = importlib.import_module("primus.core.config.primus_config")
    params = pc.get_module_config(pc.load_primus_config(exp), "pre_trainer").params
    builder = importlib.import_module("primus.backends.megatron.argument_builder")
    ns = builder.MegatronArgBuilder().update(params).to_namespace()
    values = vars(ns)
    for k in ("data_path", "train_data_path", "valid_data_path", "test_data_path"):
        if isinstance(values.get(k), str):
            values[k] = values[k].split(" ")
    args = argparse.Namespace(**values)
    with contextlib.redirect_stdout(io.StringIO()):
        arguments.validate_args(args, {})
        cfg = arguments.core_transformer_config_from_args(args)
    out = {"transformer_config": {f: getattr(cfg, f, None) for f in FIELDS},
           "args": {a: getattr(args, a, None) for a in ARGS}}
    print(json.dumps(out, sort_keys=True, default=repr))


if __name__ == "__main__":
    main()
