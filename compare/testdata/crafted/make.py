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
a1["loss_values"] = [x + 0.001 for x in a1["loss_values"]]  # a second run, not a copy
n0 = run("nvd", "megatron", 8000.0)
n1 = copy.deepcopy(n0)
n1["rival_version"] = "test-2"
n1["loss_values"] = [x + 0.001 for x in n1["loss_values"]]
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


# ---- Headline rules of issue 24 -------------------------------------------

def t_pdf(x, df):
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    return c * (1 + x * x / df) ** (-(df + 1) / 2)


def t_q975(df, n=4000):
    """The 0.975 quantile of Student's t: Simpson's rule on the density,
    inverted by bisection (no library)."""
    def cdf(x):
        h = x / n
        s = t_pdf(0, df) + t_pdf(x, df)
        for i in range(1, n):
            s += (4 if i % 2 else 2) * t_pdf(i * h, df)
        return 0.5 + s * h / 3
    lo, hi = 0.0, 60.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if cdf(mid) < 0.975:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mean(xs):
    return sum(xs) / len(xs)


def sd(xs):
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def pct(xs, q):
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (pos - lo) * (s[hi] - s[lo])


def ratio_ci(a, b):
    ma, mb = mean(a), mean(b)
    va = sd(a) ** 2 / (len(a) * ma * ma)
    vb = sd(b) ** 2 / (len(b) * mb * mb)
    df = (va + vb) ** 2 / (va * va / (len(a) - 1) + vb * vb / (len(b) - 1))
    r = ma / mb
    half = t_q975(df) * r * math.sqrt(va + vb)
    return r, r - half, r + half


def runs_needed(a, b):
    r = mean(a) / mean(b)
    ca, cb = sd(a) / mean(a), sd(b) / mean(b)
    n = 2
    while True:
        va, vb = ca * ca / n, cb * cb / n
        df = (va + vb) ** 2 / ((va * va + vb * vb) / (n - 1))
        if t_q975(df) * r * math.sqrt(va + vb) < abs(r - 1):
            return n
        n += 1


# 18. Work per token differs: MI300X at SL 2048 moves 2 % more tokens/s/GPU
#     than H100 at SL 4096, but H100 does more model FLOP/s. The headline
#     compares model FLOP/s, names H100 faster and compares no per-token cost.
wa = [9180.0, 9200.0, 9220.0]
wn = [9000.0, 9010.0, 8990.0]
SETS["work-per-token"] = {}
for i, (x, y) in enumerate(zip(wa, wn)):
    SETS["work-per-token"]["amd_%d" % i] = run("amd", "megatron", x, sl=2048, cfg="cfg-2048")
    SETS["work-per-token"]["nvd_%d" % i] = run("nvd", "megatron", y, sl=4096, cfg="cfg-4096")
fa = [x * flops_per_token(2048) / 1e12 for x in wa]
fn = [y * flops_per_token(4096) / 1e12 for y in wn]
r, lo, hi = ratio_ci(fn, fa)
ORACLE["work-per-token"] = {"flops_ratio": r, "tokens_ratio": mean(wa) / mean(wn),
                            "amd_tflops": mean(fa), "nvd_tflops": mean(fn)}

# 19. Inconclusive: MI300X's three runs spread widely (a noisy host); the
#     ratio's interval includes 1.
ia = [15000.0, 4500.0, 10500.0]
inn = [2950.0, 3000.0, 2925.0]
SETS["inconclusive"] = {}
for i, (x, y) in enumerate(zip(ia, inn)):
    SETS["inconclusive"]["amd_%d" % i] = run("amd", "megatron", x)
    SETS["inconclusive"]["nvd_%d" % i] = run("nvd", "megatron", y)
r, lo, hi = ratio_ci(ia, inn)
assert lo < 1 < hi
ORACLE["inconclusive"] = {"ratio": r, "lo": lo, "hi": hi, "runs_needed": runs_needed(ia, inn),
                          "amd_cv": sd(ia) / mean(ia)}


# 20. A straggler: four MI300X runs agree, a fifth is 2.5x slower. Each run
#     records its own median/p10/p90 (as extract writes them); the group's
#     percentiles are those of the pooled measured steps.
def recorded_run(platform, measured, warm_step=30.0, gbs=128, sl=8192, gpus=8):
    series = [warm_step] + measured
    med = pct(measured, 0.5)
    total = gbs * sl / med
    r = run(platform, "megatron", total / gpus, series=series, avg_step=mean(measured))
    r["performance_metrics"].update({"headline_statistic": "median_step_time", "median_step_time_seconds": med,
                                     "p10_step_time_seconds": pct(measured, 0.1),
                                     "p90_step_time_seconds": pct(measured, 0.9)})
    return r


base = [12.0, 12.1, 11.9, 12.2, 11.8, 12.05, 11.95, 12.0, 12.1, 11.9]
strag_runs = [[x * f for x in base] for f in (1.0, 1.004, 0.996, 1.002)] + [[x * 2.5 for x in base]]
SETS["straggler"] = {"amd_%d" % i: recorded_run("amd", s) for i, s in enumerate(strag_runs)}
SETS["straggler"]["nvd"] = run("nvd", "megatron", 8000.0)
pooled = sum(strag_runs, [])
tps = [128 * 8192 / pct(s, 0.5) / 8 for s in strag_runs]
med = pct(tps, 0.5)
mad = pct([abs(x - med) for x in tps], 0.5)
z = [abs(x - med) / (1.4826 * mad) for x in tps]
ORACLE["straggler"] = {"p10": pct(pooled, 0.1), "median": pct(pooled, 0.5), "p90": pct(pooled, 0.9),
                       "mean_of_run_p90": mean([pct(s, 0.9) for s in strag_runs]),
                       "outlier_index": float(max(range(len(z)), key=lambda i: z[i])),
                       "outliers": float(sum(1 for x in z if x > 3.5)), "outlier_z": max(z)}

# 21. Duplicates: the same run written twice (re-indented, keys sorted, a
#     later tool's version string): one run, not two. The H100 side has two
#     real runs with equal throughput but their own losses.
dup = run("amd", "megatron", 9000.0)
dup2 = copy.deepcopy(dup)
dup2["rival_version"] = "test-reserialised"
d_n0 = run("nvd", "megatron", 8000.0)
d_n1 = run("nvd", "megatron", 8000.0, loss=[12.0 - 0.3 * i + 0.001 for i in range(11)])
SETS["duplicates"] = {"amd": dup, "amd_copy": dup2, "nvd_0": d_n0, "nvd_1": d_n1}

# 22. An imported result (no provenance.config): FP8, SL 4096, GBS 128, MBS 1,
#     DP 8: the reproduce command is built from training_config.
imp = run("nvd", "megatron", 16000.0, sl=4096, precision="fp8", cfg="cfg-imp")
imp["training_config"]["train_iters"] = 100
SETS["reproduce-imported"] = {"nvd": imp, "amd": run("amd", "megatron", 15000.0, sl=4096, precision="fp8", cfg="cfg-imp")}
ORACLE["reproduce-imported"] = {"ga": 128 / (1 * 8)}

# 23. A negative step time in the measured steps.
neg = run("amd", "megatron", 9000.0)
neg["step_times"][6] = -0.5
neg["performance_metrics"]["avg_step_time_seconds"] = mean([t for t in neg["step_times"][1:] if t > 0])
SETS["negative-step"] = {"amd": neg, "nvd": run("nvd", "megatron", 8000.0)}

# 24. Equal MFU: a native three-run MI300X group and an old-suite single
#     run 0.1 % faster; H100 on the other side. MI300X at its best is the
#     native group (equal MFU within 0.5 %: more and native runs win).
SETS["old-vs-native"] = {"amd_%d" % i: run("amd", "megatron", x) for i, x in enumerate([8990.0, 9000.0, 9010.0])}
SETS["old-vs-native"]["nvd"] = run("nvd", "megatron", 8000.0)
old_steps = [128 * 8192 / (9009.0 * 8)] * 20
OLD_SUITE = {"train_amd_mega_llama.json": {
    "platform": "amd",
    "gpu_info": {"device_count": 8, "device_name": "AMD Instinct MI300X", "total_memory_gb": 206.0},
    "timestamp": "2025-06-01T10:00:00",
    "parallelism_config": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1,
                           "data_parallel_size": 8},
    "training_config": {"max_steps": 20, "global_batch_size": 128, "micro_batch_size": 1,
                        "sequence_length": 8192, "num_gpus": 8},
    "performance_metrics": {"avg_step_time_seconds": old_steps[0], "tokens_per_second": 9009.0 * 8,
                            "tokens_per_second_per_gpu": 9009.0},
    "step_times": old_steps,
    "loss_values": [11.0 - 0.1 * i for i in range(20)],
}}

# 25. A ratio known to 4 digits: its interval must not print as "1.2–1.2".
SETS["narrow-ci"] = {}
for i, (x, y) in enumerate(zip([10800.0, 10800.6, 10799.4], [9000.0, 9000.5, 8999.5])):
    SETS["narrow-ci"]["amd_%d" % i] = run("amd", "megatron", x)
    SETS["narrow-ci"]["nvd_%d" % i] = run("nvd", "megatron", y)
r, lo, hi = ratio_ci([10800.0, 10800.6, 10799.4], [9000.0, 9000.5, 8999.5])
ORACLE["narrow-ci"] = {"ratio": r, "lo": lo, "hi": hi}


# 26. Loss step by step between frameworks that read the same batches:
#     Megatron-LM and Primus on MI300X, each with its own config fingerprint,
#     12 logged steps (warm-up 1), SEED and sample order recorded. One folder
#     per case under step-parity/; step_parity_test.go works out every
#     expected figure by hand from these curves.
#     A BLAKE3 digest is one hex digit 64 times, "a" for the common order.
def step_run(platform, framework, loss, seed=1234, digest="a", tps=9000.0, gpus=8):
    r = run(platform, framework, tps, steps=len(loss), loss=loss, cfg="cfg-" + framework, gpus=gpus)
    r["provenance"] = {"config": {"SEED": str(seed)}}
    if digest is not None:
        sha = ("%x" % (15 - int(digest, 16))) * 64  # the same bytes by SHA-256: another digit
        r["sample_order"] = {"order": "megatron-gptdataset", "seed": seed, "sequence_length": 8192,
                             "samples": len(loss) * 128, "digest_samples": 8 * 128, "blake3": digest * 64,
                             "sha256": sha, "framework_sha256": sha}
    return r


STEP_A = [10.0 - 0.5 * i for i in range(12)]  # steps 1-12: 10.0, 9.5, ..., 4.5
# Apart at step 3 only (0.6), then 0.5 apart from step 7 to the end.
STEP_PARTED = [10.0, 9.5, 9.6, 8.5, 8.0, 7.5, 7.5, 7.0, 6.5, 6.0, 5.5, 5.0]
# One step 1.0 apart (step 5), and 0.05 apart at the last step.
STEP_NOISY = [10.0, 9.5, 9.0, 8.5, 9.0, 7.5, 7.0, 6.5, 6.0, 5.5, 5.0, 4.55]
# 0.2 above at every step: within 5 % at each, but the tail means differ by more than 2 %.
STEP_OFFSET = [x + 0.2 for x in STEP_A]
SETS["step-parity/identical"] = {"mega": step_run("amd", "megatron", STEP_A),
                                 "prim": step_run("amd", "primus", STEP_A, tps=9500.0)}
SETS["step-parity/parted"] = {"mega": step_run("amd", "megatron", STEP_A),
                              "prim": step_run("amd", "primus", STEP_PARTED, tps=9500.0)}
SETS["step-parity/noisy-step"] = {"mega": step_run("amd", "megatron", STEP_A),
                                  "prim": step_run("amd", "primus", STEP_NOISY, tps=9500.0)}
SETS["step-parity/offset"] = {"mega": step_run("amd", "megatron", STEP_A),
                              "prim": step_run("amd", "primus", STEP_OFFSET, tps=9500.0)}
# Primus stops after step 8: steps 9-12 have one loss only.
SETS["step-parity/stops-early"] = {"mega": step_run("amd", "megatron", STEP_A),
                                   "prim": step_run("amd", "primus", STEP_A[:8], tps=9500.0)}
SETS["step-parity/other-order"] = {"mega": step_run("amd", "megatron", STEP_A),
                                   "prim": step_run("amd", "primus", STEP_A, digest="b", tps=9500.0)}
SETS["step-parity/no-order"] = {"mega": step_run("amd", "megatron", STEP_A),
                                "prim": step_run("amd", "primus", STEP_A, digest=None, tps=9500.0)}
SETS["step-parity/other-seed"] = {"mega": step_run("amd", "megatron", STEP_A),
                                  "prim": step_run("amd", "primus", STEP_A, seed=42, digest="c", tps=9500.0)}
# An existing pair kind (identical configuration across platforms) that
# shares the sample order: its tail-mean verdict gets the step figures beside.
SETS["step-parity/across-platforms"] = {"amd": step_run("amd", "megatron", STEP_A),
                                        "nvd": step_run("nvd", "megatron", STEP_PARTED, tps=8000.0)}
# Configurations of one framework (DP 8 and DP 4): the sample order does not
# depend on DP, so the digest is the same and the steps are compared too.
SETS["step-parity/configs"] = {"dp8": step_run("amd", "megatron", STEP_A),
                               "dp4": step_run("amd", "megatron", STEP_NOISY, tps=9500.0, gpus=4)}


# 27. Held-out evaluations and time to a target loss (TARGET_LOSS 3.3): Megatron on MI300X twice
#     (evaluated every 1,024 samples, at GBS 128 every 8 steps), Megatron on H100 with held-out
#     losses within 1% of MI300X's first run at every evaluation, Primus on MI300X that never
#     reaches the target, and a TorchTitan run with no evaluation. Crossings are linear in loss
#     between the last evaluation above the target and the first at or below it.
HELD_TARGET = 3.3


def held_run(platform, framework, losses, *, every=1024, step_s=10.0, eval_s=5.0, tps=9000.0, clock=True):
    r = run(platform, framework, tps, cfg="cfg-" + framework + "-held")
    evals = []
    for i, loss in enumerate(losses):
        samples = every * (i + 1)
        train = samples / 128 * step_s
        evals.append({"set": "validation", "step": samples // 128, "samples_seen": samples,
                      "tokens_seen": samples * 8192, "loss": loss, "perplexity": math.exp(loss),
                      "wall_seconds": train + eval_s * (i + 1) if clock else None, "train_seconds": train})
    evals.append({"set": "test", "step": evals[-1]["step"], "samples_seen": evals[-1]["samples_seen"],
                  "tokens_seen": evals[-1]["tokens_seen"], "loss": 1.0, "perplexity": math.e,
                  "wall_seconds": None, "train_seconds": None})
    r["evaluations"] = evals
    return r


def held_cross(r, target):
    ev = [e for e in r["evaluations"] if e["set"] == "validation"]
    for i, e in enumerate(ev):
        if e["loss"] <= target:
            if i == 0:
                return e["samples_seen"], e["wall_seconds"], e["train_seconds"]
            p = ev[i - 1]
            f = (p["loss"] - target) / (p["loss"] - e["loss"])
            at = lambda a, b: None if a is None or b is None else a + f * (b - a)
            return at(p["samples_seen"], e["samples_seen"]), at(p["wall_seconds"], e["wall_seconds"]), at(p["train_seconds"], e["train_seconds"])
    return None


HELD = {
    "amd_mega_1": held_run("amd", "megatron", [6.0, 4.5, 3.6, 3.2, 3.0]),
    "amd_mega_2": held_run("amd", "megatron", [6.1, 4.6, 3.5, 3.25, 3.05], step_s=10.4, tps=8900.0),
    "nvd_mega": held_run("nvd", "megatron", [6.02, 4.51, 3.61, 3.21, 3.01], step_s=9.0, tps=10000.0),
    "amd_prim": held_run("amd", "primus", [6.5, 5.0, 4.2, 3.9, 3.7], tps=9500.0, clock=False),
    "amd_titan": run("amd", "torchtitan", 9100.0, cfg="cfg-torchtitan-held"),
}
SETS["held-out"] = HELD
for name in ("amd_mega_1", "amd_mega_2", "nvd_mega"):
    s_, w_, t_ = held_cross(HELD[name], HELD_TARGET)
    ORACLE.setdefault("held-out", {}).update({name + "_samples": s_, name + "_wall": w_, name + "_train": t_})
mega = [held_cross(HELD[n], HELD_TARGET) for n in ("amd_mega_1", "amd_mega_2")]
for k, idx in (("samples", 0), ("wall", 1), ("train", 2)):
    xs = [m[idx] for m in mega]
    ORACLE["held-out"]["amd_mega_mean_" + k] = mean(xs)
    ORACLE["held-out"]["amd_mega_half_" + k] = t_q975(1) * sd(xs) / math.sqrt(2)
a_ = [e["loss"] for e in HELD["amd_mega_1"]["evaluations"] if e["set"] == "validation"]
n_ = [e["loss"] for e in HELD["nvd_mega"]["evaluations"] if e["set"] == "validation"]
ORACLE["held-out"]["same_max_rel"] = max(abs(b - a) / ((abs(a) + abs(b)) / 2) for a, b in zip(a_, n_))


def main():
    for name, files in SETS.items():
        d = os.path.join(HERE, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        for fn, r in files.items():
            with open(os.path.join(d, fn + ".json"), "w") as f:
                json.dump(r, f, indent=1)
                f.write("\n")
    for fn, doc in OLD_SUITE.items():
        with open(os.path.join(HERE, "old-vs-native", fn), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    with open(os.path.join(HERE, "oracle.json"), "w") as f:
        json.dump(ORACLE, f, indent=1, sort_keys=True)
        f.write("\n")


main()
