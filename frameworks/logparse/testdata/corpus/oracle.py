#!/usr/bin/env python3
"""Independent oracle for the real-log corpus: reads each excerpt with its own small
regular expressions (no Rival code) and writes expected.json with the numbers a
correct reading gives. Run: python3 oracle.py > expected.json (paths are relative to testdata/)

Rules it applies, stated once here:
- Megatron family: a step is an "iteration N/ T |" line that ends with "|"; the step
  time is "elapsed time per iteration (ms)" / 1000 (first number of "X/Y");
  lines with a rank label keep only the highest rank's lines.
- NeMo: "Training epoch E, iteration N/T | ... train_step_timing in s: X" is step
  N+1 of T+1 (NeMo counts from 0).
- TorchTitan: "step: N loss: L ... tps: K"; the step time is GBS*SL/(tps*GPUS).
- Hard-wrapped pastes: an iteration line without its "elapsed time per iteration"
  segment goes on over the following physical lines, glued without a separator,
  until the text holds that segment and ends with "|";
  segment keys are compared with all whitespace removed.
- Warm-up: the first step, then every leading step slower than 1.2 x the median of
  the steps after the first; never all steps.
- Headline: the median step time of the rest (numpy-style linear interpolation);
  tokens/s/GPU = GBS*SL/median/GPUS.
"""
import json
import os
import re
import statistics
import sys

# file -> facts given to extract (test inputs where the source is silent) and family
CASES = {
    "real/megatron-old-no-timestamp.log": ("megatron", {"GPUS": 128, "SL": 2048}),
    "corpus/megatron-2023-multi.log": ("megatron", {"GPUS": 128, "SL": 2048}),
    "real/megatron-2024-issue756.log": ("megatron", {"GPUS": 8, "SL": 4096}),
    "corpus/megatron-deepspeed.log": ("megatron-deepspeed", {"GPUS": 8}),
    "real/primus-legacy-2025.log": ("primus", {"SL": 4096}),
    "real/megatron-bridge-dgxc-h100.log": ("megatron-bridge", {"GPUS": 8, "SL": 8192}),
    "corpus/megatron-bridge-pr841-wrapped.log": ("megatron-bridge", {"GPUS": 8, "SL": 4096}),
    "real/nemo2-bionemo.log": ("nemo", {"GPUS": 1, "SL": 1024}),
    "real/torchtitan.log": ("torchtitan", {"GPUS": 8, "SL": 8192, "GBS": 8}),
    "corpus/torchtitan-2025-pr1287.log": ("torchtitan", {"GPUS": 8, "SL": 8192, "GBS": 8}),
    "corpus/torchtitan-2026-pr3393.log": ("torchtitan", {"GPUS": 1, "SL": 2048, "GBS": 8}),
}

MEGA = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|(.*)$")
MEGA_START = re.compile(r"iteration\s+\d+\s*/\s*\d+\s*\|")
RANK = re.compile(r"\[rank-(\d+)/(\d+)\]")
NEMO = re.compile(r"Training epoch \d+, iteration (\d+)/(\d+) \|(.*)$")
TITAN = re.compile(r"step:\s*(\d+)\s+loss:\s*([0-9.]+).*?tps:\s*([0-9,]+)")


def seg(rest, key):
    for part in rest.split("|"):
        k, _, v = part.partition(":")
        if "".join(k.split()).lower() == "".join(key.split()):
            v = v.strip().split("/")[0].split()[0]
            return float(v)
    return None


def physical_to_logical(path):
    held = None
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if held is not None:
            held += line
            if line.rstrip().endswith("|") and "elapsed" in held:
                yield held
                held = None
            continue
        if MEGA_START.search(line) and "elapsed" not in line:
            held = line
            continue
        yield line
    if held is not None:
        yield held


def read(path, family, facts):
    steps, times, losses = [], [], []
    gbs, sl, world, total = facts.get("GBS"), facts.get("SL"), facts.get("GPUS"), None
    best_rank = -1
    rows = []
    for line in physical_to_logical(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", path)):
        if family in ("megatron", "megatron-deepspeed", "primus", "megatron-bridge"):
            m = MEGA.search(line)
            if not m or not m.group(3).rstrip().endswith("|") and "usage_ratio" not in m.group(3):
                continue
            r = RANK.search(line)
            rank = int(r.group(1)) if r else -1
            if r:
                world = world or 0
            rows.append((rank, r and int(r.group(2)), int(m.group(1)), int(m.group(2)), m.group(3)))
        elif family == "nemo":
            m = NEMO.search(line)
            if m:
                # 0-based iteration over max_steps-1: iteration i is step i+1 of T+1
                rows.append((-1, None, int(m.group(1)) + 1, int(m.group(2)) + 1, m.group(3)))
        else:
            m = TITAN.search(line)
            if m:
                rows.append((-1, None, int(m.group(1)), None, (float(m.group(2)), float(m.group(3).replace(",", "")))))
    best_rank = max(r[0] for r in rows)
    for rank, w, n, t, rest in rows:
        if rank != best_rank:
            continue
        if w:
            world = w
        total = t
        steps.append(n)
        if family == "nemo":
            times.append(seg(rest, "train_step_timing in s"))
            losses.append(seg(rest, "reduced_train_loss"))
            gbs = gbs or int(seg(rest, "global_batch_size"))
        elif family == "torchtitan":
            losses.append(rest[0])
            times.append(gbs * sl / (rest[1] * world))
        else:
            times.append(seg(rest, "elapsed time per iteration (ms)") / 1000)
            losses.append(seg(rest, "lm loss"))
            gbs = gbs or int(seg(rest, "global batch size"))
            if sl is None and seg(rest, "actual seqlen") is not None:
                sl = int(seg(rest, "actual seqlen"))
    n = len(times)
    w = 0
    if n > 1:
        ref = statistics.median(times[1:])
        w = 1
        while w < n and times[w] > 1.2 * ref:
            w += 1
        w = min(w, n - 1)
    measured = times[w:]
    med = statistics.median(measured)
    return {
        "family": family,
        "env": {k: str(v) for k, v in facts.items()},
        "steps": steps,
        "losses": losses,
        "step_times": times,
        "train_iters": total,
        "global_batch_size": gbs,
        "sequence_length": sl,
        "num_gpus": world,
        "warmup": w,
        "median_step_time": med,
        "mean_step_time": sum(measured) / len(measured),
        "tokens_per_second_per_gpu": gbs * sl / med / world,
    }


out = {path: read(path, fam, facts) for path, (fam, facts) in CASES.items()}
json.dump(out, sys.stdout, indent=2, sort_keys=True)
sys.stdout.write("\n")
