#!/usr/bin/python3
"""Reference values from SciPy for tests/stats: reads the samples the C++
test drew (JSON), writes what scipy.stats says about them (JSON).
   scipy_reference.py IN.json OUT.json"""
import json
import sys

import numpy as np
from scipy import stats


def summary(x):
    x = np.asarray(x)
    n = len(x)
    sem = stats.sem(x)
    lo, hi = stats.t.interval(0.95, n - 1, loc=x.mean(), scale=sem)
    return {"mean": x.mean(), "var0": x.var(ddof=0), "var1": x.var(ddof=1),
            "sd1": x.std(ddof=1), "sem": sem, "ci_low": lo, "ci_high": hi,
            "cv": stats.variation(x, ddof=1)}


def test(r):
    return {"statistic": float(r[0]), "p": float(r[1])}


def holm(p):
    p = np.asarray(p)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adj = np.minimum(1, (m - np.arange(m)) * p[order])
    adj = np.maximum.accumulate(adj)
    out = np.empty(m)
    out[order] = adj
    return out.tolist()


def case(c):
    g = c["groups"]
    a, b = g[0], g[1]
    na, nb = len(a), len(b)
    pooled = ((na - 1) * np.var(a, ddof=1) + (nb - 1) * np.var(b, ddof=1)) / (na + nb - 2)
    d = (np.mean(a) - np.mean(b)) / np.sqrt(pooled)
    ps = [stats.ttest_1samp(x, c["mu"]).pvalue for x in g]
    w = stats.ttest_ind(a, b, equal_var=False)
    return {
        "summary": summary(a),
        "ttest_1samp": test(stats.ttest_1samp(a, c["mu"])),
        "welch": test(w),
        "welch_df": float(w.df) if hasattr(w, "df") else None,
        "f_oneway": test(stats.f_oneway(*g)),
        "kruskal": test(stats.kruskal(*g)),
        "levene_median": test(stats.levene(*g, center="median")),
        "levene_mean": test(stats.levene(*g, center="mean")),
        "shapiro": test(stats.shapiro(a)),
        "cohens_d": d,
        "ranks": stats.rankdata(a).tolist(),
        "pvalues": ps,
        "bonferroni": np.minimum(1, np.asarray(ps) * len(ps)).tolist(),
        "holm": holm(ps),
    }


def main():
    cases = json.load(open(sys.argv[1]))
    json.dump([case(c) for c in cases], open(sys.argv[2], "w"))


if __name__ == "__main__":
    main()
