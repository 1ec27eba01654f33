#!/usr/bin/env python3
"""Independent reading of the progress a trainer's output lines show.

Reads every log excerpt of ../real, ../corpus and ../built line by line (split
on "\n" only, as a trainer's output streams) with its own regular expressions
and no Rival code, and writes, per file, the lines that are training steps with
the figures a live progress display shows. logparse.TestProgressLineOracle
compares ProgressLine with this. Regenerate after adding an excerpt:

    python3 oracle.py > expected.json

Rules (the progress display's, before ProgressLine read it through logparse):
  - a Megatron-format line "iteration N/ T | ... elapsed time per iteration
    (ms): X" is step N of T, X ms; "global batch size: G" and "lm loss: L"
    anywhere in it are its batch size and loss;
  - otherwise "step: N" followed by a space is step N, with the first
    "loss: L" and "tps: R" (thousands separators dropped) in the line; NeMo's
    "global_step: N" reads as such a line;
  - TorchTitan's "validate step:" lines are validation, not training steps.
Terminal colours are removed first. Unparsable numbers count as absent.
"""
import glob
import json
import os
import re

ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|.)")
MEGA = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|.*?elapsed time per iteration \(ms\):\s*([0-9.]+)")
GBS = re.compile(r"global batch size:\s*(\d+)")
LM_LOSS = re.compile(r"lm loss:\s*([0-9.eE+-]+)")
STEP = re.compile(r"step:\s*(\d+)\s")
LOSS = re.compile(r"loss:\s*([0-9.eE+-]+)")
TPS = re.compile(r"tps:\s*([0-9,.]+)")
VALIDATE = re.compile(r"validate\s*step:")


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def read(line):
    line = ANSI.sub("", line)
    m = MEGA.search(line)
    if m:
        out = {"step": int(m[1]), "total": int(m[2])}
        ms = num(m[3])
        if ms:
            out["step_time_ms"] = ms
        g = GBS.search(line)
        if g and int(g[1]) > 0:
            out["global_batch_size"] = int(g[1])
        lm = LM_LOSS.search(line)
        if lm and num(lm[1]) is not None:
            out["loss"] = num(lm[1])
        return out
    if VALIDATE.search(line):
        return None
    m = STEP.search(line)
    if not m:
        return None
    out = {"step": int(m[1])}
    lm = LOSS.search(line)
    if lm and num(lm[1]) is not None:
        out["loss"] = num(lm[1])
    t = TPS.search(line)
    if t:
        v = num(t[1].replace(",", ""))
        if v:
            out["tokens_per_second"] = v
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    res = {}
    for sub in ("real", "corpus", "built"):
        for path in sorted(glob.glob(os.path.join(here, "..", sub, "*.log"))):
            with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
                lines = f.read().split("\n")
            steps = []
            for i, line in enumerate(lines, 1):
                r = read(line)
                if r is not None:
                    r["line"] = i
                    steps.append(r)
            res[sub + "/" + os.path.basename(path)] = steps
    print(json.dumps(res, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
