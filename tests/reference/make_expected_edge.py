#!/usr/bin/python3
"""Regenerate tests/conformance/expected_edge/** with the Python reference (kpref.py) on the
hand-written edge-case datasets under tests/data/edge/ (see tests/data/edge/README.md).

Usage: make_expected_edge.py
Writes tests/conformance/expected_edge/<profile-dir>/<dataset>.json for the profile dirs kplab,
kpeval, kenchan, kenchan+one2set, exhird and the datasets edge, semeval_like, sv_named_files, and
tests/conformance/expected_edge/manifest.tsv: the same columns as tests/conformance/expected/manifest.tsv,
but with dataset_path, context, keywords and predictions relative to the repo's tests/data/ and
expected relative to tests/conformance/expected_edge/.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(REPO, "tests", "data")
OUT = os.path.join(REPO, "tests", "conformance", "expected_edge")
PY = "/usr/bin/python3"

PROFILES = [
    ("kplab", "kplab", []),
    ("kpeval", "kpeval", []),
    ("kenchan", "kenchan", []),
    ("kenchan+one2set", "kenchan", ["one2set"]),
    ("exhird", "exhird", []),
]

# dataset -> (dataset dir, context, keywords, predictions), relative to tests/data
DATASETS = [
    ("edge", "edge", "edge/edge_context.txt", "edge/edge_allkeywords.txt", "edge/edge_predictions.txt"),
    # ExHiRD leaves the references of a keywords path containing 'semeval' unstemmed.
    ("semeval_like", "edge/semeval_like", "edge/semeval_like/edge_semeval_context.txt",
     "edge/semeval_like/edge_semeval_allkeywords.txt", "edge/semeval_like/edge_semeval_predictions.txt"),
    # The same files in a directory whose name lacks 'semeval': ExHiRD tests the keywords *file* path
    # (opts.tgt), so the rule still applies.
    ("sv_named_files", "edge/sv_named_files", "edge/sv_named_files/edge_semeval_context.txt",
     "edge/sv_named_files/edge_semeval_allkeywords.txt", "edge/sv_named_files/edge_semeval_predictions.txt"),
]


def main():
    header = ["profile", "system", "dataset", "dataset_path", "context", "keywords",
              "predictions", "dataset_format", "options", "expected"]
    rows = []
    failed = 0
    for pdir, profile, extra in PROFILES:
        for ds, dsdir, ctx, kw, pred in DATASETS:
            cmd = [PY, os.path.join(HERE, "kpref.py"), "--profile", profile, "--dataset-format", "meng",
                   "--context", os.path.join(DATA, ctx), "--keywords", os.path.join(DATA, kw),
                   "--predictions", os.path.join(DATA, pred)]
            if "one2set" in extra:
                cmd.append("--one2set")
            rel_json = "%s/%s.json" % (pdir, ds)
            rows.append([profile, "edge", ds, dsdir, ctx, kw, pred, "meng",
                         ",".join(extra) if extra else "-", rel_json])
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                failed += 1
                print("FAILED %s\n%s" % (rel_json, res.stderr), file=sys.stderr)
                continue
            path = os.path.join(OUT, rel_json)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(res.stdout)
            print("wrote %s" % rel_json)
    with open(os.path.join(OUT, "manifest.tsv"), "w") as f:
        f.write("\t".join(header) + "\n")
        for row in rows:
            f.write("\t".join(row) + "\n")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
