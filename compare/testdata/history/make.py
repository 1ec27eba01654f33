#!/usr/bin/env python3
"""Writes the crafted histories of compare's History tests (one folder each,
listed in README.md) and expected.json, the figures oracle.py computes from
them independently of the Go code.

Run from this folder:  python3 make.py
"""
import datetime
import json
import os
import random
import shutil

import oracle

HERE = os.path.dirname(os.path.abspath(__file__))
GBS, SL, GPUS = 128, 8192, 8


def run(tps, *, host="h100-a", start, image="sha256:" + "a" * 64, version="megatron-core 0.15.0, torch 2.8.0, cuda 12.9", stack=None,
        hw="hw-driver-570", steps=12, loss_shift=0.0, precision="bf16", minutes=10):
    """One H100 Megatron-LM Llama 3.1 8B result at tps tokens/s/GPU."""
    step = GBS * SL / (tps * GPUS)
    times = [step * 2.0] + [step] * (steps - 1)
    t0 = datetime.datetime.strptime(start, "%Y-%m-%dT%H:%M:%SZ")
    t1 = t0 + datetime.timedelta(minutes=minutes)
    return {
        "schema_version": "1.0",
        "rival_version": "test",
        "platform": "nvd",
        "hardware_fingerprint": hw,
        "image_digest": image,
        "config_fingerprint": "cfg-history",
        "tokenizer_fingerprint": "tok-llama",
        "framework": dict({"name": "megatron", "version": version, "requested": "mega"}, **({"stack": stack} if stack else {})),
        "model": {"name": "llama", "display_name": "Llama 3.1 8B", "proxy": False},
        "dataset": {"name": "bc", "fingerprint": "ds-bc"},
        "gpu_info": {"device_count": GPUS, "device_name": "H100 SXM", "spec_model": "H100 SXM",
                     "memory_per_gpu_mib": 81559, "tdp_watts": 700.0},
        "training_config": {"num_gpus": GPUS, "global_batch_size": GBS, "micro_batch_size": 1,
                            "sequence_length": SL, "precision": precision, "precision_assumed": False,
                            "train_iters": steps, "steps_logged": steps},
        "parallelism_config": {"tensor_parallel": 1, "pipeline_parallel": 1, "context_parallel": 1,
                               "data_parallel": GPUS},
        "warmup_steps_excluded": 1,
        "performance_metrics": {"measured_steps": steps - 1, "avg_step_time_seconds": step,
                                "tokens_per_second": tps * GPUS, "tokens_per_second_per_gpu": tps},
        "memory_metrics": {"peak_allocated_mib": 60000.0, "peak_reserved_mib": 70000.0},
        "step_numbers": list(range(1, steps + 1)),
        "step_times": times,
        "loss_values": [round(11.5 - 0.25 * i + loss_shift, 6) for i in range(steps)],
        "problems": [],
        "provenance": {"run_index": 0, "host": host, "started_at": start,
                       "finished_at": t1.strftime("%Y-%m-%dT%H:%M:%SZ"), "config": {"SEED": "42"}},
    }


rng = random.Random(28)


def batch(n, mean, noise, day, hour=8, **kw):
    """n runs, 20 minutes apart, each at mean × (1 + N(0, noise))."""
    out = []
    for i in range(n):
        tps = round(mean * (1 + rng.gauss(0, noise)), 1)
        start = f"2026-{day}T{hour:02d}:{20 * i:02d}:00Z"
        out.append(run(tps, start=start, **kw))
    return out


STACK_B = dict(image="sha256:" + "b" * 64, version="megatron-core 0.16.0, torch 2.10.0a0, cuda 13.0.2")
STACK_C = dict(image="sha256:" + "c" * 64, version="megatron-core 0.17.0, torch 2.11.0, cuda 13.1")

SETS = {
    # A new image 10% slower on the same host: a regression.
    "regression": batch(3, 10000, 0.01, "03-02") + batch(3, 9000, 0.01, "03-09", **STACK_B),
    # A new image, the same speed within noise: no change.
    "noise": batch(3, 10000, 0.01, "03-02") + batch(3, 10000, 0.01, "03-09", **STACK_B),
    # The same recorded stack a week later, 10% slower: a change outside the
    # recorded stack, not a software regression.
    "date-only": batch(3, 10000, 0.01, "03-02") + batch(3, 9000, 0.01, "03-09"),
    # Two hosts, each on stack A then stack B (10% slower on both), then a
    # third host on stack C: host differences apart from stack steps.
    "mixed-hosts": (batch(3, 10000, 0.01, "03-02") + batch(3, 10800, 0.01, "03-03", host="h100-b", hw="hw-driver-570-b")
                    + batch(3, 9000, 0.01, "03-09", **STACK_B) + batch(3, 9720, 0.01, "03-10", host="h100-b", hw="hw-driver-570-b", **STACK_B)
                    + batch(3, 9500, 0.01, "03-11", host="h100-c", **STACK_C)),
}

# A workload an anchor publishes (dgxc-benchmarking v25.04 BF16: 10,682
# tokens/s/GPU on 8×H100 at SL 8192, last-step timing): three runs.
SETS["anchor"] = batch(3, 10300, 0.01, "03-02")

# Rival's two NVIDIA stacks, as its results record them: nemo:26.02 then nemo:26.06 on the same
# host, 8% faster. The upgrade a user measures with compare:history.
NEMO_2602 = dict(image="sha256:" + "d" * 64, version="Megatron-LM b0cc2706 (Megatron Core 0.16.0) in nvcr.io/nvidia/nemo:26.02", stack="nemo:26.02")
NEMO_2606 = dict(image="sha256:" + "e" * 64, version="Megatron-LM d0b3b775 (Megatron Core 0.18.0) in nvcr.io/nvidia/nemo:26.06", stack="nemo:26.06")
SETS["nvd-stacks"] = batch(3, 10000, 0.01, "06-20", **NEMO_2602) + batch(3, 10800, 0.01, "06-27", **NEMO_2606)

EXPECTED = {}
for name, runs in SETS.items():
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for i, r in enumerate(runs):
        with open(os.path.join(d, f"run_{i:02d}.json"), "w") as f:
            json.dump(r, f, indent=1)
            f.write("\n")
    docs = oracle.load([d])
    EXPECTED[name] = {"history": oracle.history(docs, 0.05)}
    if name == "anchor":
        EXPECTED[name]["dgxc_bf16"] = oracle.anchor_line(docs, 10682)
        EXPECTED[name]["dgxc_bf16_last_step"] = oracle.anchor_line(docs, 10682, last_step=True)

with open(os.path.join(HERE, "expected.json"), "w") as f:
    json.dump(EXPECTED, f, indent=1, sort_keys=True)
    f.write("\n")
