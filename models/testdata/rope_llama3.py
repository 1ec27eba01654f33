#!/usr/bin/env python3
"""Writes rope_llama3.tsv: Llama 3 scaled RoPE inverse frequencies, computed with mpmath at 50
digits from the definition (Llama 3.1 config.json rope_scaling: factor 8, low_freq_factor 1,
high_freq_factor 4, original_max_position_embeddings 8192), for the oracle of models' Frequencies.

    python3 models/testdata/rope_llama3.py > models/testdata/rope_llama3.tsv
"""
import mpmath

mpmath.mp.dps = 50
FACTOR, LOW, HIGH, ORIG = 8, 1, 4, 8192
print("theta\thead_dim\tband\tplain\tscaled")
for theta, dim in ((500000, 128), (500000, 64), (10000, 128)):
    for i in range(dim // 2):
        f = mpmath.mpf(theta) ** (-mpmath.mpf(2 * i) / dim)
        wavelen = 2 * mpmath.pi / f
        if wavelen < mpmath.mpf(ORIG) / HIGH:
            s = f
        elif wavelen > mpmath.mpf(ORIG) / LOW:
            s = f / FACTOR
        else:
            smooth = (ORIG / wavelen - LOW) / (HIGH - LOW)
            s = (1 - smooth) * f / FACTOR + smooth * f
        print("%d\t%d\t%d\t%s\t%s" % (theta, dim, i, mpmath.nstr(f, 20), mpmath.nstr(s, 20)))
