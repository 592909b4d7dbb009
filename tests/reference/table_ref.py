#!/usr/bin/env python3
"""Independent check of `kplab runs table` (docs/tables.md) from `kplab runs export`.

Scores the shared catSeq* outputs on Inspec and SemEval in a fresh store (a batch per dataset), then
recomputes every cell of the table from the per-document exports alone -- mean, sample sd and number
of seeds of all.f1@5.macro_hm (harmonic mean of the mean P@5 and mean R@5 of a run) and all.p@5.macro
(mean P@5) -- and one baseline test (catSeqTG-2RF1 vs catSeq on SemEval, F1@5 macro_hm) with its own
paired randomization over the documents of the seed means, and Holm's adjustment from the table's raw
p-values. Exits 1 on any difference. Usage: table_ref.py KPLAB_BINARY SOURCE_DIR
"""
import csv
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile


def main():
    kplab, source = sys.argv[1], sys.argv[2]
    data = os.path.join(source, "..", "shared", "data")
    tmp = tempfile.mkdtemp(prefix="kplab_table_ref_")
    db = os.path.join(tmp, "runs.db")

    def run(*args):
        out = subprocess.run([kplab, *args, "--db", db], cwd=source, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"kplab {' '.join(args)} failed ({out.returncode}): {out.stderr}")
        return out.stdout

    for ds, extra in (("inspec", []), ("semeval", ["--refs-stemmed"])):
        run("eval", "--dataset", f"{data}/kpg_testsets_meng2017/{ds}", *extra, "--output", "csv",
            "--predictions", f"{data}/predictions/{{catSeq,catSeq-RL,catSeqTG-2RF1}}/{ds}/*.txt")
    metrics = ["all.f1@5.macro_hm", "all.p@5.macro"]
    table = json.loads(run("runs", "table", "--metrics", ",".join(metrics), "--baseline", "catSeq",
                           "--output", "json", "--resamples", "9999"))
    runs = json.loads(run("runs", "list", "--output", "json"))

    def column_means(run_id):
        rows = list(csv.DictReader(io.StringIO(run("runs", "export", str(run_id), "--output", "csv"))))
        def col(name):
            return {r["doc_id"]: float(r[name]) for r in rows if r[name] not in ("", "nan")}
        return col("all.p@5"), col("all.r@5")

    def value(metric, p, r):
        mp, mr = sum(p.values()) / len(p), sum(r.values()) / len(r)
        return 2 * mp * mr / (mp + mr) if mp + mr > 0 else 0.0 if metric.endswith("macro_hm") else mp

    # Newest run per (system, dataset, seed), as the table groups them.
    groups = {}
    for r in runs:  # newest first
        groups.setdefault((r["system"], r["dataset"]), {}).setdefault(r["seed"], r["id"])
    failures = 0
    cols = table["columns"]
    for row in table["rows"]:
        for c, cell in enumerate(row["cells"]):
            key = (row["system"], cols[c]["dataset"])
            if key not in groups:
                if cell is not None:
                    print(f"FAIL {key}: a cell where no run is"); failures += 1
                continue
            vals = []
            for seed, rid in sorted(groups[key].items(), key=lambda kv: str(kv[0])):
                p, r = column_means(rid)
                vals.append(value(cols[c]["metric"], p, r) if cols[c]["metric"].endswith("macro_hm")
                            else sum(p.values()) / len(p))
            n = len(vals)
            mean = sum(vals) / n
            sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1)) if n > 1 else 0.0
            if cell["n"] != n or abs(cell["mean"] - mean) > 1e-12 or abs(cell["sd"] - sd) > 1e-12:
                print(f"FAIL {key} {cols[c]['metric']}: kplab {cell['mean']} ± {cell['sd']} ({cell['n']}), "
                      f"reference {mean} ± {sd} ({n})"); failures += 1

    # One test by hand: seed-mean per-document P@5 and R@5 of both systems, documents swapped at random.
    def seed_means(system, dataset):
        ids = list(groups[(system, dataset)].values())
        ps, rs = zip(*(column_means(i) for i in ids))
        docs = sorted(set.intersection(*(set(p) for p in ps + rs)))
        return docs, {d: sum(p[d] for p in ps) / len(ps) for d in docs}, {d: sum(r[d] for r in rs) / len(rs) for d in docs}
    docs_a, pa, ra = seed_means("catSeqTG-2RF1", "semeval")
    docs_b, pb, rb = seed_means("catSeq", "semeval")
    docs = [d for d in docs_a if d in set(docs_b)]
    def hm_diff(swap):
        sa = [(pb[d], rb[d]) if s else (pa[d], ra[d]) for d, s in zip(docs, swap)]
        sb = [(pa[d], ra[d]) if s else (pb[d], rb[d]) for d, s in zip(docs, swap)]
        def hm(xs):
            mp, mr = sum(x[0] for x in xs) / len(xs), sum(x[1] for x in xs) / len(xs)
            return 2 * mp * mr / (mp + mr) if mp + mr > 0 else 0.0
        return hm(sa) - hm(sb)
    obs = hm_diff([False] * len(docs))
    rng = random.Random(7)
    R = 4000
    hits = sum(abs(hm_diff([rng.random() < 0.5 for _ in docs])) >= abs(obs) - 1e-12 for _ in range(R))
    p_ref = (1 + hits) / (1 + R)
    c = next(i for i, col in enumerate(cols) if col["dataset"] == "semeval" and col["metric"] == "all.f1@5.macro_hm")
    cell = next(row for row in table["rows"] if row["system"] == "catSeqTG-2RF1")["cells"][c]
    tol = max(0.01, 4 * math.sqrt(p_ref * (1 - p_ref) / R))
    if abs(cell["diff"] - obs) > 1e-12 or abs(cell["p"] - p_ref) > tol or cell["n_docs"] != len(docs):
        print(f"FAIL test: kplab diff {cell['diff']} p {cell['p']} n {cell['n_docs']}, "
              f"reference diff {obs} p {p_ref} n {len(docs)}"); failures += 1
    # Holm over the table's tested cells, from its raw p-values.
    tested = [cl for row in table["rows"] for cl in row["cells"] if cl and "p" in cl]
    ps = sorted(tested, key=lambda cl: cl["p"])
    running = 0.0
    for k, cl in enumerate(ps):
        running = max(running, min(1.0, cl["p"] * (len(ps) - k)))
        if abs(cl["p_holm"] - running) > 1e-12 or cl["significant"] != (running < 0.05):
            print(f"FAIL Holm: {cl}"); failures += 1
    if len(tested) != table["family"]:
        print(f"FAIL family {table['family']} != {len(tested)}"); failures += 1
    print(f"{sum(1 for row in table['rows'] for cl in row['cells'] if cl)} cells, {len(tested)} tests checked; "
          f"{failures} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
