#!/usr/bin/python3
"""Phrase vectors whose cosines are the ones the SemR-p paper gives in its Table 1 (seed 002), plus a
few more chosen by hand, for tests/host/semrp_test.cc.

The three references get unit vectors with pairwise cosine 0.5 (Gram matrix G). A prediction p with
wanted cosines g = (cos(p, neural networks), cos(p, machine translation), cos(p, deep learning)) is
a = G^-1 g in the span of the references plus a residual of length sqrt(1 - g' G^-1 g) along a
dimension of its own, so its cosine with reference j is exactly g_j. Two predictions meet only
in the references' span: cos(p, q) = g_p' G^-1 g_q.

Writes tests/data/semrp/{lower,cased,stems}.tsv (phrase TAB values) — the same vectors keyed by the
lower-cased surface (profiles kplab, kpeval's SemP/SemR), the original case (semrp-standalone) and
the Porter stems (the KPEval fork's SemR-p).  Run: /usr/bin/python3 tests/reference/gen_semrp_vectors.py
"""
import os
import numpy as np
from nltk.stem.porter import PorterStemmer

REFS = ["neural networks", "machine translation", "deep learning"]
# prediction (original case) -> cosines with REFS, in REFS order
PREDS = {
    "AI systems": (0.68, 0.61, 0.72),          # Table 1
    "neural computation": (0.76, 0.60, 0.66),  # Table 1
    "language modelling": (0.30, 0.50, 0.40),
    "translation quality": (0.20, 0.80, 0.30),
    "neural models": (0.90, 0.10, 0.30),
    "quantum chemistry": (-0.20, -0.10, -0.30),
    "machine translations": (0.50, 0.95, 0.50),
}
C = 0.5
G = np.full((3, 3), C) + (1 - C) * np.eye(3)
L = np.linalg.cholesky(G)          # rows: reference vectors in 3-d, L L' = G
dims = 3 + len(PREDS)
vec = {}
for j, r in enumerate(REFS):
    v = np.zeros(dims)
    v[:3] = L[j]
    vec[r] = v
for i, (p, g) in enumerate(PREDS.items()):
    g = np.array(g)
    a = np.linalg.solve(G, g)
    inside = g @ a
    assert inside <= 1, p
    v = np.zeros(dims)
    v[:3] = a @ L                   # sum_j a_j r_j
    v[3 + i] = np.sqrt(1 - inside)
    vec[p] = v
for p, g in PREDS.items():          # check every wanted cosine
    for r, want in zip(REFS, g):
        assert abs(vec[p] @ vec[r] - want) < 1e-12

stem = PorterStemmer()
out = os.path.join(os.path.dirname(__file__), "..", "data", "semrp")
def write(name, key):
    seen = set()
    with open(os.path.join(out, name), "w") as f:
        for p, v in vec.items():
            if key(p) in seen:  # 'machine translations' stems like the reference: one string, one vector
                continue
            seen.add(key(p))
            f.write(key(p) + "\t" + " ".join(f"{x:.9f}" for x in v) + "\n")
write("lower.tsv", lambda p: p.lower())
write("cased.tsv", lambda p: p)
write("stems.tsv", lambda p: " ".join(stem.stem(w) for w in p.lower().split()))
