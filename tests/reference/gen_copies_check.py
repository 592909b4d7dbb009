#!/usr/bin/python3
"""bench/gen_copies.py (the scale benchmark's data) on hand-made input: the bytes it writes, its errors.

Checks, against expectations written here:
  * copies 0, 1, 2 in turn, the last one partial; " copy<c>" after every keyphrase, gold and
    predictions alike; no tag on empty or blank pieces or on the "<peos>" marker (any case, padded);
  * the dataset file keeps the keywords file's name, so `kplab eval --dataset DIR` reads it as meng;
  * `kplab eval --metrics exact` gives the same aggregates on the tagged copies as on plain copies
    (the property bench/scale.sh relies on), here on documents with a dedup case and a stem match;
  * hostile input: a token of the tag's form, misaligned files, a CR line end, --docs 0 -- each an
    error with the exact text below, exit status 1 (2 for the usage error), and no output file.

Usage: gen_copies_check.py KPLAB_BINARY SOURCE_DIR
"""
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

GOLD = "graph algorithms;Forest;;  trees \ncloud computing; \n"
PREDS = "graph algorithm;<peos>;forests;graph algorithms\n <PEOS> ;cloud;\n"
# 5 documents = copy 0 (both lines), copy 1 (both lines), copy 2 (first line only).
WANT_GOLD = ("graph algorithms copy0;Forest copy0;;  trees  copy0\ncloud computing copy0; \n"
             "graph algorithms copy1;Forest copy1;;  trees  copy1\ncloud computing copy1; \n"
             "graph algorithms copy2;Forest copy2;;  trees  copy2\n")
WANT_PREDS = ("graph algorithm copy0;<peos>;forests copy0;graph algorithms copy0\n <PEOS> ;cloud copy0;\n"
              "graph algorithm copy1;<peos>;forests copy1;graph algorithms copy1\n <PEOS> ;cloud copy1;\n"
              "graph algorithm copy2;<peos>;forests copy2;graph algorithms copy2\n")


def main():
    kplab, source = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    gen = os.path.join(source, "bench", "gen_copies.py")
    tmp = tempfile.mkdtemp(prefix="kplab_gen_copies_")
    failures = []

    def write(name, text, mode="w"):
        path = os.path.join(tmp, name)
        with open(path, mode) as f:
            f.write(text)
        return path

    def gen_run(gold, preds, docs, out, *extra):
        return subprocess.run([sys.executable, gen, "--gold", gold, "--predictions", preds, "--docs", str(docs),
                               "--out-dataset", os.path.join(tmp, out), "--out-predictions",
                               os.path.join(tmp, out + ".txt"), *extra], capture_output=True, text=True)

    try:
        gold = write("x_allkeywords.txt", GOLD)
        preds = write("preds.txt", PREDS)
        r = gen_run(gold, preds, 5, "tagged")
        if r.returncode != 0:
            sys.exit("gen_copies.py failed (%d): %s" % (r.returncode, r.stderr))
        got_gold = open(os.path.join(tmp, "tagged", "x_allkeywords.txt"), newline="").read()
        got_preds = open(os.path.join(tmp, "tagged.txt"), newline="").read()
        if got_gold != WANT_GOLD:
            failures.append("tagged gold:\n%r\nexpected:\n%r" % (got_gold, WANT_GOLD))
        if got_preds != WANT_PREDS:
            failures.append("tagged predictions:\n%r\nexpected:\n%r" % (got_preds, WANT_PREDS))
        r = gen_run(gold, preds, 5, "plain", "--no-tags")
        if r.returncode != 0:
            sys.exit("gen_copies.py --no-tags failed (%d): %s" % (r.returncode, r.stderr))

        def exact(out):
            r = subprocess.run([kplab, "eval", "--dataset", os.path.join(tmp, out), "--predictions",
                                os.path.join(tmp, out + ".txt"), "--metrics", "exact", "--no-store",
                                "--db", os.path.join(tmp, "unused.db"), "--output", "csv"],
                               capture_output=True, text=True, cwd=tmp)
            if r.returncode != 0:
                sys.exit("kplab eval on %s failed (%d): %s" % (out, r.returncode, r.stderr))
            return {row["metric"]: float(row["value"]) for row in csv.DictReader(io.StringIO(r.stdout))}

        tagged, plain = exact("tagged"), exact("plain")
        # Copy documents 1 and 2 by hand (kplab profile): document 1 has refs {graph algorithm, forest,
        # tree} and predictions graph algorithm (hit), forests (hit; "graph algorithms" is a repeat of
        # the first and dropped) -> 2 hits of 2; document 2: refs {cloud computing}, prediction cloud
        # (miss). Over 5 documents: P@M micro = (2+0+2+0+2) / (2+1+2+1+2) = 6/8.
        if abs(tagged.get("all.p@M.micro", -1) - 0.75) > 1e-12:
            failures.append("tagged all.p@M.micro = %r (expected 6/8 = 0.75)" % tagged.get("all.p@M.micro"))
        if tagged != plain:
            diff = sorted(k for k in set(tagged) | set(plain) if tagged.get(k) != plain.get(k))
            failures.append("--metrics exact: tagged and plain copies differ in %s" % diff)

        # Hostile inputs: exact messages, exit status, nothing written.
        cases = [
            ("tag-form token", write("c_allkeywords.txt", "a;b\nx COPY7 y;z\n"), preds, 2, 1,
             "gen_copies.py: %s:2: token 'COPY7' has the form of a copy tag (expected no token copy<digits>: "
             "tagged copies would collide with it)\n" % os.path.join(tmp, "c_allkeywords.txt")),
            ("misaligned", gold, write("short.txt", "a\n"), 2, 1,
             "gen_copies.py: %s: 1 lines but %s has 2 (expected aligned files, one line per document)\n"
             % (os.path.join(tmp, "short.txt"), gold)),
            ("CR line end", write("cr_allkeywords.txt", "a;b\r\nc\n"), preds, 2, 1,
             "gen_copies.py: %s:1: carriage return (expected LF line ends)\n" % os.path.join(tmp, "cr_allkeywords.txt")),
        ]
        for i, (what, g, p, docs, status, want) in enumerate(cases):
            out = "bad%d" % i
            r = gen_run(g, p, docs, out)
            if r.returncode != status or r.stderr != want:
                failures.append("%s: exit %d, stderr %r (expected exit %d, %r)" % (what, r.returncode, r.stderr, status, want))
            if os.path.exists(os.path.join(tmp, out + ".txt")) or os.path.exists(os.path.join(tmp, out)):
                failures.append("%s: output written despite the error" % what)
        r = gen_run(gold, preds, 0, "zero")
        if r.returncode != 2 or "--docs must be >= 1 (kplab refuses a dataset without documents)" not in r.stderr:
            failures.append("--docs 0: exit %d, stderr %r" % (r.returncode, r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 1
    print("gen_copies.py: tagged bytes, exact-metric invariance and 4 hostile inputs as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
