#!/usr/bin/env python3
"""Writes the crafted result sets of compare's defect tests (one folder each,
listed in README.md) and oracle.json, the figures the tests expect, computed
here with the Python standard library only.

Run from this folder:  python3 make.py
"""
import copy
import json
import math
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

# Llama 3.1 8B constants (config.json); Megatron's causal dense FLOP count.
L, H, F, HEADS, KV, V = 32, 4096, 14336, 32, 8, 128256


def flops_per_token(s):
    hd = H // HEADS
    q, kv = HEADS * hd, KV * hd
    per_layer = H * (q + 2 * kv) + q * s + q * H + 3 * H * F
    return 6 * (L * per_layer + H * V)


GPU = {
    "amd": dict(name="MI300X", mem=196592, tdp=750.0, image="sha256:img-amd"),
    "nvd": dict(name="H100 SXM", mem=81559, tdp=700.0, image="sha256:img-nvd"),
    "cpu": dict(name=None, mem=None, tdp=None, image=None),
}


def run(platform, framework, tps_gpu, *, sl=8192, gbs=128, mbs=1, gpus=8, precision="bf16",
        cfg="cfg-a", ds="ds-a", tok="tok-a", steps=11, warm=1, loss=None, series=None,
        tps_total=None, avg_step=None, model="llama", proxy=False, version=None, power=None,
        device_count=None):
    g = GPU[platform]
    tokens_per_step = gbs * sl
    total = tps_gpu * gpus if gpus else tps_gpu * 8
    step = tokens_per_step / total
    times = series if series is not None else [step * 2.5] + [step] * (steps - 1)
    losses = loss if loss is not None else [12.0 - 0.3 * i for i in range(len(times))]
    r = {
        "schema_version": "1.0",
        "rival_version": "test",
        "platform": platform,
        "hardware_fingerprint": "hw-" + platform,
        "image_digest": g["image"],
        "config_fingerprint": cfg,
        "tokenizer_fingerprint": tok,
        "framework": {"name": framework, "version": version or framework + "-1.0", "requested": None},
        "model": {"name": model, "display_name": "Llama 3.1 8B" if not proxy else "Llama 3.1 8B proxy",
                  "proxy": proxy},
        "dataset": {"name": "bc", "fingerprint": ds},
        "gpu_info": {"device_count": gpus, "device_name": g["name"], "spec_model": g["name"],
                     "memory_per_gpu_mib": g["mem"], "tdp_watts": g["tdp"]},
        "training_config": {"num_gpus": gpus, "global_batch_size": gbs, "micro_batch_size": mbs,
                            "sequence_length": sl, "precision": precision, "precision_assumed": False,
                            "train_iters": len(times), "steps_logged": len(times)},
        "parallelism_config": {"tensor_parallel": 1, "pipeline_parallel": 1, "context_parallel": 1,
                               "data_parallel": gpus},
        "warmup_steps_excluded": warm,
        "performance_metrics": {
            "measured_steps": len(times) - warm,
            "avg_step_time_seconds": avg_step if avg_step is not None else step,
            "tokens_per_second": tps_total if tps_total is not None else total,
            "tokens_per_second_per_gpu": tps_gpu,
        },
        "memory_metrics": {"peak_allocated_mib": 60000.0, "peak_reserved_mib": 70000.0},
        "step_numbers": list(range(1, len(times) + 1)),
        "step_times": times,
        "loss_values": losses,
        "problems": [],
    }
    if platform == "cpu":
        r["gpu_info"] = {"device_count": 0}
    if gpus is None:
        del r["training_config"]["num_gpus"]
        del r["parallelism_config"]["data_parallel"]
        del r["gpu_info"]["device_count"]
        r["performance_metrics"]["tokens_per_second"] = tps_total if tps_total is not None else tps_gpu * 8
        if device_count is not None:
            r["gpu_info"]["device_count"] = device_count
    if power is not None:
        r["power_metrics"] = {"source": "nvidia-smi" if platform == "nvd" else "amd-smi", "samples": 40,
                              "interval_seconds": 5, "avg_power_watts_per_gpu": power}
    return r


SETS = {}
ORACLE = {}

# 1. Imported results without a config fingerprint: SL 4096 and SL 8192 on
#    MI300X must not pool into one group.
SETS["pooled-sl"] = {
    "amd_sl4096": run("amd", "primus", 11000.0, sl=4096, cfg=None),
    "amd_sl8192": run("amd", "primus", 9000.0, sl=8192, cfg=None),
    "nvd_sl8192": run("nvd", "megatron", 9300.0, sl=8192, cfg=None),
    "amd_fp8": run("amd", "primus", 12000.0, sl=8192, precision="fp8", cfg=None),
}

# 2. Equal config fingerprints, but the recorded GBS differs (an inflated
#    imported number): never "identical configuration".
SETS["fingerprint-only"] = {
    "amd": run("amd", "primus", 18000.0, gbs=384),
    "nvd": run("nvd", "megatron", 9000.0, gbs=128),
}

# 3. A bf16 GPU run and an fp32 CPU run with the same fingerprints.
cpu = run("cpu", "fsdp", 30.0, gpus=1, precision="fp32", gbs=8, sl=2048)
SETS["cpu-vs-gpu"] = {
    "nvd": run("nvd", "fsdp", 20000.0, gpus=1, gbs=8, sl=2048),
    "cpu": cpu,
}

# 4. Same hyperparameters and data, different frameworks; no run records
#    an image digest (host runs).
fa, fn = run("amd", "primus", 10000.0), run("nvd", "megatron", 9000.0)
fa["image_digest"] = fn["image_digest"] = None
SETS["frameworks-differ"] = {"amd": fa, "nvd": fn}

# 5. H100 at SL 4096 FP8 is the fastest group; MI300X and H100 at SL 8192
#    BF16 are the identical pair (1.20x).
SETS["best-vs-identical"] = {
    "nvd_fast": run("nvd", "megatron", 16560.0, sl=4096, precision="fp8", cfg="cfg-fp8-4096"),
    "nvd_bf16": run("nvd", "megatron", 7800.0),
    "amd_bf16": run("amd", "megatron", 9000.0),
}
ORACLE["best-vs-identical"] = {"identical_ratio": 9000.0 / 7800.0}

# 6. Three groups: MI300X and H100 Megatron identical, H100 NeMo at GBS 256.
SETS["dagger"] = {
    "amd": run("amd", "megatron", 9000.0),
    "nvd": run("nvd", "megatron", 8000.0),
    "nvd_nemo": run("nvd", "nemo", 8500.0, gbs=256, cfg="cfg-b"),
}

# 7. Consistency: a step series twice as slow as the stated mean; a result
#    without num_gpus whose tokens/s/GPU is inflated 3x.
step = 128 * 8192 / (9000.0 * 8)
SETS["consistency"] = {
    "amd_ok": run("amd", "primus", 9000.0),
    "amd_slow_series": run("amd", "primus", 9000.0, series=[step * 5] + [step * 2] * 10),
    "nvd_no_gpus": run("nvd", "megatron", 27000.0, gpus=None, tps_total=8000.0 * 8,
                       avg_step=128 * 8192 / (8000.0 * 8)),
    "nvd_ok": run("nvd", "megatron", 8000.0),
    # 2x inflated: tokens/s / tokens/s/GPU is a whole 4, but gpu_info says 8.
    "nvd_2x_device_count": run("nvd", "megatron", 16000.0, gpus=None, tps_total=8000.0 * 8,
                               avg_step=128 * 8192 / (8000.0 * 8), device_count=8,
                               series=[128 * 8192 / (8000.0 * 8) * 2.5] + [128 * 8192 / (8000.0 * 8)] * 10),
    # Consistent on device_count alone: kept.
    "amd_device_count_ok": run("amd", "primus", 9000.0, gpus=None, tps_total=9000.0 * 8,
                               avg_step=128 * 8192 / (9000.0 * 8), device_count=8),
}


def consistency_error(r):
    """1 when tokens/s/GPU cannot be trusted: no GPU count recorded anywhere
    (unverifiable), or count x tokens/s/GPU (or the step series' mean) more
    than 2 % off tokens/s (the stated mean step time)."""
    tc, pc, gi = r["training_config"], r["parallelism_config"], r["gpu_info"]
    n = tc.get("num_gpus")
    if not n and all(pc.get(k) for k in ("tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel")):
        n = pc["tensor_parallel"] * pc["pipeline_parallel"] * pc["context_parallel"] * pc["data_parallel"]
    if not n:
        n = gi.get("device_count")
    pm = r["performance_metrics"]
    if not n:
        return 1.0
    if abs(pm["tokens_per_second_per_gpu"] * n - pm["tokens_per_second"]) / pm["tokens_per_second"] > 0.02:
        return 1.0
    steps = r["step_times"][r["warmup_steps_excluded"]:]
    if abs(sum(steps) / len(steps) - pm["avg_step_time_seconds"]) / pm["avg_step_time_seconds"] > 0.02:
        return 1.0
    return 0.0


ORACLE["consistency"] = {k: consistency_error(v) for k, v in SETS["consistency"].items()}

# 8. Two byte-different but numerically identical runs per side.
a0 = run("amd", "primus", 9000.0)
a1 = copy.deepcopy(a0)
a1["rival_version"] = "test-2"
n0 = run("nvd", "megatron", 8000.0)
n1 = copy.deepcopy(n0)
n1["rival_version"] = "test-2"
SETS["identical-runs"] = {"amd_0": a0, "amd_1": a1, "nvd_0": n0, "nvd_1": n1}


# 9. Loss parity: a bf16/fp8 pair that differs only in precision, one
#    single-step spike (7 %) in an otherwise equal curve, and a third group
#    whose curve ends 8 % higher over its last 10 % of steps.
def curve(n, shift=0.0, spike_at=None):
    out = []
    for i in range(n):
        v = 10.0 * math.exp(-i / 60.0) + 2.0
        if i >= n * 0.9:
            v *= 1 + shift
        if spike_at == i:
            v *= 1.07
        out.append(round(v, 6))
    return out


N = 100
SETS["parity"] = {
    "amd_bf16": run("amd", "megatron", 9000.0, steps=N, loss=curve(N)),
    "nvd_bf16": run("nvd", "megatron", 8000.0, steps=N, loss=curve(N, spike_at=50)),
    "nvd_fp8": run("nvd", "megatron", 12000.0, steps=N, precision="fp8", cfg="cfg-a-fp8", loss=curve(N, shift=0.08)),
}
c0, c8 = curve(N), curve(N, shift=0.08)
last = range(N - N // 10, N)
m0 = sum(c0[i] for i in last) / len(last)
m8 = sum(c8[i] for i in last) / len(last)
ORACLE["parity"] = {"fp8_vs_amd_gap": abs(m8 - m0) / ((m8 + m0) / 2)}

# 10. Prices: an A100 and a CPU run are priced through PRICE_A100 / PRICE_CPU.
a100 = run("nvd", "megatron", 4000.0)
a100["gpu_info"].update({"device_name": "NVIDIA A100-SXM4-80GB", "spec_model": None,
                         "memory_per_gpu_mib": 81920, "tdp_watts": None})
SETS["prices"] = {"a100": a100, "amd": run("amd", "megatron", 9000.0)}

# 11. Energy: one group sampled, the other only a TDP estimate.
SETS["energy"] = {
    "amd": run("amd", "megatron", 9000.0, power=600.0),
    "nvd": run("nvd", "megatron", 8000.0),
}

# 11b. Slurm runs: MI300X sampled on its compute nodes (the measured window,
#      one sample a second per node), H100 whose nodes recorded no samples.
slurm_amd = run("amd", "megatron", 9000.0, power=610.0)
slurm_amd["power_metrics"].update({"samples": 24, "interval_seconds": 1})
slurm_amd["provenance"] = {"slurm_job_id": "4242", "node_list": ["mi-a", "mi-b"]}
slurm_nvd = run("nvd", "megatron", 8000.0)
slurm_nvd["power_metrics"] = {"source": "none", "samples": 0, "interval_seconds": 0}
slurm_nvd["provenance"] = {"slurm_job_id": "4243", "node_list": ["h-a", "h-b"]}
SETS["slurm-energy"] = {"amd": slurm_amd, "nvd": slurm_nvd}

# 12. Proxy runs: no time-to-train or cost.
SETS["proxy"] = {
    "amd": run("amd", "fsdp", 90000.0, gpus=1, proxy=True, model="llama-proxy", sl=1024, gbs=8),
    "nvd": run("nvd", "fsdp", 80000.0, gpus=1, proxy=True, model="llama-proxy", sl=1024, gbs=8),
}

# 13. A CPX-partitioned MI300X (24 GiB of 192 exposed per GPU) next to a
#     whole H100: MFU is against the whole GPU's peak and must be marked.
cpx = run("amd", "megatron", 1500.0)
cpx["gpu_info"]["memory_per_gpu_mib"] = 24576
SETS["partition"] = {"amd_cpx": cpx, "nvd": run("nvd", "megatron", 8000.0)}

# 14. Warm-up sensitivity: 50 iterations each; MI300X runs iterations 35-44
#     5 % faster than the rest of its measured steps, H100 is even.
def fixed_window_run(platform, framework, step, fast):
    warm = 5
    series = [step * 3] * warm + [step * (0.95 if fast and 35 <= i + 1 <= 44 else 1.0) for i in range(warm, 50)]
    measured = series[warm:]
    avg = sum(measured) / len(measured)
    tps_gpu = 128 * 8192 / avg / 8
    return run(platform, framework, tps_gpu, series=series, warm=warm, avg_step=avg), avg


fw_amd, amd_avg = fixed_window_run("amd", "megatron", 12.0, True)
fw_nvd, nvd_avg = fixed_window_run("nvd", "megatron", 14.0, False)
SETS["fixed-window"] = {"amd": fw_amd, "nvd": fw_nvd}
ORACLE["fixed-window"] = {
    "rival_ratio": (1 / amd_avg) / (1 / nvd_avg),
    "fixed_ratio": (1 / (12.0 * 0.95)) / (1 / 14.0),
}


# 14b. 44-iteration runs log iterations 35-44, but as their last steps:
#      NVIDIA's fixed window (of a 50-iteration run) does not apply.
SETS["short-window"] = {
    "amd": run("amd", "megatron", 9000.0, steps=44),
    "nvd": run("nvd", "megatron", 8000.0, steps=44),
}

# 15. Reproduce commands: FP8 at GBS 256 on Qwen; the recorded configuration
#     keys that differ from their defaults (PRECISION, GBS) go in front of
#     train:run, the ones at their default (SL 2048, SEED 42) do not.
def repro_run(platform, framework, tps_gpu):
    r = run(platform, framework, tps_gpu, precision="fp8", gbs=256, sl=2048, model="qwen", cfg="cfg-fp8-256")
    r["model"]["display_name"] = "Qwen 2.5 7B"
    r["provenance"] = {"config": {"PRECISION": "fp8", "GBS": "256", "SL": "2048", "SEED": "42"}}
    r["framework"]["requested"] = framework
    return r


SETS["reproduce"] = {"amd": repro_run("amd", "prim", 14000.0), "nvd": repro_run("nvd", "mega", 12000.0)}


# 16. Markdown characters in recorded text: a framework version with *, _,
#     a backtick and |, a model name with * and |, a file name with [ ] and _.
#     Every table keeps its column count; nothing renders as markup.
md_amd = run("amd", "megatron", 9000.0, version="core_r0.12*rc|`x`")
md_nvd = run("nvd", "megatron", 8000.0, version="core_r0.12*rc|`x`")
for r in (md_amd, md_nvd):
    r["model"]["display_name"] = "Llama *3.1* | 8B"
SETS["markdown-chars"] = {"amd_[1]": md_amd, "nvd_[1]": md_nvd}


# 17. A result that records its own statistics (as extract writes them): a
#     data-found warm-up of 3 logged steps, a step series decimated to every
#     2nd of 40 logged steps, the median as headline statistic (tokens/s from
#     the median step time, 10 % below the mean's). Compare uses the recorded
#     median/p10/p90 (taken over all 37 measured steps) and the recorded
#     warm-up, and does not call the median-based tokens/s inconsistent.
def recorded_stats_run():
    median, mean_step, p10, p90 = 20.0, 22.0, 19.5, 25.5
    tps_gpu = 128 * 8192 / median / 8
    # series: logged steps 1, 3, ..., 39; steps 1-3 are warm-up.
    measured = [20.0] * 12 + [26.0] * 6        # steps 5, 7, ..., 39: mean 22
    series = [300.0, 100.0] + measured
    r = run("amd", "megatron", tps_gpu, series=series, warm=3, avg_step=mean_step)
    r["step_series_stride"] = 2
    r["step_numbers"] = list(range(1, 41, 2))
    r["training_config"]["train_iters"] = r["training_config"]["steps_logged"] = 40
    pm = r["performance_metrics"]
    pm.update({"headline_statistic": "median_step_time", "median_step_time_seconds": median,
               "p10_step_time_seconds": p10, "p90_step_time_seconds": p90, "measured_steps": 37,
               "tokens_per_second_per_gpu_mean": 128 * 8192 / mean_step / 8})
    return r, dict(median=median, p10=p10, p90=p90, measured_series_mean=sum(measured) / len(measured))


rs, rs_oracle = recorded_stats_run()
SETS["recorded-stats"] = {"amd": rs, "nvd": run("nvd", "megatron", 8000.0)}
ORACLE["recorded-stats"] = rs_oracle


def main():
    for name, files in SETS.items():
        d = os.path.join(HERE, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for fn, r in files.items():
            with open(os.path.join(d, fn + ".json"), "w") as f:
                json.dump(r, f, indent=1)
                f.write("\n")
    with open(os.path.join(HERE, "oracle.json"), "w") as f:
        json.dump(ORACLE, f, indent=1, sort_keys=True)
        f.write("\n")


main()
