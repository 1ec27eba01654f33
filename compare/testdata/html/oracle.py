#!/usr/bin/env python3
"""Expected figures of the HTML report test, computed from the result JSON
files with the Python standard library only (no Rival code).

Groups runs by config_fingerprint; per group: the number of runs, the mean
and sample standard deviation of tokens/s/GPU and the number of
data-parallel processes; the ratio of the faster group's mean to the slower's.
Run from this folder: python3 oracle.py > expected.json
"""
import glob, json, statistics

groups = {}
for path in sorted(glob.glob("train_*.json")):
    r = json.load(open(path))
    g = groups.setdefault(r["config_fingerprint"], {"tps": [], "dp": r["parallelism_config"]["data_parallel"], "sources": []})
    g["tps"].append(r["performance_metrics"]["tokens_per_second_per_gpu"])
    g["sources"].append(path)
out = []
for fp, g in groups.items():
    out.append({"config_fingerprint": fp, "dp": g["dp"], "n": len(g["tps"]),
                "mean": statistics.mean(g["tps"]), "sd": statistics.stdev(g["tps"]), "sources": g["sources"]})
out.sort(key=lambda g: -g["mean"])
print(json.dumps({"groups": out, "ratio": out[0]["mean"] / out[1]["mean"]}, indent=2))
