"""Runs train.py --check for many launches in one interpreter, so torch is imported once.

Usage: python3 cells.py TRAIN_PY CELLS_JSON. CELLS_JSON is a list of {"argv": [...], "env": {...}}: each
cell runs train.py as `python3 TRAIN_PY argv...` would (runpy, as __main__) with env added to os.environ.
Before each cell's output it prints "rival-cell <index>", after it "rival-exit <code>".
"""
import json
import os
import runpy
import sys


def main():
    script, cells_path = sys.argv[1], sys.argv[2]
    with open(cells_path, encoding="utf-8") as f:
        cells = json.load(f)
    sys.stderr = sys.stdout  # one stream, in order
    base = dict(os.environ)
    for i, cell in enumerate(cells):
        print(f"rival-cell {i}", flush=True)
        os.environ.clear()
        os.environ.update(base)
        os.environ.update(cell.get("env") or {})
        sys.argv = [script] + cell["argv"]
        code = 0
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except Exception as e:  # noqa: BLE001 - reported per cell
            print(f"rival-error {type(e).__name__}: {e}", flush=True)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        print(f"rival-exit {code}", flush=True)


if __name__ == "__main__":
    main()
