#!/usr/bin/env python3
"""An independent reading of compare's History and anchor rules (docs/compare.md,
"History" and "Published anchors"), written from the documentation with numpy,
not from the Go code.

    python3 oracle.py [--threshold 0.05] DIR_OR_FILE...

prints, as JSON, every workload measured in more than one batch: its batches
(stack, host, start, runs, mean tokens/s/GPU) and its steps (from, to, kind,
ratio, 95% interval, verdict). The t quantile comes from integrating Student's
density numerically (numpy's trapezoid rule on a fine grid), not from the
incomplete beta function the Go code uses.
"""
import datetime
import json
import math
import os
import sys

import numpy as np

GAP = datetime.timedelta(hours=12)  # HistorySessionGap


def t_quantile_975(df):
    """Solve CDF(t) = 0.975 for Student's t with df degrees of freedom."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)

    def cdf(x):
        xs = np.linspace(0.0, x, 200001)
        ys = c * (1 + xs * xs / df) ** (-(df + 1) / 2)
        return 0.5 + float(np.sum((ys[1:] + ys[:-1]) * np.diff(xs)) / 2)

    lo, hi = 0.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if cdf(mid) < 0.975:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def summary(xs):
    a = np.asarray(xs, dtype=float)
    out = {"n": len(a), "mean": float(a.mean())}
    out["sd"] = float(a.std(ddof=1)) if len(a) > 1 else 0.0
    out["has_ci"] = len(a) > 1 and bool(np.any(a != a[0]))
    if out["has_ci"]:
        half = t_quantile_975(len(a) - 1) * out["sd"] / math.sqrt(len(a))
        out["lo"], out["hi"] = out["mean"] - half, out["mean"] + half
    return out


def ratio(later, earlier):
    """later/earlier with the delta-method interval and Welch df."""
    r = later["mean"] / earlier["mean"]
    out = {"ratio": r, "has_ci": False}
    if later["n"] < 2 or earlier["n"] < 2:
        return out
    va = later["sd"] ** 2 / (later["n"] * later["mean"] ** 2)
    vb = earlier["sd"] ** 2 / (earlier["n"] * earlier["mean"] ** 2)
    if va + vb == 0:
        return out
    df = (va + vb) ** 2 / (va ** 2 / (later["n"] - 1) + vb ** 2 / (earlier["n"] - 1))
    half = t_quantile_975(df) * abs(r) * math.sqrt(va + vb)
    out.update(has_ci=True, lo=r - half, hi=r + half, df=df)
    return out


def verdict(rt, th):
    if not rt["has_ci"]:
        return "inconclusive"
    if rt["hi"] < 1 and rt["ratio"] < 1 - th:
        return "regression"
    if rt["lo"] > 1 and rt["ratio"] > 1 + th:
        return "improvement"
    if rt["lo"] >= 1 - th and rt["hi"] <= 1 + th:
        return "no change"
    return "inconclusive"


def load(paths):
    docs = []
    for p in paths:
        files = []
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in names if n.endswith(".json")]
        else:
            files.append(p)
        for f in sorted(files):
            with open(f) as fh:
                d = json.load(fh)
            if "schema_version" in d and "performance_metrics" in d:
                d["_source"] = f
                docs.append(d)
    # byte-identical copies count once: same content, same run
    seen, out = set(), []
    for d in docs:
        key = json.dumps({k: v for k, v in d.items() if k != "_source"}, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def when(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")


def workload(d):
    tc, pc = d["training_config"], d["parallelism_config"]
    gpu = (d.get("gpu_info") or {}).get("spec_model") or (d.get("gpu_info") or {}).get("device_name") or "cpu"
    return json.dumps([d.get("platform"), gpu, d["framework"]["name"], d["model"]["name"],
                       d["dataset"]["name"], d["dataset"]["fingerprint"], d.get("config_fingerprint"),
                       tc.get("precision"), tc.get("sequence_length"), tc.get("global_batch_size"),
                       tc.get("micro_batch_size"), pc.get("tensor_parallel"), pc.get("pipeline_parallel"),
                       pc.get("context_parallel"), pc.get("data_parallel"), tc.get("num_gpus")])


def host(d):
    p = d.get("provenance") or {}
    if p.get("node_list"):
        return ",".join(sorted(p["node_list"]))
    return p.get("host") or "host not recorded"


def software(d):
    return [d["framework"]["name"], d["framework"].get("version"), d.get("image_digest")]


def history(docs, th):
    series = {}
    for d in docs:
        p = d.get("provenance") or {}
        if not p.get("started_at"):
            continue
        series.setdefault(workload(d), []).append(d)
    out = []
    for key, runs in sorted(series.items()):
        runs.sort(key=lambda d: (when(d["provenance"]["started_at"]), d["_source"]))
        batches, last = [], {}
        for d in runs:
            b_key = json.dumps([software(d), d.get("hardware_fingerprint"), host(d)])
            start = when(d["provenance"]["started_at"])
            end = when(d["provenance"].get("finished_at") or d["provenance"]["started_at"])
            b = last.get(b_key)
            if b is None or start - b["end"] > GAP:
                b = {"software": software(d), "hw": d.get("hardware_fingerprint"), "host": host(d),
                     "start": start, "end": end, "tps": [], "sources": []}
                last[b_key] = b
                batches.append(b)
            b["tps"].append(d["performance_metrics"]["tokens_per_second_per_gpu"])
            b["sources"].append(d["_source"])
            b["end"] = max(b["end"], end)
        if len(batches) < 2:
            continue
        batches.sort(key=lambda b: b["start"])
        steps = []
        for i in range(1, len(batches)):
            to = batches[i]
            ref = i - 1
            for j in range(i - 1, -1, -1):
                if batches[j]["host"] == to["host"]:
                    ref = j
                    break
            fr = batches[ref]
            same_host = fr["host"] == to["host"] and fr["host"] != "host not recorded"
            changed = fr["software"] != to["software"] or (same_host and fr["hw"] != to["hw"])
            kind = ("stack" if changed else "date only") if same_host else ("host and stack" if changed else "host")
            rt = ratio(summary(to["tps"]), summary(fr["tps"]))
            steps.append(dict(rt, frm=ref + 1, to=i + 1, kind=kind, verdict=verdict(rt, th)))
        out.append({
            "workload": json.loads(key),
            "batches": [{"host": b["host"], "start": b["start"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "runs": len(b["tps"]), **summary(b["tps"])} for b in batches],
            "steps": steps,
        })
    return out


def anchor_line(docs, published, last_step=False):
    """measured ÷ published for the given results: mean and interval over
    the runs (the published figure is a constant); with last_step, each
    run's figure is GBS × SL / its last step time / GPUs."""
    xs = []
    for d in docs:
        if last_step:
            tc = d["training_config"]
            xs.append(tc["global_batch_size"] * tc["sequence_length"] / d["step_times"][-1] / tc["num_gpus"])
        else:
            xs.append(d["performance_metrics"]["tokens_per_second_per_gpu"])
    s = summary(xs)
    out = {"ratio": s["mean"] / published, "n": s["n"]}
    if s["has_ci"]:
        out["lo"], out["hi"] = s["lo"] / published, s["hi"] / published
    out["accepted"] = s["n"] >= 3 and out["ratio"] >= 0.95 and out.get("lo", 1) >= 0.95
    return out


def main(argv):
    th = 0.05
    if len(argv) > 1 and argv[0] == "--threshold":
        th, argv = float(argv[1]), argv[2:]
    json.dump(history(load(argv), th), sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
