#!/usr/bin/python3
"""Regenerate tests/data/stats/reference.txt (and the factor-analysis data sets fa2.csv, fa3.csv that
gen_stats_fa.R reads): expected values for tests/core/stats_test.cc and tests/host/stats_lua_test.cc,
computed by numpy 1.24, scipy 1.10 and statsmodels (Debian bookworm's python3-numpy, python3-scipy,
python3-statsmodels). The tests read the committed file; they need no Python.

Usage: /usr/bin/python3 tests/reference/gen_stats.py
       Rscript tests/reference/gen_stats_fa.R          (R psych outputs for the factor analysis)

Truth comes from the libraries: kplab's code is never run here. The bootstrap and the approximate
randomization test are replayed with an independent Python implementation of the generator specified in
core/include/kplab/stats.h (splitmix64-seeded xoshiro256**, 32-bit halves low first, Lemire's bounded
draw; 64 sign bits per word), and the expected intervals are numpy.percentile of the resample means;
small randomization cases are also enumerated exactly (all 2^n sign vectors).

File format (whitespace-separated tokens; '#' starts a comment line):
  case <kind> <name>
  <key> <values...>          one line per key; numbers in Python's round-trip repr, nan as 'nan'
  end
"""

import itertools
import math
import os
import warnings

import numpy as np
import pandas as pd
import scipy
import scipy.stats as st
import statsmodels
from statsmodels.formula.api import ols
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.multitest import multipletests

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "..", "data", "stats")

warnings.simplefilter("ignore")

# ---- the generator of kplab/stats.h: kplab_rng.py, shared with gen_ci.py and gen_meta_eval.py ----

from kplab_rng import Rng  # noqa: E402  (this directory is on sys.path when the script runs)


def boot_indices(n, n_resamples, seed):
    rng = Rng(seed)
    return np.array([[rng.below(n) for _ in range(n)] for _ in range(n_resamples)], dtype=np.int64)


def boot_ci(x, n_resamples, confidence, seed):
    idx = boot_indices(len(x), n_resamples, seed)
    means = np.asarray(x)[idx].mean(axis=1)
    lo, hi = np.percentile(means, [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return lo, hi


def ar_p(d, n_resamples, seed):
    d = np.asarray(d, dtype=float)
    n = len(d)
    rng = Rng(seed)
    obs = d.sum()
    thr = abs(obs) - 1e-9 * np.abs(d).sum()
    hits = 0
    words = (n + 63) // 64
    for _ in range(n_resamples):
        signs = np.empty(n)
        for w in range(words):
            word = rng.next64()
            for i in range(w * 64, min(n, w * 64 + 64)):
                signs[i] = -1.0 if (word >> (i - w * 64)) & 1 else 1.0
        if abs((signs * d).sum()) >= thr:
            hits += 1
    return (1 + hits) / (1 + n_resamples)


def ar_exact(d):
    d = np.asarray(d, dtype=float)
    n = len(d)
    obs = d.sum()
    thr = abs(obs) - 1e-9 * np.abs(d).sum()
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=n)))
    return float(np.mean(np.abs(signs @ d) >= thr))


# ---- output ------------------------------------------------------------------------------------------

lines = []
os.makedirs(OUT_DIR, exist_ok=True)


def fmt(v):
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    return repr(v)


def case(kind, name, **kv):
    lines.append(f"case {kind} {name}")
    for k, v in kv.items():
        if np.ndim(v) == 0:
            v = [v]
        lines.append(k + " " + " ".join(fmt(x) for x in np.ravel(np.asarray(v, dtype=object))))
    lines.append("end")


rs = np.random.RandomState(20240611)

# ---- descriptive -------------------------------------------------------------------------------------

QS = [0.0, 0.1, 0.25, 1 / 3, 0.5, 0.7, 0.75, 0.9, 0.95, 0.975, 1.0]
samples = {
    "one": np.array([3.5]),
    "two": np.array([2.0, -1.0]),
    "odd": np.round(rs.normal(size=11), 4),
    "even_ties": np.array([1.0, 2.0, 2.0, 2.0, 5.0, 7.0, 7.0, 10.0]),
    "big": np.round(rs.exponential(size=301), 4),
}
for name, x in samples.items():
    kv = dict(x=x, q=QS, quantile=np.quantile(x, QS), mean=np.mean(x), median=np.median(x),
              var0=np.var(x, ddof=0), sd0=np.std(x, ddof=0))
    if len(x) > 1:
        kv.update(var1=np.var(x, ddof=1), sd1=np.std(x, ddof=1))
    case("descriptive", name, **kv)
case("ranks", "ties", x=[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5], ranks=st.rankdata([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]))

# ---- correlations ------------------------------------------------------------------------------------


def corr_case(name, x, y):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    kv = dict(x=x, y=y)
    p = st.pearsonr(x, y)
    kv.update(pearson_r=p[0], pearson_p=p[1])
    if len(x) >= 3:
        s = st.spearmanr(x, y)
        kv.update(spearman_r=s[0], spearman_p=s[1])
    k = st.kendalltau(x, y)
    kv.update(kendall_r=k[0], kendall_p=k[1])
    if len(np.unique(x)) == len(x) and len(np.unique(y)) == len(y):
        ke = st.kendalltau(x, y, method="exact")
        kv.update(kendall_exact_p=ke[1])
    ka = st.kendalltau(x, y, method="asymptotic")
    kv.update(kendall_asymptotic_p=ka[1])
    case("corr", name, **kv)


x = rs.normal(size=10)
corr_case("n10", x, 0.6 * x + rs.normal(size=10))
x = rs.normal(size=30)
corr_case("n30_neg", x, -0.3 * x + rs.normal(size=30))
x = rs.normal(size=33)
corr_case("n33_exact", x, 0.2 * x + rs.normal(size=33))
x = rs.normal(size=34)
corr_case("n34_asymptotic", x, 0.2 * x + rs.normal(size=34))
x = np.sort(np.round(rs.normal(size=40), 4))
y = x.copy()
y[[5, 6]] = y[[6, 5]]  # one discordant pair: auto uses the exact p with n > 33
corr_case("n40_one_swap", x, y)
x = rs.randint(0, 5, size=25).astype(float)
corr_case("ties_small", x, np.round(x + rs.normal(size=25), 0))
x = rs.randint(0, 20, size=300).astype(float)
corr_case("ties_n300", x, rs.randint(0, 7, size=300) + 0.1 * x)
x = np.round(rs.normal(size=2000), 3)
corr_case("n2000", x, np.round(0.05 * x + rs.normal(size=2000), 3))
corr_case("n3", [1.0, 2.0, 3.5], [2.0, 1.0, 4.0])
corr_case("n2", [1.0, 2.0], [3.0, 1.0])
corr_case("perfect", [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0])
corr_case("constant_y", [1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0])

# ---- Wilcoxon ------------------------------------------------------------------------------------------


def wil_case(name, x, y=None):
    kv = dict(x=x)
    if y is not None:
        kv["y"] = y
    for zm in ["wilcox", "pratt"]:
        for corr in [False, True]:
            for method in ["auto", "exact", "approx"]:
                r = st.wilcoxon(x, y, zero_method=zm, correction=corr, method=method)
                key = f"{zm}_{int(corr)}_{method}"
                z = getattr(r, "zstatistic", float("nan"))
                if math.isnan(z):
                    # scipy reports z only for method='approx'; when 'auto' (n > 50 or zeros) or 'exact'
                    # (zeros) fell back to the approximation, z is that of method='approx'.
                    d = np.asarray(x, float) - (0 if y is None else np.asarray(y, float))
                    if (method == "auto" and len(d) > 50) or np.any(d == 0):
                        z = st.wilcoxon(x, y, zero_method=zm, correction=corr, method="approx").zstatistic
                kv[key] = [r.statistic, r.pvalue, z]
    case("wilcoxon", name, **kv)


wil_case("exact_n9", np.round(rs.normal(0.5, 1, size=9), 3), np.round(rs.normal(0, 1, size=9), 3))
d = np.round(rs.normal(0.4, 1, size=20), 3)
wil_case("diff_n20", d)
wil_case("ties_no_zero", [1.0, 2.0, -2.0, 3.0, 3.0, 3.0, -1.0, 4.0, 5.0, 6.0, 2.0, -4.0])
wil_case("zeros", [0.0, 1.0, -2.0, 0.0, 3.0, 3.0, 4.0, -1.0, 5.0, 2.0, 0.0, 6.0, 7.0, 1.0])
wil_case("n60", np.round(rs.normal(0.3, 1, size=60), 2), np.round(rs.normal(0, 1, size=60), 2))
wil_case("n80_ties_zeros", rs.randint(-3, 6, size=80).astype(float))
wil_case("one_zero", [0.0, 1.5])

# ---- Cliff's delta -------------------------------------------------------------------------------------


def cliff(x, y):
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    return np.sign(x[:, None] - y[None, :]).mean()


x = np.round(rs.normal(0.3, 1, 40), 1)
y = np.round(rs.normal(0, 1, 55), 1)
case("cliffs", "ties", x=x, y=y, delta=cliff(x, y))
case("cliffs", "disjoint", x=[5.0, 6.0, 7.0], y=[1.0, 2.0], delta=cliff([5, 6, 7], [1, 2]))
case("cliffs", "equal", x=[1.0, 1.0], y=[1.0], delta=cliff([1, 1], [1]))
x = np.round(rs.normal(size=700), 3)
y = np.round(rs.normal(0.1, 1, size=900), 3)
case("cliffs", "large", x=x, y=y, delta=cliff(x, y))

# ---- two-way ANOVA (statsmodels) ------------------------------------------------------------------------


def anova_case(name, y, a, b):
    df = pd.DataFrame({"y": y, "a": a, "b": b})
    model = ols("y ~ C(a) * C(b)", data=df).fit()
    t = anova_lm(model, typ=2)
    ss_total = float(((df.y - df.y.mean()) ** 2).sum())
    kv = dict(y=y, a=a, b=b, ss_total=ss_total)
    resid_ss = float(t.loc["Residual", "sum_sq"])
    for src, key in [("C(a)", "A"), ("C(b)", "B"), ("C(a):C(b)", "AB"), ("Residual", "Residual")]:
        row = t.loc[src]
        kv[key] = [row.sum_sq, row.df, row.F, row["PR(>F)"]]
    case("anova", name, **kv)


levels_a = rs.randint(0, 3, size=47)
levels_b = rs.randint(0, 2, size=47)
y = 1.0 + 0.8 * levels_a - 0.5 * levels_b + 0.6 * (levels_a == 2) * levels_b + rs.normal(size=47)
anova_case("unbalanced_3x2", np.round(y, 3), levels_a, levels_b)
a = np.repeat([0, 1], [13, 9])
b = np.array([0, 1, 2, 3] * 5 + [0, 3])
y = 2 + 0.5 * a + 0.3 * (b == 1) + rs.normal(size=22)
anova_case("unbalanced_2x4", np.round(y, 3), a, b)
a = np.repeat([7, 3], 6)  # codes need not be 0-based or sorted
b = np.tile([10, 20], 6)
y = np.array([4.0, 5.0, 6.0, 5.5, 4.5, 6.5, 3.0, 2.0, 3.5, 2.5, 3.0, 1.0])
anova_case("balanced_2x2", y, a, b)

# ---- Holm (statsmodels) ----------------------------------------------------------------------------------

for name, ps in [("mixed", [0.01, 0.04, 0.03, 0.005, 0.2, 0.04]),
                 ("capped", [0.5, 0.3, 0.9]),
                 ("single", [0.02])]:
    case("holm", name, p=ps, adjusted=multipletests(ps, method="holm")[1])

# ---- generator stream, bootstrap and randomization -------------------------------------------------------

g = Rng(0)
case("rng", "seed0", next64=[str(g.next64()) for _ in range(3)])
g = Rng(12345)
case("rng", "seed12345_below", n=[10, 7, 1000, 3, 1], below=[g.below(n) for n in [10, 7, 1000, 3, 1]])
# n just above 2^31: about half of the 32-bit draws are rejected, exercising the redraw path.
ns = [2147483649] * 12 + [3000000000] * 6 + [5] * 3
g = Rng(777)
case("rng", "seed777_below_rejections", n=ns, below=[g.below(n) for n in ns])

x = np.round(rs.exponential(size=30), 3)
for conf, seed in [(0.95, 42), (0.9, 7)]:
    lo, hi = boot_ci(x, 2000, conf, seed)
    case("bootstrap", f"mean_c{int(conf * 100)}", x=x, n_resamples=2000, confidence=conf, seed=seed,
         low=lo, high=hi)
xp = np.round(rs.normal(0.5, 0.2, size=25), 3)
yp = np.round(rs.normal(0.45, 0.2, size=25), 3)
lo, hi = boot_ci(xp - yp, 2000, 0.95, 99)
case("bootstrap_paired", "paired", x=xp, y=yp, n_resamples=2000, confidence=0.95, seed=99, low=lo, high=hi)

# Against scipy's own bootstrap (its own random stream): equal up to Monte Carlo error.
big = np.round(rs.gamma(2.0, 1.5, size=400), 4)
res = st.bootstrap((big,), np.mean, n_resamples=10000, method="percentile", confidence_level=0.95,
                   random_state=np.random.RandomState(5))
case("bootstrap_scipy", "gamma400", x=big, low=res.confidence_interval.low,
     high=res.confidence_interval.high, se_mean=np.std(big, ddof=1) / math.sqrt(len(big)))

d12 = np.round(rs.normal(0.3, 1, size=12), 2)
case("ar", "n12", x=d12, y=np.zeros(12), n_resamples=10000, seed=3, p=ar_p(d12, 10000, 3),
     p_exact=ar_exact(d12))
xa = np.round(rs.uniform(size=100), 2)
ya = np.round(np.clip(xa + rs.normal(0.02, 0.1, size=100), 0, 1), 2)
case("ar", "n100", x=xa, y=ya, n_resamples=3000, seed=11, p=ar_p(xa - ya, 3000, 11))
xi = np.array([1 / 3, 0.5, 0.2, 0.0, 1.0, 2 / 3, 0.25, 0.5, 1 / 3, 0.0, 0.2, 0.5, 1.0, 0.0])
yi = np.array([0.0, 0.5, 0.4, 1 / 3, 0.5, 1 / 3, 0.25, 0.0, 0.0, 0.2, 0.2, 1.0, 0.5, 0.5])
case("ar", "fractions", x=xi, y=yi, n_resamples=5000, seed=1, p=ar_p(xi - yi, 5000, 1), p_exact=ar_exact(xi - yi))

# ---- eigenvalues (numpy) ----------------------------------------------------------------------------------

for n in [1, 2, 3, 7, 15, 30]:
    a = np.round(rs.normal(size=(n, n)), 4)
    a = np.round((a + a.T) / 2, 5)
    case("eigen", f"random{n}", n=n, a=a, values=np.linalg.eigvalsh(a)[::-1])
a = np.diag([2.0, 2.0, 1.0, 5.0, 2.0])
case("eigen", "repeated", n=5, a=a, values=np.linalg.eigvalsh(a)[::-1])
a = np.zeros((4, 4))
case("eigen", "zero", n=4, a=a, values=np.zeros(4))

# ---- factor-analysis data sets (R psych in gen_stats_fa.R) --------------------------------------------------


def factor_data(n, loadings, seed):
    r = np.random.RandomState(seed)
    lam = np.asarray(loadings, float)
    f = r.normal(size=(n, lam.shape[1]))
    noise = r.normal(size=(n, lam.shape[0])) * np.sqrt(1 - (lam ** 2).sum(axis=1))
    return np.round(f @ lam.T + noise, 3)


fa2 = factor_data(200, [[0.8, 0.1], [0.7, 0.0], [0.75, 0.2], [0.6, 0.1],
                        [0.1, 0.7], [0.0, 0.8], [0.2, 0.65], [0.05, 0.6]], 7)
fa3 = factor_data(300, [[0.7, 0.1, 0.0], [0.8, 0.0, 0.1], [0.6, 0.2, 0.0],
                        [0.1, 0.75, 0.0], [0.0, 0.6, 0.2], [0.2, 0.7, 0.1],
                        [0.0, 0.1, 0.8], [0.1, 0.0, 0.65], [0.15, 0.1, 0.7]], 8)
for name, data in [("fa2", fa2), ("fa3", fa3)]:
    np.savetxt(os.path.join(OUT_DIR, name + ".csv"), data, fmt="%.3f", delimiter=",")
    corr = np.corrcoef(data, rowvar=False)
    case("corr_eigen", name, values=np.linalg.eigvalsh(corr)[::-1], corr=corr)

with open(os.path.join(OUT_DIR, "reference.txt"), "w") as f:
    f.write(f"# Generated by tests/reference/gen_stats.py with numpy {np.__version__}, scipy {scipy.__version__},"
            f" statsmodels {statsmodels.__version__}. Do not edit.\n")
    f.write("\n".join(lines) + "\n")
print("wrote", os.path.join(OUT_DIR, "reference.txt"))
