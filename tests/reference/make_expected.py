#!/usr/bin/python3
"""Regenerate tests/conformance/expected/** with the Python reference (kpref.py).

Usage: make_expected.py [--data DIR] [--out DIR] [--jobs N] [--only SUBSTRING]
  --data  the shared data dir (default: ../shared/data relative to the repo root)
  --out   default: tests/conformance/expected
Writes <out>/<profile-dir>/<system>__<dataset>.json and <out>/manifest.tsv.
Paths in the manifest are relative to the shared data dir (predictions, context, keywords)
and to <out> (expected JSON).
"""

import argparse
import concurrent.futures as cf
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PY = "/usr/bin/python3"

# profile-dir -> (profile, extra options)
PROFILES = [
    ("kplab", "kplab", []),
    ("kpeval", "kpeval", []),
    ("kenchan", "kenchan", []),
    ("kenchan+one2set", "kenchan", ["one2set"]),
    ("exhird", "exhird", []),
]

MENG = "kpg_testsets_meng2017"

# dataset -> (dataset dir, context, keywords, format, max_docs, prediction dataset dir)
DATASETS = {
    "inspec": (MENG + "/inspec", MENG + "/inspec/word_inspec_testing_context.txt",
               MENG + "/inspec/word_inspec_testing_allkeywords.txt", "meng", None, "inspec"),
    "krapivin": (MENG + "/krapivin", MENG + "/krapivin/word_krapivin_testing_context.txt",
                 MENG + "/krapivin/word_krapivin_testing_allkeywords.txt", "meng", None, "krapivin"),
    "semeval": (MENG + "/semeval", MENG + "/semeval/word_semeval_testing_context.txt",
                MENG + "/semeval/word_semeval_testing_allkeywords.txt", "meng", None, "semeval"),
    "kp20k": (MENG + "/kp20k", None,
              MENG + "/kp20k/word_kp20k_testing_allkeywords.txt", "meng", None, "kp20k"),
    "kp20k_first1000": ("kp20k_test_first1000", "kp20k_test_first1000/test_src.txt",
                        "kp20k_test_first1000/test_trg.txt", "one2set", 1000, "kp20k"),
    # The same SemEval files with the references matched as released (Porter-stemmed): --refs-stemmed.
    "semeval_refs_stemmed": (MENG + "/semeval", MENG + "/semeval/word_semeval_testing_context.txt",
                             MENG + "/semeval/word_semeval_testing_allkeywords.txt", "meng", None, "semeval"),
}


def runs():
    out = []
    for seed in (1234, 5678, 9527):
        for ds in ("kp20k", "kp20k_first1000", "inspec", "krapivin", "semeval"):
            out.append(("catSeqTG-2RF1-seed%d" % seed, ds,
                        "predictions/catSeqTG-2RF1/%s/seed%d.txt" % (DATASETS[ds][5], seed)))
    for system in ("catSeq", "catSeq-RL"):
        for ds in ("inspec", "krapivin", "semeval"):
            out.append((system, ds, "predictions/%s/%s/predictions.txt" % (system, ds)))
    out.append(("catSeq-GAN", "semeval", "predictions/catSeq-GAN/semeval/predictions.txt"))
    out.append(("catSeq-run2", "semeval", "predictions/catSeq-run2/semeval/predictions.txt"))
    out.append(("catSeq-run2", "inspec", "predictions/catSeq-run2/inspec/predictions.txt"))
    for seed in (1234, 5678, 9527):
        out.append(("catSeqTG-2RF1-seed%d" % seed, "semeval_refs_stemmed",
                    "predictions/catSeqTG-2RF1/semeval/seed%d.txt" % seed))
    out.append(("catSeq", "semeval_refs_stemmed", "predictions/catSeq/semeval/predictions.txt"))
    return out


def job_list(data, outdir):
    jobs = []
    for pdir, profile, extra in PROFILES:
        for system, ds, pred in runs():
            dsdir, ctx, kw, fmt, max_docs, _ = DATASETS[ds]
            opts = list(extra)
            if ctx is None:
                opts.append("no-text")
            if max_docs is not None:
                opts.append("max_docs=%d" % max_docs)
            if ds.endswith("_refs_stemmed"):
                opts.append("refs_stemmed")
            cmd = [PY, os.path.join(HERE, "kpref.py"), "--profile", profile,
                   "--dataset-format", fmt, "--keywords", os.path.join(data, kw),
                   "--predictions", os.path.join(data, pred)]
            if "one2set" in extra:
                cmd.append("--one2set")
            if ctx is None:
                cmd.append("--no-text")
            else:
                cmd += ["--context", os.path.join(data, ctx)]
            if max_docs is not None:
                cmd += ["--max-docs", str(max_docs)]
            if ds.endswith("_refs_stemmed"):
                cmd.append("--refs-stemmed")
            rel_json = "%s/%s__%s.json" % (pdir, system, ds)
            row = [profile, system, ds, dsdir, ctx or "-", kw, pred, fmt,
                   ",".join(opts) if opts else "-", rel_json]
            jobs.append((cmd, os.path.join(outdir, rel_json), row))
    # the 20k-document runs first: they take longest
    jobs.sort(key=lambda j: 0 if j[2][2] == "kp20k" else 1)
    return jobs


def run_one(job):
    cmd, path, _ = job
    os.makedirs(os.path.dirname(path), exist_ok=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return path, res.stderr
    with open(path + ".tmp", "w") as f:
        f.write(res.stdout)
    os.replace(path + ".tmp", path)
    return path, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.normpath(os.path.join(REPO, "..", "shared", "data")))
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "conformance", "expected"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default=None, help="run only jobs whose JSON path contains this")
    a = ap.parse_args()

    jobs = job_list(a.data, a.out)
    header = ["profile", "system", "dataset", "dataset_path", "context", "keywords",
              "predictions", "dataset_format", "options", "expected"]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "manifest.tsv"), "w") as f:
        f.write("\t".join(header) + "\n")
        for _, _, row in jobs:
            f.write("\t".join(row) + "\n")
    if a.only:
        jobs = [j for j in jobs if a.only in j[1]]
    failed = 0
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for path, err in ex.map(run_one, jobs):
            if err:
                failed += 1
                print("FAILED %s\n%s" % (path, err), file=sys.stderr)
            else:
                print("wrote %s" % os.path.relpath(path, a.out))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
