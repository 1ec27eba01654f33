#!/usr/bin/env python3
"""Runs many titan preflights (rival_titan_check.py) in one interpreter start per TorchTitan tree:
torch and TorchTitan's modules are imported once, then each launch's preflight runs in a forked
child with its own working directory, environment, argv, stdout/stderr file and exit code, as
`cd WORKDIR && env ENV... python3 ARGV...` would run it. Used by frameworks/titan/readback_test.go;
importing torch once instead of once per launch is what makes the whole matrix fit a test.

    python3 readback_many.py CELLS_JSON

CELLS_JSON is a list of {"workdir", "env", "argv", "out", "rc"}; argv[0] is python3 and argv[1] the
check script. Up to os.cpu_count() children run at a time.
"""
import importlib.util
import json
import os
import runpy
import sys


def run_cell(c):
    os.chdir(c["workdir"])
    os.environ.update(c["env"])
    fd = os.open(c["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.argv = c["argv"][1:]
    code = 0
    try:
        runpy.run_path(c["argv"][1], run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int) and e.code is not None:
            sys.stderr.write("%s\n" % e.code)
    except BaseException as e:  # noqa: B902
        sys.stderr.write("uncaught: %r\n" % (e,))
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    with open(c["rc"], "w") as f:
        f.write("%d\n" % code)
    os._exit(0)


def warm(cells):
    """Imports torch and the TorchTitan modules every preflight of these cells imports."""
    c = cells[0]
    os.environ.update(c["env"])
    spec = importlib.util.spec_from_file_location("rival_titan_check_warm", c["argv"][1])
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    import torch  # noqa: F401
    m.stand_in_missing()
    tree = m.resolve(c["argv"][3], "torchtitan/config/job_config.py")
    if tree:
        sys.path.insert(0, tree)
    for name in ("torchtitan.config.manager", "torchtitan.protocols.train_spec", "torchtitan.models.llama3",
                 "torchtitan.components.optimizer", "torchtitan.components.lr_scheduler", "torchtitan.distributed"):
        importlib.import_module(name)
    if tree:
        sys.path.remove(tree)


def run_group(cells):
    warm(cells)
    limit, running = os.cpu_count() or 1, set()
    for c in cells:
        while len(running) >= limit:
            pid, _ = os.wait()
            running.discard(pid)
        pid = os.fork()
        if pid == 0:
            run_cell(c)
        running.add(pid)
    while running:
        pid, _ = os.wait()
        running.discard(pid)


def main():
    with open(sys.argv[1]) as f:
        cells = json.load(f)
    groups = {}
    for c in cells:
        groups.setdefault((c["argv"][3], c["env"].get("RIVAL_TORCHTITAN_DIR", "")), []).append(c)
    for group in groups.values():
        pid = os.fork()
        if pid == 0:
            run_group(group)
            os._exit(0)
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
