#!/usr/bin/python3
"""Writes emd_pyemd.tsv: earth mover's distances and flows that pyemd itself computes.

    /usr/bin/python3 tests/data/mover/gen_emd_cases.py > tests/data/mover/emd_pyemd.tsv

Needs Debian's python3-pyemd (0.5.1, FastEMD: what MoverScore's requirements pin) and numpy. The
cases are drawn with numpy's PCG64 from fixed seeds, shaped as MoverScore builds them: the first
histogram's mass on the first bins, the second's on the others (c / (sum c + eps) with MoverScore's
eps), costs = squared Euclidean (moverscore.py) or Euclidean (moverscore_v2.py) distances between
unit vectors, with zero vectors (removed tokens) and duplicate rows; plus general histograms that
overlap, unequal totals, and costs with ties. Each line: name, n, p (n), q (n), cost (n*n, row-major),
pyemd.emd(p, q, cost), the flow of pyemd.emd_with_flow (n*n, row-major); floats as repr (exact).
"""
import numpy as np
from pyemd import emd, emd_with_flow


def unit_rows(rng, k, d, zero=()):
    x = rng.standard_normal((k, d)).astype(np.float32)
    x[list(zero)] = 0
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / (n + 1e-6)


def mover_case(rng, nr, nh, squared, eps, zero=()):
    x = unit_rows(rng, nr + nh, 8, zero).astype(np.float64)
    g = x @ x.T
    sq = np.clip(np.diag(g)[:, None] + np.diag(g)[None, :] - 2 * g, 0, None)
    cost = sq if squared else np.sqrt(np.maximum(sq, 1e-30))
    w = rng.uniform(0.1, 3.0, nr + nh)
    w[list(zero)] = 0
    c1 = np.zeros(nr + nh)
    c2 = np.zeros(nr + nh)
    c1[:nr] = w[:nr]
    c2[nr:] = w[nr:]
    return c1 / (c1.sum() + eps), c2 / (c2.sum() + eps), np.ascontiguousarray(cost)


def general_case(rng, n, ties):
    p = rng.uniform(0, 1, n) * (rng.uniform(0, 1, n) < 0.7)
    q = rng.uniform(0, 1, n) * (rng.uniform(0, 1, n) < 0.7)
    pts = rng.integers(0, 5, (n, 2)) if ties else rng.standard_normal((n, 2))
    cost = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1)).astype(np.float64)
    return p, q, np.ascontiguousarray(cost)


def main():
    rng = np.random.Generator(np.random.PCG64(20240531))
    cases = []
    for k in range(12):
        nr, nh = int(rng.integers(1, 9)), int(rng.integers(1, 9))
        squared = k % 2 == 0
        zero = [0, nr + nh - 1] if k % 3 == 0 else []
        cases.append((f"mover{k}", *mover_case(rng, nr, nh, squared, 1e-5 if squared else 1e-30, zero)))
    for k in range(8):
        cases.append((f"general{k}", *general_case(rng, int(rng.integers(2, 10)), k % 2 == 0)))
    cases.append(("line", np.array([.6, 0, 0]), np.array([0, .3, .2]),
                  np.abs(np.subtract.outer([0., 1, 2], [0., 1, 2]))))
    print("# name n p[n] q[n] cost[n*n] emd flow[n*n] -- pyemd", __import__("pyemd").__version__)
    for name, p, q, c in cases:
        d = emd(p, q, c)
        d2, flow = emd_with_flow(p, q, c)
        assert d == d2
        vals = [name, str(len(p))] + [repr(float(x)) for x in list(p) + list(q) + list(c.ravel())]
        vals += [repr(float(d))] + [repr(float(x)) for x in np.array(flow).ravel()]
        print("\t".join(vals))


if __name__ == "__main__":
    main()
