#!/usr/bin/env python3
"""Writes a large phrase-cache input for bench/cache_bench.sh: COPIES copies of a meng-format gold
file and its predictions, every keyphrase of copy c ending in the token "c<c>" (e.g. "neural network
c17"), so each copy brings about as many new distinct phrases as the original (85,650 for KP20k gold +
catSeqTG-2RF1 seed 1234, profile kplab; 12 copies give 1,027,778).

usage: gen_phrases.py GOLD PREDICTIONS OUTDIR [COPIES]
writes OUTDIR/data/bench_allkeywords.txt (the dataset: a meng directory) and OUTDIR/predictions.txt.
Generated data: write it to a temporary directory, never into the repository.
"""
import os
import sys


def is_marker(kp):
    # A lone special token such as <peos> (a separator of predictions, not a keyphrase).
    kp = kp.strip()
    return kp.startswith("<") and kp.endswith(">") and " " not in kp


def tagged(line, tag):
    # Keyphrases are ';'-separated; an empty line (no keyphrase) stays empty, and tokens such as
    # <peos> stay in place so the predictions keep their shape.
    line = line.rstrip("\n")
    if not line:
        return line
    return ";".join(kp if not kp.strip() or is_marker(kp) else kp + " " + tag for kp in line.split(";"))


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__)
    gold_path, pred_path, out = argv[1], argv[2], argv[3]
    copies = int(argv[4]) if len(argv) == 5 else 12
    if copies < 1:
        sys.exit("gen_phrases.py: COPIES must be at least 1 (got %d)" % copies)
    with open(gold_path, encoding="utf-8") as f:
        gold = f.readlines()
    with open(pred_path, encoding="utf-8") as f:
        pred = f.readlines()
    if len(gold) != len(pred):
        sys.exit("gen_phrases.py: %s has %d lines, %s has %d (expected one line per document in both)"
                 % (gold_path, len(gold), pred_path, len(pred)))
    os.makedirs(os.path.join(out, "data"), exist_ok=True)
    with open(os.path.join(out, "data", "bench_allkeywords.txt"), "w", encoding="utf-8") as g, \
            open(os.path.join(out, "predictions.txt"), "w", encoding="utf-8") as p:
        for c in range(copies):
            tag = "c%d" % c
            for line in gold:
                g.write(tagged(line, tag) + "\n")
            for line in pred:
                p.write(tagged(line, tag) + "\n")


if __name__ == "__main__":
    main(sys.argv)
