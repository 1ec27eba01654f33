#!/usr/bin/env python3
"""Extract what a Primus launch must satisfy from a Primus tree, as data.

    python3 frameworks/facts/extract_primus.py TREE TAG COMMIT > frameworks/facts/primus_TAG.json

TREE is a Primus checkout at COMMIT (fetched by a developer; not run in CI). Written out:
  - exp_files: the Megatron experiment files under examples/megatron/configs/MI300X;
  - exps: for the experiments Rival starts from, their root keys and the pre_trainer module's
    framework, config, model and overrides in file order, as PyYAML's SafeLoader reads them;
  - module: the pre_trainer module config (pre_trainer.yaml with its extends chain), and models: the
    model configs Rival uses, both resolved by Primus's own yaml loader;
  - cli_typing: how the default ("core") runtime types `--key value` overrides, found by calling
    Primus's own coercion function on probe values;
  - yaml_typing: how SafeLoader types the same texts written into a yaml file;
  - run_time_installs: what a default run pip-installs or builds before training.
Needs PyYAML (Debian python3-yaml).
"""

import importlib
import json
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pystubs  # noqa: E402

EXP_DIR = "examples/megatron/configs/MI300X"
EXPS = ["llama3.1_8B-BF16-pretrain.yaml", "llama3.1_8B-FP8-pretrain.yaml",
        "qwen2.5_7B-BF16-pretrain.yaml", "qwen2.5_7B-FP8-pretrain.yaml"]
MODELS = ["llama3.1_8B.yaml", "qwen2.5_7B.yaml"]
# What a default Megatron run (no MaxText, no REBUILD_*, no fault tolerance) installs or builds at run
# time: the file, a text the line holds, and what it does. main() checks each is still there.
RUN_TIME_INSTALLS = [
    ("examples/run_pretrain.sh", 'pip install -r "$PRIMUS_PATH/requirements.txt"', "pip-requirements", "requirements.txt"),
    # v26.5 runs make with -s.
    ("examples/megatron/prepare.py", ('["make"], cwd=dataset_cpp_dir', '["make", "-s"], cwd=dataset_cpp_dir'), "make", "third_party/Megatron-LM/megatron/core/datasets"),
    # v26.5 adds --no-build-isolation (and skips the install when the package is importable).
    ("examples/megatron/prepare.py", ('["pip", "install", "-e", str(emerging_optimizers_path)]',
                                      '["pip", "install", "--no-build-isolation", "-e", str(emerging_optimizers_path)]'),
     "pip-editable", "third_party/Emerging-Optimizers"),
]
PROBES = ["3e-05", "0.00003", "3.0e-05", "1e-08", "0.00000001", "None", "null", "[0,3]", "[0, 3]",
          "true", "True", "false", "1", "1.0", "0.1", "hybrid", "/rival/cache"]


def typed(v):
    return {"type": type(v).__name__, "value": v if isinstance(v, (bool, int, float, str, type(None), list)) else repr(v)}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    tree, tag, commit = sys.argv[1:]
    sys.path.insert(0, tree)
    pystubs.install()
    loader = importlib.import_module("primus.core.config.yaml_loader")
    arg_utils = importlib.import_module("primus.core.utils.arg_utils")

    exp_dir = os.path.join(tree, EXP_DIR)
    exps = {}
    for name in EXPS:
        with open(os.path.join(exp_dir, name)) as f:
            raw = yaml.load(f, Loader=yaml.SafeLoader)
        pt = raw["modules"]["pre_trainer"]
        exps[name] = {
            "root": {k: v for k, v in raw.items() if k != "modules"},
            "pre_trainer": {k: v for k, v in pt.items() if k != "overrides"},
            "overrides": [[k, v] for k, v in (pt.get("overrides") or {}).items()],
        }
    module = loader.parse_yaml(os.path.join(tree, "primus/configs/modules/megatron/pre_trainer.yaml"))
    models = {m: loader.parse_yaml(os.path.join(tree, "primus/configs/models/megatron", m)) for m in MODELS}
    for d in [module] + list(models.values()):
        d.pop("extends", None)
    installs = []
    for f, text, kind, target in RUN_TIME_INSTALLS:
        lines = open(os.path.join(tree, f)).read().splitlines()
        texts = text if isinstance(text, tuple) else (text,)
        at = [i + 1 for i, l in enumerate(lines) if any(t in l for t in texts) and not l.lstrip().startswith("#")]
        if not at:
            sys.exit("extract_primus: %s no longer holds %s: update RUN_TIME_INSTALLS" % (f, text))
        installs.append({"file": f, "line": at[0], "kind": kind, "target": target})
    out = {
        "source": "AMD-AGI/Primus@" + commit + " (" + tag + ")",
        "tag": tag,
        "commit": commit,
        "exp_dir": EXP_DIR,
        "exp_files": sorted(f for f in os.listdir(exp_dir) if f.endswith(".yaml")),
        "exps": exps,
        "module": {k: module[k] for k in sorted(module)},
        "models": {m: {k: v[k] for k in sorted(v)} for m, v in models.items()},
        "run_time_installs": installs,
        "cli_typing": {p: typed(arg_utils._coerce_cli_value_modern(p)) for p in PROBES},
        "yaml_typing": {p: typed(yaml.load("v: " + p, Loader=yaml.SafeLoader)["v"]) for p in PROBES},
    }
    json.dump(out, sys.stdout, indent=1, default=repr)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
