#!/usr/bin/python3
"""Reference values for tests/host/ci_test.cc: bootstrap CIs and paired tests of corpus-level metrics
(`kplab eval --ci`, `kplab runs compare`) on the hand-made fixtures of tests/data/ci.

Everything is recomputed here from the fixtures' hand specification (the confidences and hits of each
keyphrase, the Hooper CP of each mined pair), not from kplab's output, with kplab's documented draws
(kplab/stats.h Rng: xoshiro256** seeded by splitmix64, Lemire's Below; host/engine/bootstrap.h) replayed
by the generator below, and numpy's 'linear' percentiles.

Run as /usr/bin/python3 tests/reference/gen_ci.py; writes the fixtures (tests/data/ci: a 4-document
calibration dataset with two systems' token log-probabilities, a 4-document homogeneity dataset with
two systems' predictions) and tests/data/ci/expected.json.
"""
import json
import math
import os

import numpy as np

from kplab_rng import M64, Rng  # noqa: E402  (kplab::stats::Rng)


def draws(n, resamples, seed):
    """BootstrapDraws: resample after resample, n indices rng.below(n)."""
    rng = Rng(seed)
    return [[rng.below(n) for _ in range(n)] for _ in range(resamples)]


def percentile_ci(values, confidence=0.95):
    lo, hi = np.percentile(np.asarray(values, dtype=float), [100 * (1 - confidence) / 2, 100 * (1 + confidence) / 2])
    return [float(lo), float(hi)]


def paired(agg, rows_a, rows_b, seed, ci_resamples, resamples):
    """runs compare on a corpus-level metric: observed B - A, the paired bootstrap CI (the same rows for
    both runs) and the randomization p (rows swapped between the runs by the bits of one 64-bit word per
    64 rows from Rng(seed * 1000003 + 999983); Besag-Clifford stop after 50 hits)."""
    n = len(rows_a)
    obs = agg(rows_b) - agg(rows_a)
    boot = []
    for idx in draws(n, ci_resamples, seed):
        d = agg([rows_b[i] for i in idx]) - agg([rows_a[i] for i in idx])
        if not math.isnan(d):
            boot.append(d)
    rng = Rng((seed * 1000003 + 999983) & M64)
    hits = seen = 0
    tol = 1e-9 * max(1.0, abs(obs))
    p = None
    for _ in range(resamples):
        words = [rng.next64() for _ in range((n + 63) // 64)]
        swap = [(words[i // 64] >> (i % 64)) & 1 for i in range(n)]
        ya = [rows_b[i] if swap[i] else rows_a[i] for i in range(n)]
        yb = [rows_a[i] if swap[i] else rows_b[i] for i in range(n)]
        d = agg(yb) - agg(ya)
        seen += 1
        if math.isnan(d) or abs(d) >= abs(obs) - tol:
            hits += 1
        if hits == 50:
            p = 50 / seen
            break
    if p is None:
        p = (1 + hits) / (1 + seen)
    lo, hi = percentile_ci(boot)
    return {"diff": obs, "ci": [lo, hi], "p": p}


# ---- calibration: ECE over 10 equal-width bins, documents resampled -------------------------------------

BINS = 10
# Per document, in dataset order: (confidence, correct) of each prediction. The tokens files give each
# one-word keyphrase one token of log-probability log(confidence), so KPP-s = 1 / confidence.
# No confidence is near a bin bound. Every keyphrase is alone in its bin, so by hand
#   ECE(A) = (|1-0.88| + 0.78 + |1-0.33| + 0.62 + 0.14 + |1-0.96|) / 6 = 2.37 / 6 = 0.395
#   ECE(B) = (|1-0.97| + 0.32 + |1-0.74| + 0.23 + 0.06 + |1-0.84|) / 6 = 1.06 / 6 = 0.17666...
CALIB_WORDS = [["alpha", "beta"], ["gamma"], ["delta"], ["eps", "zeta"]]
CALIB_A = [[(0.88, 1), (0.78, 0)], [(0.33, 1)], [(0.62, 0)], [(0.14, 0), (0.96, 1)]]
CALIB_B = [[(0.97, 1), (0.32, 0)], [(0.74, 1)], [(0.23, 0)], [(0.06, 0), (0.84, 1)]]
# The dataset: each document's references make exactly the keyphrases marked 1 correct.
CALIB_DOCS = [("d1", "alpha beta gamma [sep] we study alpha and beta .", "alpha;omega"),
              ("d2", "gamma rays [sep] gamma is studied .", "gamma"),
              ("d3", "delta kappa [sep] delta is here .", "kappa"),
              ("d4", "zeta functions [sep] eps and zeta .", "zeta")]


def bin_index(c, k=BINS):
    # (i/k, (i+1)/k], as kplab::calib::BinIndex.
    i = min(max(math.ceil(c * k) - 1, 0), k - 1)
    if i > 0 and c <= i / k:
        i -= 1
    if i + 1 < k and c > (i + 1) / k:
        i += 1
    return i


def doc_rows(spec):
    """Each document's slots as calibration.lua writes them: total n, and per bin (n, hits, conf sum)."""
    rows = []
    for preds in spec:
        bins = {}
        for c, hit in preds:
            conf = 1 / math.exp(-math.log(c))  # confidence = 1 / KPP-s
            b = bins.setdefault(bin_index(conf), [0, 0, 0.0])
            b[0] += 1
            b[1] += hit
            b[2] += conf
        rows.append((len(preds), bins))
    return rows


def ece(rows):
    """calibration.lua's Eq. 9 over the rows, summing in row order as the host does."""
    n = 0.0
    for r in rows:
        n += r[0]
    total = 0.0
    for i in range(BINS):
        cnt = hits = conf = 0.0
        for r in rows:
            if i in r[1]:
                cnt += r[1][i][0]
                hits += r[1][i][1]
                conf += r[1][i][2]
        if cnt > 0:
            total = total + cnt / n * abs(hits / cnt - conf / cnt)
    return total


# ---- homogeneity: Hooper CP over the mined pairs, pairs resampled ----------------------------------------

# The pairs of tests/data/ci/hom (gold Jaccard >= 0.5: (d1, d2), (d1, d3), (d2, d3)), in the order
# the units are reported (by first document, then partner), and each pair's Hooper CP (stem keys):
#   system A: d1 {pear, plum}, d2 {pear, grape}, d3 {kiwi, lime}: 1/3, 0, 0
#   system B: d1 {pear, plum}, d2 {pear, plum}, d3 {pear, lime}: 1, 1/3, 1/3
HOM_A = [1 / 3, 0.0, 0.0]
HOM_B = [1.0, 1 / 3, 1 / 3]


def cp(rows):
    h = n = 0.0
    for v in rows:
        h += v
        n += 1
    return h / n


SEED, CI_RESAMPLES, RESAMPLES = 7, 200, 1000

# ---- the fixtures, from the specification above --------------------------------------------------------

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "ci")
os.makedirs(os.path.join(DATA, "hom"), exist_ok=True)
with open(os.path.join(DATA, "calib_dataset.jsonl"), "w") as f:
    for i, src, tgt in CALIB_DOCS:
        f.write(json.dumps({"id": i, "source": src, "target": tgt}) + "\n")
for name, spec in (("calib_a.jsonl", CALIB_A), ("calib_b.jsonl", CALIB_B)):
    with open(os.path.join(DATA, name), "w") as f:
        for (doc_id, _, _), words, preds in zip(CALIB_DOCS, CALIB_WORDS, spec):
            toks, lps = [], []
            for k, (w, (c, _)) in enumerate(zip(words, preds)):
                if k:
                    toks.append(";")
                    lps.append(0.0)
                toks.append("\u2581" + w)
                lps.append(math.log(c))
            toks.append("</s>")
            lps.append(0.0)
            f.write(json.dumps({"id": doc_id, "subword": "sentencepiece", "special": [";", "</s>"], "tokens": toks,
                                "logprobs": lps}, ensure_ascii=False) + "\n")
with open(os.path.join(DATA, "hom", "hom_context.txt"), "w") as f:
    f.write("a short study . <eos> of many things .\n" * 4)
with open(os.path.join(DATA, "hom", "hom_allkeywords.txt"), "w") as f:
    f.write("apple;banana;cherry\napple;banana;durian\napple;banana;elder\nxray;yankee\n")
with open(os.path.join(DATA, "hom_a.txt"), "w") as f:
    f.write("pear;plum\npear;grape\nkiwi;lime\npear\n")
with open(os.path.join(DATA, "hom_b.txt"), "w") as f:
    f.write("pear;plum\npear;plum\npear;lime\npear\n")

out = {"seed": SEED, "ci_resamples": CI_RESAMPLES, "resamples": RESAMPLES}
ra, rb = doc_rows(CALIB_A), doc_rows(CALIB_B)
out["ece_a"] = ece(ra)
out["ece_b"] = ece(rb)
out["ece_a_ci"] = percentile_ci([ece([ra[i] for i in idx]) for idx in draws(len(ra), CI_RESAMPLES, SEED)])
out["ece_compare"] = paired(ece, ra, rb, SEED, CI_RESAMPLES, RESAMPLES)
out["cp_a"] = cp(HOM_A)
out["cp_b"] = cp(HOM_B)
out["cp_a_ci"] = percentile_ci([cp([HOM_A[i] for i in idx]) for idx in draws(len(HOM_A), CI_RESAMPLES, SEED)])
out["cp_compare"] = paired(cp, HOM_A, HOM_B, SEED, CI_RESAMPLES, RESAMPLES)

path = os.path.join(DATA, "expected.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")
print(json.dumps(out, indent=1, sort_keys=True))
