#!/usr/bin/python3
"""bench/semrp_ref.py and kplab's semrp against SemR-p computed by hand, on three documents.

bench/semrp_bench.sh times kplab against semrp_ref.py (the SemR-p authors' per-document loop) and
checks that the two agree on KP20k; agreement alone could be a shared mistake. Here both are
checked against values worked out by hand from the paper's Eq. 1-2 and the standalone code's rules
(docs/profiles.md section 8: no dedup, divide by min(#predictions, R), stems of the lower-cased
tokens, the "<peos>" piece dropped), with vectors written below so every cosine is exact.
Then the hostile case: a phrase missing from the table is an error naming it, for both.

Usage: semrp_ref_check.py KPLAB_BINARY SOURCE_DIR   (needs numpy and nltk: python3-numpy, python3-nltk)
"""
import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

R2 = math.sqrt(2.0)

# Vectors (3-d). Cosines by hand: |(3,0,4)| = 5; |(1,1,0)| = |(-1,1,0)| = sqrt 2; |(2,2,1)| = 3.
TABLE = {
    "neural networks": [1, 0, 0],
    "machine translation": [0, 1, 0],
    "deep learning": [0, 0, 1],
    "Machine Translation": [0, 1, 0],   # exact stem match: its vector is never used
    "AI systems": [3, 0, 4],
    "neural computation": [1, 1, 0],
    "language models": [1, 0, 0],       # rank 4 of a document with R = 3: never scored
    "graph": [1, 0, 0],
    "tree": [0, 1, 0],
    "forest": [-1, 1, 0],
    "graphs": [0, 0, 1],                # stems to "graph": exact match
    "alpha": [1, 0, 0],
    "beta": [0, 1, 0],
    "gamma": [0, 0, 1],
    "delta": [2, 2, 1],
    "omega": [0, 0, 0],                 # all zeros = no vector: cosine 0 with everything
    "theta": [2, 0, 0],
    # Never scored (the marker is dropped), but kplab's plan embeds every piece of the corpus,
    # "<peos>" included, and a precomputed table must hold what the plan asks for.
    "<peos>": [1, 1, 1],
}
GOLD = [
    "neural networks;machine translation;deep learning",
    "graph;graph;tree",
    "alpha;beta;gamma;delta",
]
PREDS = [
    "Machine Translation;AI systems;neural computation;language models",
    "forest;graphs",
    "omega;;<peos>;theta",
]
# Document 1: R = 3, top 3 of 4 predictions, denominator min(4, 3) = 3.
#   "Machine Translation": stems "machin translat" = a reference's stems -> 1.
#   "AI systems" (3,0,4)/5: cosines 3/5, 0, 4/5 -> mean of the k = 3 largest = 7/15.
#   "neural computation" (1,1,0)/sqrt2: cosines 1/sqrt2, 1/sqrt2, 0 -> sqrt2/3.
#   SemR-p = (1 + 7/15 + sqrt2/3) / 3 = 0.646024...
# Document 2: no dedup, so R = 3 ("graph" twice); 2 predictions, denominator min(2, 3) = 2.
#   "forest" (-1,1,0)/sqrt2: cosines -1/sqrt2, -1/sqrt2, 1/sqrt2 -> mean -sqrt2/6 (negative kept).
#   "graphs": stem "graph" -> 1.
#   SemR-p = (1 - sqrt2/6) / 2 = 0.382149...
# Document 3: R = 4; the empty piece and "<peos>" are dropped, so 2 predictions, denominator 2.
#   "omega": no vector -> cosines 0 -> 0.
#   "theta" (2,0,0): cosines 1, 0, 0, 2/3 -> the 3 largest 1, 2/3, 0 -> 5/9 (k = 3 < R = 4).
#   SemR-p = (0 + 5/9) / 2 = 5/18 = 0.277778...
EXPECTED = [(1 + 7 / 15 + R2 / 3) / 3, (1 - R2 / 6) / 2, 5 / 18]
EXPECTED_MEAN = sum(EXPECTED) / 3  # 0.435317...


def main():
    kplab, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    ref = os.path.join(source, "bench", "semrp_ref.py")
    tmp = tempfile.mkdtemp(prefix="kplab_semrp_ref_")
    failures = []
    try:
        ds = os.path.join(tmp, "hand")
        os.mkdir(ds)
        gold = os.path.join(ds, "hand_allkeywords.txt")
        preds = os.path.join(tmp, "predictions.txt")
        table = os.path.join(tmp, "table.jsonl")
        with open(gold, "w") as f:
            f.write("\n".join(GOLD) + "\n")
        with open(preds, "w") as f:
            f.write("\n".join(PREDS) + "\n")
        with open(table, "w") as f:
            for p, v in TABLE.items():
                f.write(json.dumps({"phrase": p, "vector": v}) + "\n")

        def check(who, docs, mean):
            for i, (got, want) in enumerate(zip(docs, EXPECTED), 1):
                if abs(got - want) > 1e-12:
                    failures.append("%s: document %d: SemR-p %r, by hand %r" % (who, i, got, want))
            if len(docs) != len(EXPECTED):
                failures.append("%s: %d documents (expected %d)" % (who, len(docs), len(EXPECTED)))
            if abs(mean - EXPECTED_MEAN) > 1e-12:
                failures.append("%s: mean %r, by hand %r" % (who, mean, EXPECTED_MEAN))

        # The reference.
        per_doc = os.path.join(tmp, "ref_docs.txt")
        out = subprocess.run([sys.executable, ref, "--table", table, "--gold", gold, "--predictions", preds,
                              "--per-doc", per_doc], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit("semrp_ref.py failed (%d): %s" % (out.returncode, out.stderr))
        lines = dict(l.split() for l in out.stdout.splitlines())
        check("semrp_ref.py", [float(l) for l in open(per_doc)], float(lines["all.semrp"]))

        # kplab, the same table imported as a precomputed model.
        env = dict(os.environ, KPLAB_MODELS=os.path.join(tmp, "models"))
        db = os.path.join(tmp, "runs.db")

        def run(*args, ok=True):
            r = subprocess.run([kplab, *args], capture_output=True, text=True, env=env, cwd=tmp)
            if ok and r.returncode != 0:
                sys.exit("kplab %s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr))
            return r

        run("model", "import", "hand", table, "--backend", "precomputed")
        res = json.loads(run("eval", "--dataset", ds, "--predictions", preds, "--profile", "semrp-standalone",
                             "--metrics", "semrp", "--model", "hand", "--db", db, "--output", "json").stdout)
        rows = list(csv.DictReader(io.StringIO(run("runs", "export", str(res["run_id"]), "--db", db,
                                                    "--output", "csv").stdout)))
        check("kplab semrp", [float(r["all.semrp"]) for r in rows], res["aggregates"]["all.semrp"])

        # Hostile: a phrase the documents need is not in the table.
        short = os.path.join(tmp, "short.jsonl")
        with open(short, "w") as f:
            for p, v in TABLE.items():
                if p != "theta":
                    f.write(json.dumps({"phrase": p, "vector": v}) + "\n")
        out = subprocess.run([sys.executable, ref, "--table", short, "--gold", gold, "--predictions", preds],
                             capture_output=True, text=True)
        want = "semrp_ref.py: %s: document 3: phrase 'theta' is not in the table %s\n" % (gold, short)
        if out.returncode != 1 or out.stderr != want:
            failures.append("semrp_ref.py with a table missing 'theta': exit %d, stderr %r (expected exit 1, %r)"
                            % (out.returncode, out.stderr, want))
        run("model", "import", "short", short, "--backend", "precomputed")
        r = run("eval", "--dataset", ds, "--predictions", preds, "--profile", "semrp-standalone", "--metrics",
                "semrp", "--model", "short", "--db", db, "--no-store", ok=False)
        if r.returncode == 0 or "theta" not in r.stderr:
            failures.append("kplab with a table missing 'theta': exit %d, stderr %r (expected a failure naming it)"
                            % (r.returncode, r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print("semrp_ref.py and kplab semrp (semrp-standalone) = the hand values: %s, mean %.6f"
          % (", ".join("%.6f" % e for e in EXPECTED), EXPECTED_MEAN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
