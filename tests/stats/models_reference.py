#!/usr/bin/python3
"""Reference values for tests/stats/compare_test.cc and factors_test.cc from
SciPy and statsmodels (Debian python3-scipy, python3-statsmodels): reads the
samples and grids the C++ tests drew (JSON), writes what the libraries say
about them (JSON).
   models_reference.py IN.json OUT.json

compare: P(A > B) as scipy.stats.mannwhitneyu's U / (na nb), the Welch
interval from scipy.stats.t, the runs needed per side from statsmodels'
TTestIndPower (equal SDs) and from scipy.stats.nct with the definition of
compare.h (unequal SDs).
factors: the ANOVA table of an OLS fit (statsmodels anova_lm, type I; the
sums of squares of a balanced design do not depend on the order), and the
REML fit of statsmodels' MixedLM (crossed random effects as variance
components of one group).
"""
import json
import math
import sys
import warnings

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.power import TTestIndPower


def t_quantile(p, df):
    """stats.t.ppf, polished by one Newton step on stats.t.cdf: SciPy 1.10's
    ppf is off by up to 4e-9 relative (df = 40: 2.0210753830 for
    2.0210753903), its cdf is not."""
    q = stats.t.ppf(p, df)
    return q - (stats.t.cdf(q, df) - p) / stats.t.pdf(q, df)


def welch_power(delta, sa, sb, n, alpha):
    va, vb = sa * sa, sb * sb
    df = (n - 1) * (va + vb) ** 2 / (va * va + vb * vb)
    nc = delta / math.sqrt((va + vb) / n)
    t = stats.t.isf(alpha / 2, df)
    return stats.nct.sf(t, df, nc) + stats.nct.cdf(-t, df, nc)


def runs_needed(delta, sa, sb, alpha, power):
    n = 2
    while welch_power(delta, sa, sb, n, alpha) < power:
        n += 1
    return n


def compare(c):
    a, b = np.asarray(c["a"]), np.asarray(c["b"])
    na, nb = len(a), len(b)
    u = stats.mannwhitneyu(a, b, alternative="two-sided").statistic
    va, vb = a.var(ddof=1) / na, b.var(ddof=1) / nb
    df = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1))
    d = a.mean() - b.mean()
    h = t_quantile(0.975, df) * math.sqrt(va + vb)
    out = {"p_improvement": u / (na * nb), "diff": d, "welch_df": df,
           "welch_low": d - h, "welch_high": d + h}
    delta, sd, alpha, power = c["delta"], c["sd"], c["alpha"], c["power"]
    solver = TTestIndPower()
    n = solver.solve_power(effect_size=delta / sd, nobs1=None, alpha=alpha, power=power,
                           ratio=1.0, alternative="two-sided")
    out["sm_nobs"] = n
    out["sm_runs"] = int(math.ceil(n - 1e-9))
    out["sm_power"] = [solver.power(effect_size=delta / sd, nobs1=k, alpha=alpha, ratio=1.0,
                                    alternative="two-sided") for k in c["power_at"]]
    sa, sb = c["sd_a"], c["sd_b"]
    out["nct_runs"] = runs_needed(delta, sa, sb, alpha, power)
    out["nct_power"] = [welch_power(delta, sa, sb, k, alpha) for k in c["power_at"]]
    return out


def column(c, f):
    """A safe column name for factor f (a factor called C would be patsy's C)."""
    return "x%d" % list(c["columns"]).index(f)


def frame(c):
    df = pd.DataFrame({"y": c["y"]})
    for f, col in c["columns"].items():
        df[column(c, f)] = [str(v) for v in col]
    return df


def term_formula(c, t):
    return ":".join("C(%s)" % column(c, f) for f in t["factors"])


def anova_table(c, df):
    rhs = " + ".join(term_formula(c, t) for t in c["terms"])
    fit = smf.ols("y ~ " + rhs, data=df).fit()
    table = anova_lm(fit, typ=1)
    out = []
    for t in c["terms"]:
        row = table.loc[term_formula(c, t)]
        out.append({"name": t["name"], "ss": row["sum_sq"], "df": row["df"],
                    "ms": row["sum_sq"] / row["df"]})
    row = table.loc["Residual"]
    out.append({"name": "residual", "ss": row["sum_sq"], "df": row["df"],
                "ms": row["sum_sq"] / row["df"]})
    return out


def mixedlm(c, df):
    fixed = [term_formula(c, t) for t in c["terms"] if t["fixed"]]
    random = [t for t in c["terms"] if not t["fixed"]]
    df["group"] = 1
    vc = {t["name"]: "0 + " + term_formula(c, t) for t in random}
    model = smf.mixedlm("y ~ " + " + ".join(["1"] + fixed), df, groups="group",
                        re_formula="0", vc_formula=vc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True, method="bfgs", gtol=1e-12, maxiter=5000)
    names = list(model.exog_vc.names)
    comps = {n: float(v) for n, v in zip(names, fit.vcomp)}
    comps["residual"] = float(fit.scale)
    return {"components": comps, "loglik": float(fit.llf), "converged": bool(fit.converged)}


def factors(c):
    df = frame(c)
    out = {"mixedlm": mixedlm(c, df)}
    if c["balanced"]:
        out["anova"] = anova_table(c, frame(c))
    return out


def main():
    np.seterr(all="ignore")  # solve_power probes sizes where nct is undefined
    cases = json.load(open(sys.argv[1]))
    out = {"compare": [compare(c) for c in cases.get("compare", [])],
           "factors": [factors(c) for c in cases.get("factors", [])]}
    json.dump(out, open(sys.argv[2], "w"))


if __name__ == "__main__":
    main()
