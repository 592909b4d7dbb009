#!/usr/bin/python3
"""Regenerate tests/data/meta_eval/expected.txt: the numbers scripts/analysis/meta_eval.lua and
kp.stats.williams must produce, computed with scipy 1.10 and numpy 1.24 (Debian bookworm's
python3-scipy, python3-numpy). The tests read the committed file; they need no Python.

Usage: /usr/bin/python3 tests/reference/gen_meta_eval.py

Truth comes from outside kplab: the human score of a (document, system) pair is the mean of its rows in
tests/data/meta_eval/judgments.csv (read with Python's csv module); the metric values are those of
tests/reference/kpref.py (the independent Python reference of the evaluation profiles, profile kplab)
on the fixture dataset and the five systems' predictions; correlations are scipy.stats.kendalltau
(tau-b), spearmanr and pearsonr; Williams' test is Steiger's (1980) formula written out below in numpy;
bootstrap intervals are numpy.percentile of the statistics over resamples of documents whose draws
replay the generator of core/include/kplab/stats.h (the same reimplementation as gen_stats.py).

The procedure mirrored (docs/meta-eval.md):
  - items: judged (document, system) pairs in order of first appearance in the file; human = mean
    (every mean here is math.fsum / count);
  - document level: one observation per item; system level: per system (first-appearance order) the
    mean over its items of the human score and of each metric;
  - bootstrap: D documents (first-appearance order among items), draws = D * B values of
    Rng(seed).below(D); resample b takes documents draws[b*D:(b+1)*D] and all their items (repeats
    kept); a statistic that is NaN on a resample is left out of its interval and counted;
  - Williams' test on Pearson's r and on Spearman's rho for every pair of metrics, and the percentile
    interval of the difference a - b of each coefficient over the resamples where both are defined.

File format (as tests/data/stats/reference.txt): 'case <kind> <name>', '<key> <values...>', 'end'.
"""

import csv
import math
import os
import sys
import warnings

import numpy as np
import scipy
import scipy.stats as st

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "meta_eval")
sys.path.insert(0, HERE)
import kpref  # noqa: E402

warnings.simplefilter("ignore")

METRICS = ["all.f1@M", "all.p@5", "all.ndcg@M", "all.mrr"]
SYSTEMS = ["sysA", "sysB", "sysC", "sysD", "sysE"]
N_RESAMPLES = 300
SEED = 7
CONFIDENCE = 0.9

# ---- the generator of kplab/stats.h (splitmix64-seeded xoshiro256**, Lemire's bounded draw) -----------
from kplab_rng import Rng  # noqa: E402


# ---- Williams' test, by formula -----------------------------------------------------------------------------


def williams(r12, r13, r23, n):
    """Williams T2 as given by Steiger (1980): t with n - 3 df for H0 rho12 = rho13 (variable 1 shared)."""
    det = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    den = 2 * (n - 1) / (n - 3) * det + rbar ** 2 * (1 - r23) ** 3
    if not den > 0 or 1 - r23 <= 1e-12:  # a and b perfectly correlated, up to rounding: 0 / 0
        return math.nan, n - 3, math.nan
    t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23) / den)
    return float(t), n - 3, float(2 * st.t.sf(abs(t), n - 3))


def fmean(xs):
    """The mean as meta_eval.lua takes it: the correctly rounded sum (math.fsum) over the count, so that
    it does not depend on the order of the values (ties between systems survive resampling)."""
    return math.fsum(xs) / len(xs)


lines = []


def fmt(v):
    if isinstance(v, str):
        return v
    v = float(v)
    return "nan" if math.isnan(v) else repr(v)


def case(kind, name, **kv):
    lines.append(f"case {kind} {name}")
    for k, v in kv.items():
        vals = v if isinstance(v, (list, tuple, np.ndarray)) else [v]
        lines.append(k + " " + " ".join(fmt(x) for x in vals))
    lines.append("end")


# Williams on correlations of simulated data (a shared human score h, two metrics a, b) and edge cases.
rs = np.random.RandomState(18)
for name, n, ca, cb, cab in [("close", 40, 0.6, 0.5, 0.3), ("apart", 25, 0.8, 0.1, 0.2),
                             ("negative", 60, -0.2, 0.4, 0.5), ("small", 6, 0.7, 0.3, 0.6)]:
    h = rs.normal(size=n)
    a = ca * h + rs.normal(size=n)
    b = cb * h + cab * a + rs.normal(size=n)
    r12 = st.pearsonr(h, a)[0]
    r13 = st.pearsonr(h, b)[0]
    r23 = st.pearsonr(a, b)[0]
    t, df, p = williams(r12, r13, r23, n)
    case("williams", name, r12=r12, r13=r13, r23=r23, n=n, t=t, df=df, p=p)
for name, r12, r13, r23, n in [("equal", 0.5, 0.5, 0.7, 30), ("swap", 0.3, 0.6, 0.4, 20),
                               ("n4", 0.9, 0.2, 0.1, 4), ("identical_metrics", 0.6, 0.6, 1.0, 30),
                               ("perfect_a", 1.0, 0.5, 0.5, 10),
                               ("rounded_identical", 0.9, 0.9, 1 - 2.0 ** -52, 5)]:
    t, df, p = williams(r12, r13, r23, n)
    case("williams", name, r12=r12, r13=r13, r23=r23, n=n, t=t, df=df, p=p)

# ---- the meta-evaluation fixture -----------------------------------------------------------------------------

ctx = kpref.read_lines(os.path.join(DATA, "meta_context.txt"))
kws = kpref.read_lines(os.path.join(DATA, "meta_allkeywords.txt"))
prof = kpref.PROFILES["kplab"]("meng", one2set=False, keywords_path=os.path.join(DATA, "meta_allkeywords.txt"))
values = {}  # (doc_id, system) -> [metric values]
for sys_name in SYSTEMS:
    per = kpref.evaluate(prof, ctx, kws, kpref.read_lines(os.path.join(DATA, sys_name + ".txt")))
    for i, (out, _cnt) in enumerate(per["all"]):
        values[(str(i + 1), sys_name)] = [out[m.split(".", 1)[1]] for m in METRICS]

order, sums = [], {}
with open(os.path.join(DATA, "judgments.csv"), newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
        key = (row["doc_id"], row["system"])
        if key not in sums:
            order.append(key)
            sums[key] = []
        sums[key].append(float(row["score"]))
items = [(d, s, fmean(sums[(d, s)]), values[(d, s)]) for d, s in order]
for d, s, hum, vals in items:
    case("meta_item", f"{d}:{s}", human=hum, values=vals)

docs = []
for d, _s, _h, _v in items:
    if d not in docs:
        docs.append(d)
systems = []
for _d, s, _h, _v in items:
    if s not in systems:
        systems.append(s)
doc_items = {d: [k for k, it in enumerate(items) if it[0] == d] for d in docs}


def columns(idx, level):
    """(human, [metric columns]) over item indices; None when a system has no item (system level)."""
    if level == "document":
        h = np.array([items[k][2] for k in idx])
        v = [np.array([items[k][3][j] for k in idx]) for j in range(len(METRICS))]
        return h, v
    h, v = [], [[] for _ in METRICS]
    for s in systems:
        ks = [k for k in idx if items[k][1] == s]
        if not ks:
            return None
        h.append(fmean([items[k][2] for k in ks]))
        for j in range(len(METRICS)):
            v[j].append(fmean([items[k][3][j] for k in ks]))
    return np.array(h), [np.array(c) for c in v]


COEFS = [("tau_b", lambda x, y: st.kendalltau(x, y)), ("rho", lambda x, y: st.spearmanr(x, y)),
         ("r", lambda x, y: st.pearsonr(x, y))]

rng = Rng(SEED)
D = len(docs)
draws = [rng.below(D) for _ in range(D * N_RESAMPLES)]
case("draws", f"n{D}_seed{SEED}", values=[d + 1 for d in draws[:40]])  # kp.stats.draw_indices is 1-based
for level in ("document", "system"):
    h, v = columns(list(range(len(items))), level)
    n = len(h)
    case("meta_level", level, n=n)
    boot = {(j, c): [] for j in range(len(METRICS)) for c, _ in COEFS}
    for b in range(N_RESAMPLES):
        idx = [k for t in draws[b * D:(b + 1) * D] for k in doc_items[docs[t]]]
        cols = columns(idx, level)
        for j in range(len(METRICS)):
            for c, fn in COEFS:
                x = math.nan if cols is None else float(fn(cols[1][j], cols[0])[0])
                boot[(j, c)].append(x)
    for j, m in enumerate(METRICS):
        kv = {}
        for c, fn in COEFS:
            r, p = fn(v[j], h)
            vals = np.array(boot[(j, c)])
            ok = vals[np.isfinite(vals)]
            lo, hi = np.percentile(ok, [100 * (1 - CONFIDENCE) / 2, 100 * (1 + CONFIDENCE) / 2])
            kv.update({c: r, c + "_p": p, c + "_ci_low": lo, c + "_ci_high": hi,
                       c + "_undefined": len(vals) - len(ok)})
        case("meta_metric", f"{level}:{m}", **kv)
    for a in range(len(METRICS)):
        for b in range(a + 1, len(METRICS)):
            kv = {}
            for c, fn in (("r", st.pearsonr), ("rho", st.spearmanr)):
                r12, r13, r23 = fn(h, v[a])[0], fn(h, v[b])[0], fn(v[a], v[b])[0]
                t, df, p = williams(r12, r13, r23, n)
                kv.update({f"williams_{c}_r_ab": r23, f"williams_{c}_t": t, f"williams_{c}_df": df,
                           f"williams_{c}_p": p})
            # The paired bootstrap of the difference of each coefficient, on the same resamples.
            for c, cfn in COEFS:
                ra = float(cfn(v[a], h)[0])
                rb = float(cfn(v[b], h)[0])
                d = np.array(boot[(a, c)]) - np.array(boot[(b, c)])
                ok = d[np.isfinite(d)]
                lo, hi = np.percentile(ok, [100 * (1 - CONFIDENCE) / 2, 100 * (1 + CONFIDENCE) / 2])
                kv.update({f"diff_{c}": ra - rb, f"diff_{c}_ci_low": lo, f"diff_{c}_ci_high": hi,
                           f"diff_{c}_undefined": len(d) - len(ok)})
            case("meta_williams", f"{level}:{METRICS[a]}:{METRICS[b]}", **kv)

with open(os.path.join(DATA, "expected.txt"), "w") as f:
    f.write(f"# Generated by tests/reference/gen_meta_eval.py with numpy {np.__version__}, scipy "
            f"{scipy.__version__}: metrics {','.join(METRICS)}, --n {N_RESAMPLES} --seed {SEED} "
            f"--confidence {CONFIDENCE}. Do not edit.\n")
    f.write("\n".join(lines) + "\n")
print("wrote", os.path.join(DATA, "expected.txt"))
