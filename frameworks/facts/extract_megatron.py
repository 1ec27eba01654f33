#!/usr/bin/env python3
"""Extract Megatron-LM's pretraining options from a Megatron-LM tree, as data.

    python3 frameworks/facts/extract_megatron.py TREE COMMIT > frameworks/facts/megatron_COMMIT8.json

TREE is a Megatron-LM checkout at COMMIT (fetched by a developer; not run in CI). The script builds
the argparse parser of megatron/training/arguments.py by executing that file with torch and the other
GPU packages replaced by stand-ins (pystubs.py), and writes every option: its flags, destination,
type, nargs, choices, default and whether it takes a value. The Go tests in package facts check every
mega launch against this file.
"""

import argparse
import importlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pystubs  # noqa: E402


def load_arguments(tree):
    sys.path.insert(0, tree)
    pystubs.install()
    pystubs.skip_package_init("megatron.training", os.path.join(tree, "megatron", "training"))
    return importlib.import_module("megatron.training.arguments")


def type_name(t):
    if t is None:
        return None
    if t in (int, float, str, bool):
        return t.__name__
    return getattr(t, "__name__", repr(t))


def jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    return repr(v)


def options(arguments):
    parser = argparse.ArgumentParser(allow_abbrev=False)
    arguments.add_megatron_arguments(parser)
    out = []
    for a in parser._actions:
        if not a.option_strings or isinstance(a, argparse._HelpAction):
            continue
        kind = type(a).__name__.lstrip("_")
        takes_value = a.nargs != 0 and not isinstance(
            a, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction, argparse._CountAction)
        )
        out.append({
            "flags": sorted(a.option_strings),
            "dest": a.dest,
            "action": kind,
            "type": type_name(a.type),
            "nargs": a.nargs if a.nargs is None or isinstance(a.nargs, (int, str)) else str(a.nargs),
            "choices": jsonable(list(a.choices)) if a.choices is not None else None,
            "default": jsonable(a.default),
            "takes_value": takes_value,
            "const": jsonable(a.const) if not takes_value else None,
        })
    out.sort(key=lambda o: o["flags"][0])
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    tree, commit = sys.argv[1], sys.argv[2]
    arguments = load_arguments(tree)
    info = {}
    pkg = os.path.join(tree, "megatron", "core", "package_info.py")
    if os.path.exists(pkg):
        # Megatron Core 0.18's package_info.py appends the checkout's git hash unless
        # NO_VCS_VERSION is set; the release number is the fact.
        os.environ["NO_VCS_VERSION"] = "1"
        ns = {"__file__": pkg}
        exec(compile(open(pkg).read(), pkg, "exec"), ns)
        info["megatron_core"] = ns.get("__version__")
    write({
        "source": "NVIDIA/Megatron-LM@" + commit + " megatron/training/arguments.py add_megatron_arguments",
        "commit": commit,
        "megatron_core": info.get("megatron_core"),
    }, "options", options(arguments))


def write(head, key, rows):
    """Writes head with rows under key, one row a line, so a diff shows one option per line."""
    out = sys.stdout
    out.write("{\n")
    for k in sorted(head):
        out.write(json.dumps(k) + ": " + json.dumps(head[k]) + ",\n")
    out.write(json.dumps(key) + ": [\n")
    out.write(",\n".join(json.dumps(r, sort_keys=True) for r in rows))
    out.write("\n]\n}\n")

if __name__ == "__main__":
    main()
