#!/usr/bin/env python3
"""Writes tquantile.tsv: Student's t quantiles at 40 significant digits, the oracle of
compare's tQuantile (TestTQuantileOracle). Needs only mpmath:

    python3 compare/testdata/tquantile.py > compare/testdata/tquantile.tsv

The quantile t of probability p > 1/2 solves  1 - p = I(df/(df+t^2); df/2, 1/2) / 2,
with I the regularized incomplete beta function; t(1-p) = -t(p).
"""
import mpmath as mp

mp.mp.dps = 60
DFS = ["0.5", "1", "1.37", "2", "2.5", "3", "4.5", "7", "9.9", "29", "120", "999", "1000",
       "54321", "1000000", "9900000"]
PS = ["0.51", "0.6", "0.9", "0.95", "0.975", "0.995", "0.9995", "0.3", "0.025"]


def quantile(p, df):
    if p < mp.mpf("0.5"):
        return -quantile(1 - p, df)
    tail = 1 - p
    upper = lambda t: mp.betainc(df / 2, mp.mpf("0.5"), 0, df / (df + t * t), regularized=True) / 2
    lo, hi = mp.mpf(0), mp.mpf(1)
    while upper(hi) > tail:
        lo, hi = hi, 2 * hi
    for _ in range(220):
        mid = (lo + hi) / 2
        if upper(mid) > tail:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


print("df\tp\tt")
for df in DFS:
    for p in PS:
        print(f"{df}\t{p}\t{mp.nstr(quantile(mp.mpf(p), mp.mpf(df)), 40)}")
