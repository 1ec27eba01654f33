#!/usr/bin/env python3
"""Extracts TorchTitan's JobConfig (torchtitan/config/job_config.py) as data: every section, every
option, its type and default, for the Go checks in frameworks/facts/torchtitan.go.

    python3 torchtitan_extract.py TREE VERSION COMMIT > torchtitan_VERSION.json

TREE is a checkout of pytorch/torchtitan at COMMIT (its top folder, holding torchtitan/). Runs on a
plain python3 without PyTorch: torch, tyro, torchdata and tensorboard are served as permissive
stand-in modules at import time, and torchtitan/__init__.py (which imports the model code) is
skipped, so only the config modules execute.

    python3 torchtitan_extract.py --register TREE DIR

imports DIR/rival_titan.py (Rival's extension, with its rival_titan.json) into TREE's TorchTitan as
the trainer's experimental.custom_import does, looks the train spec up as the trainer does, runs
the model args' update_from_config on a default JobConfig, and prints the registered flavour's
shape. The model code is imported too, so numpy, triton and the other optional packages are stood in
as well.

    python3 torchtitan_extract.py --check TREE TOML

    python3 torchtitan_extract.py --primus PRIMUS_TREE FACTS_JSON VERSION COMMIT

lists the options Primus's torchtitan module config (primus/configs/modules/torchtitan/
pre_trainer.yaml and the files it extends, PyYAML) sets that FACTS_JSON's JobConfig lacks: Primus
keeps them as extra attributes of its JobConfig, so an AMD experiment may set them too.

    python3 torchtitan_extract.py --register TREE DIR

imports DIR/rival_titan.py (Rival's extension, with its rival_titan.json) into TREE's TorchTitan as
the trainer's experimental.custom_import does, looks the train spec up as the trainer does, runs
the model args' update_from_config on a default JobConfig, and prints the registered flavour's
shape. The model code is imported too, so numpy, triton and the other optional packages are stood in
as well.

    python3 torchtitan_extract.py --check TREE TOML

instead runs TorchTitan's own ConfigManager (config/manager.py, tyro stood in) on a generated TOML
and prints the parsed sections: what `torchrun -m torchtitan.train --job.config_file TOML` parses
before it touches a GPU.
"""
import dataclasses
import importlib.abc
import importlib.machinery
import json
import sys
import types
import typing

STUBBED = ("torch", "tyro", "torchdata", "tensorboard", "transformer_engine")


class _Anything(types.ModuleType):
    """A module (or attribute) that is everything: any attribute, call or subscript is another."""

    __path__ = []

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        child = _Anything(f"{self.__name__}.{name}")
        setattr(self, name, child)
        return child

    def __call__(self, *a, **kw):
        # tyro.cli(cls, args=..., default=base, ...) returns the parsed config: with no command-line
        # overrides that is the default, which ConfigManager built from the TOML.
        if "default" in kw:
            return kw["default"]
        if a and callable(a[0]) and not kw:
            return a[0]  # decorators
        return _Anything(self.__name__ + "()")

    def __getitem__(self, key):
        return self

    def __or__(self, other):  # annotations such as `Placement | None`
        return self

    __ror__ = __or__

    def __mro_entries__(self, bases):
        return ()


class _Stubs(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _Anything(spec.name)

    def exec_module(self, module):
        pass


def load(tree):
    """Imports torchtitan.config's modules from tree without running torchtitan/__init__.py."""
    sys.meta_path.insert(0, _Stubs())
    for name, sub in (("torchtitan", ""), ("torchtitan.config", "/config"), ("torchtitan.tools", "/tools")):
        pkg = types.ModuleType(name)
        pkg.__path__ = [f"{tree}/torchtitan{sub}"]
        sys.modules[name] = pkg
    import torchtitan.config.job_config as jc
    return jc


def type_of(t):
    """A JSON description of an annotation: {"kind": ..., "nullable": bool, "values": [...]}."""
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            d = type_of(rest[0])
        elif set(rest) == {int, float}:
            d = {"kind": "float"}
        else:
            d = {"kind": "any"}
        d["nullable"] = True
        return d
    if origin is typing.Literal:
        kinds = {type(a).__name__ for a in args}
        return {"kind": kinds.pop() if len(kinds) == 1 else "any", "values": list(args)}
    if origin in (list, tuple, set):
        elem = type_of(args[0]) if args else {"kind": "any"}
        return {"kind": "list", "elem": elem["kind"]}
    if origin is dict or t is dict:
        return {"kind": "dict"}
    if t in (bool, int, float, str):
        return {"kind": t.__name__}
    if t is typing.Any:
        return {"kind": "any"}
    if dataclasses.is_dataclass(t):
        return {"kind": "section", "options": options(t)}
    return {"kind": "any", "python": str(t)}


def default_of(f):
    if f.default is not dataclasses.MISSING:
        v = f.default
    elif f.default_factory is not dataclasses.MISSING:
        v = f.default_factory()
    else:
        return None
    try:
        json.dumps(v)
        return v
    except TypeError:
        return repr(v)


def extract(tree, version, commit):
    jc = load(tree)
    out = {"version": version, "commit": commit, "source": "torchtitan/config/job_config.py",
           "extracted_by": "frameworks/facts/torchtitan_extract.py", "sections": {}}
    top = typing.get_type_hints(jc.JobConfig)
    for sec in dataclasses.fields(jc.JobConfig):
        cls = top[sec.name]
        if not dataclasses.is_dataclass(cls):
            continue
        out["sections"][sec.name] = options(cls)
    return out


def options(cls):
    """Every field of a config dataclass: its type and default."""
    hints = typing.get_type_hints(cls)
    opts = {}
    for f in dataclasses.fields(cls):
        d = type_of(hints[f.name])
        if d["kind"] != "section":
            d["default"] = default_of(f)
        opts[f.name] = d
    return opts


def check(tree, toml_path):
    load(tree)
    import torchtitan.config.manager as manager
    cfg = manager.ConfigManager().parse_args(["--job.config_file", toml_path])
    return {s.name: dataclasses.asdict(getattr(cfg, s.name)) for s in dataclasses.fields(cfg)}


def primus_extras(tree, facts_path, version, commit):
    import os
    import yaml

    def read(path):
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
        merged = {}
        for ext in doc.pop("extends", []) or []:
            merge(merged, read(os.path.normpath(os.path.join(os.path.dirname(path), ext))))
        merge(merged, doc)
        return merged

    def merge(dst, src):
        for k, v in src.items():
            if isinstance(v, dict) and isinstance(dst.get(k), dict):
                merge(dst[k], v)
            else:
                dst[k] = v

    rel = "primus/configs/modules/torchtitan/pre_trainer.yaml"
    cfg = read(os.path.join(tree, rel))
    with open(facts_path) as f:
        known = json.load(f)["sections"]
    kinds = {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}
    extra = {}
    for sec, opts in cfg.items():
        if not isinstance(opts, dict):
            continue  # Primus's own module settings (trainable, sink levels)
        for k, v in opts.items():
            if k in known.get(sec, {}):
                continue
            d = {"kind": kinds.get(type(v), "any"), "default": v}
            if v is None:
                d = {"kind": "any", "nullable": True, "default": None}
            extra.setdefault(sec, {})[k] = d
    return {"version": version, "commit": commit, "source": rel, "extends": os.path.basename(facts_path),
            "extracted_by": "frameworks/facts/torchtitan_extract.py --primus", "sections": extra}


def register(tree, ext_dir):
    global STUBBED
    STUBBED = STUBBED + ("torchao", "triton", "numpy", "safetensors", "tokenizers", "datasets", "fsspec",
                         "huggingface_hub", "tiktoken", "blobfile", "sentencepiece", "wandb", "einops",
                         "transformers", "torchft", "torchcomms")
    sys.meta_path.insert(0, _Stubs())
    sys.path[:0] = [ext_dir, tree]
    import torchtitan.config.job_config as jc
    from torchtitan.protocols.train_spec import get_train_spec

    ext = importlib.import_module("rival_titan")
    spec = get_train_spec(ext.SPEC_NAME)
    (flavor, args), = spec.model_args.items()
    job = jc.JobConfig()
    job.training.seq_len = 2048
    args.update_from_config(job)
    out = {"spec": type(spec).__name__, "flavor": flavor, "args_class": type(args).__mro__[1].__name__,
           "validator": spec.build_validator_fn is not None}
    for k in ("dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "multiple_of", "ffn_dim_multiplier",
              "rope_theta", "max_seq_len"):
        out[k] = getattr(args, k)
    out["rope_scaling_factor"] = args.rope_scaling_args.scaling_factor
    return out


def main(argv):
    if len(argv) == 4 and argv[1] == "--register":
        json.dump(register(argv[2], argv[3]), sys.stdout, indent=1, sort_keys=True)
    elif len(argv) == 6 and argv[1] == "--primus":
        json.dump(primus_extras(*argv[2:]), sys.stdout, indent=1, sort_keys=True)
    elif len(argv) == 4 and argv[1] == "--check":
        json.dump(check(argv[2], argv[3]), sys.stdout, indent=1, sort_keys=True, default=repr)
    elif len(argv) == 4:
        json.dump(extract(*argv[1:]), sys.stdout, indent=1, sort_keys=True)
    else:
        sys.exit(__doc__)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)
