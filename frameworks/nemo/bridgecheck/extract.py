"""Extract Megatron-Bridge's config dataclass fields and types as data (developer tool, not run in CI).

    /usr/bin/python3 frameworks/nemo/bridgecheck/extract.py BRIDGE_TREE MEGATRON_TREE > frameworks/facts/bridge_0.3.0.json

BRIDGE_TREE is a Megatron-Bridge checkout (the tag the NeMo image ships), MEGATRON_TREE the Megatron-LM
commit it pins as 3rdparty/Megatron-LM; their commits are read with git, or from RIVAL_BRIDGE_COMMIT and
RIVAL_MEGATRON_COMMIT for trees without .git (e.g. git archive exports). Both are imported with the GPU stack stubbed (frameworks/facts/pystubs.py); every
class of SECTIONS is read with dataclasses.fields and typing.get_type_hints, and each field's type is
written as a small tree the Go checker in frameworks/nemo reads:
  {"kind": "int"|"float"|"bool"|"str"|"none"|"any"|"dtype"|"callable"}
  {"kind": "list"|"set", "of": [T]}   {"kind": "tuple", "of": [T...], "variadic": bool}
  {"kind": "dict", "of": [K, V]}      {"kind": "union", "of": [T...]}   {"kind": "literal", "values": [...]}
  {"kind": "enum", "name": ..., "members": [...]}   {"kind": "class", "name": ...} (not writable as JSON)"""
import dataclasses
import enum
import json
import os
import pathlib
import re
import subprocess
import sys
import types
import typing

# The torch stand-ins every Rival Python tool uses: frameworks/facts/pystubs.py.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "facts"))
import pystubs as stubs  # noqa: E402

# Launch config section -> (module, class). rival_nemo.py builds the same classes.
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
# Sections a Bridge release may lack: recorded where the tree has them (ValidationConfig, from 0.5,
# takes the evaluation settings TrainingConfig held).
OPTIONAL_SECTIONS = {
    "validation": ("megatron.bridge.training.config", "ValidationConfig"),
}
# Also recorded, for reference: the container and the model providers of the three families.
EXTRA = {
    "ConfigContainer": ("megatron.bridge.training.config", "ConfigContainer"),
    "LlamaModelProvider": ("megatron.bridge.models.llama.llama_provider", "LlamaModelProvider"),
    # rival_nemo.py builds the model section with it when the model has Llama 3.1's RoPE scaling.
    "Llama31ModelProvider": ("megatron.bridge.models.llama.llama_provider", "Llama31ModelProvider"),
    "Qwen2ModelProvider": ("megatron.bridge.models.qwen.qwen_provider", "Qwen2ModelProvider"),
    "MistralModelProvider": ("megatron.bridge.models.mistral.mistral_provider", "MistralModelProvider"),
}


def type_tree(t):
    if t is typing.Any or t is object:
        return {"kind": "any"}
    if t is type(None) or t is None:
        return {"kind": "none"}
    if t is bool:
        return {"kind": "bool"}
    if t is int:
        return {"kind": "int"}
    if t is float:
        return {"kind": "float"}
    if t is str or t is pathlib.Path or t is os.PathLike:
        return {"kind": "str"}
    name = repr(t)
    if isinstance(t, type) and issubclass(t, stubs.Stub):
        if t.__stub_name__ == "torch.dtype":
            return {"kind": "dtype"}
        return {"kind": "class", "name": t.__stub_name__}
    if isinstance(t, type) and issubclass(t, enum.Enum):
        return {"kind": "enum", "name": t.__module__ + "." + t.__qualname__, "members": [m.name for m in t]}
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        return {"kind": "union", "of": [type_tree(a) for a in args]}
    if origin is typing.Literal:
        return {"kind": "literal", "values": [a.value if isinstance(a, enum.Enum) else a for a in args]}
    if origin in (list, typing.List, collections_abc("Sequence")):
        return {"kind": "list", "of": [type_tree(args[0]) if args else {"kind": "any"}]}
    if origin in (set, frozenset):
        return {"kind": "set", "of": [type_tree(args[0]) if args else {"kind": "any"}]}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"kind": "tuple", "of": [type_tree(args[0])], "variadic": True}
        return {"kind": "tuple", "of": [type_tree(a) for a in args], "variadic": False}
    if origin in (dict, collections_abc("Mapping")):
        return {"kind": "dict", "of": [type_tree(a) for a in args] if args else [{"kind": "any"}, {"kind": "any"}]}
    if origin is not None and getattr(origin, "__name__", "") == "Callable" or t is typing.Callable or name.startswith("typing.Callable") or name.startswith("collections.abc.Callable"):
        return {"kind": "callable"}
    if t in (list, tuple, dict, set):
        return type_tree({list: typing.List[typing.Any], tuple: typing.Tuple[typing.Any, ...],
                          dict: typing.Dict[typing.Any, typing.Any], set: typing.Set[typing.Any]}[t])
    if isinstance(t, type):
        return {"kind": "class", "name": t.__module__ + "." + t.__qualname__}
    return {"kind": "class", "name": name}


def type_text(t):
    if isinstance(t, type) and not issubclass(t, stubs.Stub):
        return t.__name__ if t.__module__ == "builtins" else t.__module__ + "." + t.__qualname__
    return repr(t).replace("typing.", "").replace("NoneType", "None")


def collections_abc(n):
    import collections.abc
    return getattr(collections.abc, n)


def default_of(f):
    if f.default is not dataclasses.MISSING:
        v = f.default
    elif f.default_factory is not dataclasses.MISSING:
        try:
            v = f.default_factory()
        except Exception:  # a factory that needs the GPU stack
            return None, False
    else:
        return None, False
    if isinstance(v, enum.Enum):
        v = v.name
    try:
        json.dumps(v, allow_nan=False)  # inf and nan (Bridge 0.5's grad_norm_skip_threshold) are text
    except (TypeError, ValueError):
        return describe_value(v), True
    return v, True


def describe_value(v):
    """A stable text for a default JSON cannot hold (no memory addresses)."""
    if isinstance(v, type) and issubclass(v, stubs.Stub):
        return v.__stub_name__  # a name from the stubbed GPU stack, e.g. torch.nn.functional.silu
    if callable(v) and hasattr(v, "__qualname__"):
        return f"<{type(v).__name__} {getattr(v, '__module__', '?')}.{v.__qualname__}>"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(v))


def present(module, cls_name):
    try:
        return hasattr(__import__(module, fromlist=[cls_name]), cls_name)
    except ImportError:
        return False


def describe_or_absent(module, cls_name):
    """describe, or where the tree has no such class (Bridge 0.5 folded the Llama and Qwen
    providers into GPTModelProvider), what was looked for."""
    if not present(module, cls_name):
        return {"absent": module + "." + cls_name}
    return describe(module, cls_name)


def describe(module, cls_name):
    cls = getattr(__import__(module, fromlist=[cls_name]), cls_name)
    hints = typing.get_type_hints(cls, include_extras=False)
    out = {"class": module + "." + cls_name, "fields": {}}
    for f in dataclasses.fields(cls):
        t = hints.get(f.name, f.type)
        d, has = default_of(f)
        e = {"type": type_tree(t), "text": type_text(t), "init": f.init}
        if has:
            e["default"] = d
        else:
            e["required"] = f.init
        out["fields"][f.name] = e
    if cls_name == "GPTDatasetConfig":
        # GPTDatasetConfig.__init__ takes seq_length (an alias of MCore's sequence_length).
        out["init_aliases"] = {"seq_length": "sequence_length"}
    return out


def git(tree, *args):
    try:
        return subprocess.run(["git", "-C", tree, *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    bridge, megatron = (os.path.abspath(a) for a in sys.argv[1:])
    # What the trees print while they import (Megatron Core 0.18's tokenizer module logs to
    # standard output) goes to standard error: standard output is the JSON.
    out, sys.stdout = sys.stdout, sys.stderr
    stubs.install()
    stubs.add_trees(bridge, megatron)
    # Megatron Core 0.18 appends the checkout's git hash to its version unless this is set.
    os.environ["NO_VCS_VERSION"] = "1"
    import megatron.bridge.package_info as bi
    import megatron.core.package_info as mi
    doc = {
        "source": {
            "megatron_bridge": {"version": bi.__version__, "commit": os.environ.get("RIVAL_BRIDGE_COMMIT") or git(bridge, "rev-parse", "HEAD")},
            "megatron_core": {"version": mi.__version__, "commit": os.environ.get("RIVAL_MEGATRON_COMMIT") or git(megatron, "rev-parse", "HEAD")},
            "extracted_by": "frameworks/nemo/bridgecheck/extract.py",
        },
        "sections": dict({k: describe(*v) for k, v in SECTIONS.items()},
                         **{k: describe(*v) for k, v in OPTIONAL_SECTIONS.items() if present(*v)}),
        "classes": {k: describe_or_absent(*v) for k, v in EXTRA.items()},
    }
    json.dump(doc, out, indent=1, sort_keys=True)
    out.write("\n")


if __name__ == "__main__":
    main()
