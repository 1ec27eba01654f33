#!/usr/bin/env python3
"""Writes compare's test inputs (results/) and the values the Go code must find
(expected.json), computed here independently with the Python standard library
only: the FLOP formula from the model constants, Student's t quantile by
numerical integration of the density (the Go code uses the incomplete beta
continued fraction), the delta-method speedup interval and the loss gap.

Run from this folder:  python3 gen.py
"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results")

# Model constants (config.json of each model); Megatron's causal dense count.
MODELS = {
    "llama": dict(display="Llama 3.1 8B", L=32, h=4096, f=14336, heads=32, kv=8, V=128256, params=8030261248),
    "qwen": dict(display="Qwen 2.5 7B", L=28, h=3584, f=18944, heads=28, kv=4, V=152064, params=7615616512),
    "mistral": dict(display="Mistral 7B v0.1", L=32, h=4096, f=14336, heads=32, kv=8, V=32000, params=7241732096),
}
PEAK = {("H100 SXM", "bf16"): 989.4, ("H100 SXM", "fp8"): 1978.9, ("MI300X", "bf16"): 1307.4, ("MI300X", "fp8"): 2614.9}
TDP = {"H100 SXM": 700.0, "MI300X": 750.0}
# What the devices expose (nvidia-smi and amd-smi captures in hw/testdata): HBM is binary.
MEM_MIB = {"H100 SXM": 81559, "MI300X": 196592}
PRICE = {"H100 SXM": 2.99, "MI300X": 1.85}


def flops_per_token(m, s):
    mm = MODELS[m]
    hd = mm["h"] // mm["heads"]
    q, kv = mm["heads"] * hd, mm["kv"] * hd
    per_layer = mm["h"] * (q + 2 * kv) + q * s + q * mm["h"] + 3 * mm["h"] * mm["f"]
    return 6 * (mm["L"] * per_layer + mm["h"] * mm["V"])


def t_pdf(x, df):
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    return c * (1 + x * x / df) ** (-(df + 1) / 2)


def t_cdf(x, df, n=20000):
    # composite Simpson on [0, x]
    h = x / n
    s = t_pdf(0, df) + t_pdf(x, df)
    for i in range(1, n):
        s += (4 if i % 2 else 2) * t_pdf(i * h, df)
    return 0.5 + s * h / 3


def t_q975(df):
    lo, hi = 0.0, 20.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < 0.975:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mean(xs):
    return sum(xs) / len(xs)


def sd(xs):
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def pct(sorted_xs, q):
    pos = q * (len(sorted_xs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (pos - lo) * (sorted_xs[hi] - sorted_xs[lo])


DELTAS = [-0.05, 0.05, -0.03, 0.03, -0.02, 0.02, -0.01, 0.01, 0.0, 0.0]


def rival_result(platform, gpu, framework, model, precision, avg, gbs=128, sl=8192, gpus=8,
                 dataset="bc", dfp="ds-bc-1", cfg="cfg-llama-1", loss_scale=1.0, seed="42",
                 fw_tflops=None, alloc=60000.0, reserved=70000.0, power=None, tps_override=None):
    mm = MODELS[model]
    steps = [avg * 2.5] + [avg + d for d in DELTAS]  # one warm-up step, then 10 measured
    measured = sorted(steps[1:])
    tps = gbs * sl / avg if tps_override is None else tps_override
    fpt = flops_per_token(model, sl)
    tf = fpt * (tps / gpus) / 1e12
    loss = [round((12.0 - 0.3 * i) * (loss_scale if i > 0 else 1.0), 6) for i in range(len(steps))]
    r = {
        "schema_version": "1.0", "rival_version": "test", "platform": platform,
        "hardware_fingerprint": "hw-" + platform, "image_digest": "sha256:img-" + platform,
        "config_fingerprint": cfg, "tokenizer_fingerprint": "tok-" + model,
        "framework": {"name": framework, "version": framework + "-1.0", "requested": None},
        "model": {"name": model, "display_name": mm["display"], "proxy": False,
                  "parameter_count": mm["params"], "parameter_count_exact": True},
        "dataset": {"name": dataset, "fingerprint": dfp},
        "gpu_info": {"device_count": gpus, "device_name": gpu, "spec_model": gpu,
                     "memory_per_gpu_mib": MEM_MIB[gpu], "peak_tflops_per_gpu_dense": PEAK[(gpu, precision)],
                     "tdp_watts": TDP[gpu]},
        "training_config": {"num_gpus": gpus, "global_batch_size": gbs, "micro_batch_size": 1,
                            "sequence_length": sl, "precision": precision, "precision_assumed": False,
                            "train_iters": len(steps), "steps_logged": len(steps)},
        "parallelism_config": {"tensor_parallel": 1, "pipeline_parallel": 1, "context_parallel": 1, "data_parallel": gpus},
        "warmup_steps_excluded": 1,
        "performance_metrics": {
            "measured_steps": 10, "step_time_source": "log", "avg_step_time_seconds": avg,
            "median_step_time_seconds": pct(measured, 0.5), "p10_step_time_seconds": pct(measured, 0.1),
            "p90_step_time_seconds": pct(measured, 0.9), "min_step_time_seconds": measured[0],
            "max_step_time_seconds": measured[-1], "std_step_time_seconds": sd(measured),
            "steps_per_second": 1 / avg, "tokens_per_step": gbs * sl, "tokens_per_second": tps,
            "tokens_per_second_per_gpu": tps / gpus, "model_flops_per_token": fpt, "tflops_per_gpu": tf,
            "mfu_percent": 100 * tf / PEAK[(gpu, precision)],
            "framework_reported_tflops_per_gpu": fw_tflops, "framework_reported_tokens_per_second_per_gpu": None,
            "framework_reported_mfu_percent": None},
        "memory_metrics": {"peak_allocated_mib": alloc, "peak_reserved_mib": reserved, "peak_device_used_mib": None,
                           "device_total_mib": None, "peak_used_fraction": None},
        "step_numbers": list(range(1, len(steps) + 1)), "step_times": steps, "loss_values": loss,
        "learning_rates": [3e-4] * len(steps), "grad_norms": [1.0] * len(steps),
        "log": {"source": "train.log", "framework_detected": framework, "rank": 7, "lines": 100, "cut_lines": 0,
                "long_lines": 0, "duplicate_steps": 0, "other_rank_lines": 0, "non_finite_values": 0,
                "skipped_iterations": 0, "nan_iterations": 0},
        "problems": [],
    }
    if power is not None:
        r["power_metrics"] = {"source": "nvidia-smi" if platform == "nvd" else "amd-smi", "samples": 50,
                              "interval_seconds": 1.0, "avg_power_watts_per_gpu": power,
                              "max_power_watts_per_gpu": power + 20, "max_memory_used_mib": reserved + 1000}
    return r


def write(name, doc, raw=None):
    with open(os.path.join(OUT, name), "w") as f:
        if raw is not None:
            f.write(raw)
        else:
            json.dump(doc, f, indent=1)  # Python writes NaN literals as NaN
            f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    exp = {"groups": {}, "speedups": [], "loss_parity": []}

    # Llama: 3 H100 NeMo runs vs 5 MI300X Primus runs, identical configuration.
    nvd_llama = [14.50, 14.62, 14.41]
    amd_llama = [11.20, 11.05, 11.31, 11.12, 10.98]
    for i, t in enumerate(nvd_llama):
        write(f"nvd_nemo_llama_{i}.json", rival_result("nvd", "H100 SXM", "nemo", "llama", "bf16", t, fw_tflops=430.0))
    for i, t in enumerate(amd_llama):
        # sampled power on the AMD runs: 700, 710, 720, ... W
        write(f"amd_primus_llama_{i}.json", rival_result("amd", "MI300X", "primus", "llama", "bf16", t,
                                                          loss_scale=1.01, alloc=90000.0, reserved=120000.0,
                                                          power=700.0 + 10 * i, fw_tflops=610.0))
    # Qwen FP8: one run each, different config fingerprints (each platform at its best).
    write("nvd_megatron_qwen.json", rival_result("nvd", "H100 SXM", "megatron", "qwen", "fp8", 9.0, cfg="cfg-qwen-nvd", dfp="ds-bc-q"))
    write("amd_primus_qwen.json", rival_result("amd", "MI300X", "primus", "qwen", "fp8", 7.5, cfg="cfg-qwen-amd", dfp="ds-bc-q", gbs=256))

    # Bad inputs.
    bad = rival_result("amd", "MI300X", "primus", "llama", "bf16", 3.2768, cfg="cfg-bad")
    write("amd_primus_llama_mfu_too_high.json", bad)
    inc = rival_result("nvd", "H100 SXM", "nemo", "llama", "bf16", 14.5, tps_override=90000.0, cfg="cfg-bad2")
    write("nvd_nemo_llama_inconsistent.json", inc)
    nan = rival_result("nvd", "H100 SXM", "nemo", "llama", "bf16", 14.5)
    nan["performance_metrics"]["tokens_per_second_per_gpu"] = float("nan")
    write("nvd_nemo_llama_nan_tps.json", nan)
    write("broken.json", None, raw='{"schema_version": "1.0", "platform": "nvd", "performance_metri')
    write("MANIFEST.json", {"files": ["train.log"]})

    # Old suite (numbers from its published H100/MI300X Llama runs, GBS 64, SL 2048), mistral here.
    old_steps_amd = [22.7872] + [2.4298 + d for d in DELTAS] * 2
    old_steps_nvd = [36.89169] + [3.42805 + d for d in DELTAS] * 2
    old = {
        "amd": dict(name="AMD Instinct MI300X", mem=206.14165, avg=2.4298, tps=53943.55669, tpsg=6742.94459, steps=old_steps_amd),
        "nvd": dict(name="NVIDIA H100 80GB HBM3", mem=85.01789, avg=3.42805, tps=38235.11915, tpsg=4779.38989, steps=old_steps_nvd),
    }
    for plat, fw in (("amd", "prim"), ("nvd", "nemo")):
        o = old[plat]
        doc = {
            "platform": plat,
            "gpu_info": {"device_count": 8, "device_name": o["name"], "total_memory_gb": o["mem"], "gpu_cores": 1,
                         "pytorch_version": "2.7.0", "software_stack": "rocm" if plat == "amd" else "nemo", "software_version": "7.1.0"},
            "timestamp": "2026-02-02T15:28:08.851681",
            "parallelism_config": {"strategy_name": "TP1_PP2_SP0", "tensor_model_parallel_size": 1,
                                   "pipeline_model_parallel_size": 2, "data_parallel_size": 4, "gradient_accumulation_steps": 16},
            "training_config": {"max_steps": 21, "global_batch_size": 64, "micro_batch_size": 1, "sequence_length": 2048,
                                "num_gpus": 8, "parallel_strategy": "TP1_PP2_SP0"},
            "performance_metrics": {"total_steps": 21, "total_time_seconds": 100.0, "avg_step_time_seconds": o["avg"],
                                    "min_step_time_seconds": min(o["steps"]), "max_step_time_seconds": max(o["steps"]),
                                    "steps_per_second": 1 / o["avg"], "tokens_per_second": o["tps"],
                                    "tokens_per_second_per_gpu": o["tpsg"], "throughput_per_gpu_core": 1e-5},
            "step_times": o["steps"],
            "loss_values": [11.9 - 0.2 * i for i in range(len(o["steps"]))],
            "learning_rates": [3e-4] * len(o["steps"]),
        }
        if plat == "amd":
            doc["loss_values"][3] = float("nan")  # the old suite wrote NaN for a non-finite loss
        else:
            doc["memory_metrics"] = {"peak_memory_allocated_gb": 36.17082, "avg_memory_allocated_gb": 36.17082}
        write(f"train_{plat}_{fw}_mistral.json", doc)

    # Expected values, computed independently.
    def group(name, model, gpu, prec, avgs, gbs=128, sl=8192, gpus=8, power=None, old_steps=None, old_tpsg=None):
        tpsg = [gbs * sl / a / gpus for a in avgs] if old_tpsg is None else old_tpsg
        g = {"n": len(tpsg), "tps_mean": mean(tpsg), "step_mean": mean(avgs)}
        if len(tpsg) >= 2:
            g["tps_sd"] = sd(tpsg)
            g["tps_half"] = t_q975(len(tpsg) - 1) * sd(tpsg) / math.sqrt(len(tpsg))
        if len(tpsg) >= 3:  # olympic mean: drop the fastest and the slowest
            s = sorted(tpsg)
            g["tps_mlperf"] = mean(s[1:-1])
        if old_steps is not None:
            pooled = sorted(old_steps[max(1, len(old_steps) // 10):])
        else:
            pooled = sorted(sum(([a + d for d in DELTAS] for a in avgs), []))
        g["step_median"], g["step_p10"], g["step_p90"] = pct(pooled, 0.5), pct(pooled, 0.1), pct(pooled, 0.9)
        tf = [flops_per_token(model, sl) * x / 1e12 for x in tpsg]
        g["tflops"] = mean(tf)
        g["mfu"] = mean([100 * x / PEAK[(gpu, prec)] for x in tf])
        watts = mean(power) if power else TDP[gpu]
        g["tokens_per_wh"] = g["tps_mean"] * 3600 / watts
        gpu_hours = 1e12 / (g["tps_mean"] * 3600)
        g["cost_per_1t"] = gpu_hours * PRICE[gpu]
        g["days_1t"] = gpu_hours / gpus / 24
        exp["groups"][name] = g
        return g

    nv = group("H100 NeMo|Llama 3.1 8B", "llama", "H100 SXM", "bf16", nvd_llama)
    am = group("MI300X Primus|Llama 3.1 8B", "llama", "MI300X", "bf16", amd_llama, power=[700.0 + 10 * i for i in range(5)])
    group("H100 Megatron-LM|Qwen 2.5 7B", "qwen", "H100 SXM", "fp8", [9.0])
    group("MI300X Primus|Qwen 2.5 7B", "qwen", "MI300X", "fp8", [7.5], gbs=256)
    group("H100 NeMo|Mistral 7B v0.1", "mistral", "H100 SXM", "bf16", [3.42805], gbs=64, sl=2048,
          old_steps=old_steps_nvd, old_tpsg=[4779.38989])
    group("MI300X Primus|Mistral 7B v0.1", "mistral", "MI300X", "bf16", [2.4298], gbs=64, sl=2048,
          old_steps=old_steps_amd, old_tpsg=[6742.94459])

    # Speedup MI300X/H100 on Llama: ratio of means, delta method, Welch df.
    a_vals = [128 * 8192 / a / 8 for a in amd_llama]
    b_vals = [128 * 8192 / a / 8 for a in nvd_llama]
    ma, mb = mean(a_vals), mean(b_vals)
    va = sd(a_vals) ** 2 / (len(a_vals) * ma * ma)
    vb = sd(b_vals) ** 2 / (len(b_vals) * mb * mb)
    df = (va + vb) ** 2 / (va * va / (len(a_vals) - 1) + vb * vb / (len(b_vals) - 1))
    r = ma / mb
    half = t_q975(df) * r * math.sqrt(va + vb)
    exp["speedups"].append({"model": "Llama 3.1 8B", "faster": "MI300X Primus", "slower": "H100 NeMo",
                            "ratio": r, "half": half, "df": df, "identical": True})
    q_amd = 256 * 8192 / 7.5 / 8
    q_nvd = 128 * 8192 / 9.0 / 8
    exp["speedups"].append({"model": "Qwen 2.5 7B", "faster": "MI300X Primus", "slower": "H100 Megatron-LM",
                            "ratio": q_amd / q_nvd, "identical": False})
    exp["speedups"].append({"model": "Mistral 7B v0.1", "faster": "MI300X Primus", "slower": "H100 NeMo",
                            "ratio": 6742.94459 / 4779.38989, "identical": False})

    # Loss parity (Llama): first runs; loss_amd = loss_nvd × 1.01 after step 1.
    la = [(12.0 - 0.3 * i) * (1.01 if i > 0 else 1.0) for i in range(11)]
    lb = [12.0 - 0.3 * i for i in range(11)]
    warm = max(1, 11 // 10)
    gaps = [abs(round(x, 6) - round(y, 6)) / ((abs(round(x, 6)) + abs(round(y, 6))) / 2) for x, y in zip(la[warm:], lb[warm:])]
    # Verdict on the mean over the last 10 % of the common steps (at least one).
    tail = max(1, round(0.10 * 11))
    ma = sum(round(x, 6) for x in la[-tail:]) / tail
    mb = sum(round(y, 6) for y in lb[-tail:]) / tail
    tail_gap = abs(ma - mb) / ((ma + mb) / 2)
    exp["loss_parity"].append({"model": "Llama 3.1 8B", "max_gap": max(gaps), "tail_gap": tail_gap, "steps": len(gaps),
                               "diverged": tail_gap > 0.02})
    exp["errors"] = sorted([
        ["amd_primus_llama_mfu_too_high.json", "mfu_above_100_percent"],
        ["nvd_nemo_llama_inconsistent.json", "tokens_per_second_inconsistent"],
    ])
    exp["skipped"] = sorted([["broken.json", "invalid"], ["MANIFEST.json", "ignored"], ["nvd_nemo_llama_nan_tps.json", "invalid"]])
    exp["t_quantiles"] = {str(d): t_q975(d) for d in (1, 2, 4, 9, 30)}
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(exp, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
