#!/usr/bin/python3
"""Peer for benchmark (i): stem every token of the shared test sets with nltk, as the peer scripts do.

Two modes:

  peer_stem.py --write-tokens OUT [--data DIR]
      Build the benchmark's token stream from the shared data and write it to OUT, one token a line:
      the whitespace-split tokens of kpg_testsets_meng2017/*/word_*_testing_context.txt, of
      kpg_testsets_meng2017/*/word_*_testing_allkeywords.txt (each line split on ';', then each piece
      on whitespace) and of kp20k_test_first1000/test_src.txt, in that order (files sorted by path).

  peer_stem.py --tokens FILE [--stems OUT]
      Read FILE (one token a line), call nltk's PorterStemmer().stem on every token -- no memo, one
      call per token, like the peer scripts -- and write the stems, one a line, to OUT (default stdout).
      The stemming loop alone is timed with time.perf_counter(); one line goes to stderr:
          peer_stem tokens=N seconds=S tokens_per_s=R
      The whole process (start-up, nltk import, I/O) is timed from outside by scripts/bench.sh.

Needs Debian's /usr/bin/python3 with python3-nltk 3.8.
"""
import argparse
import glob
import os
import sys
import time


def token_stream(data):
    meng = os.path.join(data, "kpg_testsets_meng2017")
    for path in sorted(glob.glob(os.path.join(meng, "*", "word_*_testing_context.txt"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                yield from line.split()
    for path in sorted(glob.glob(os.path.join(meng, "*", "word_*_testing_allkeywords.txt"))):
        with open(path, encoding="utf-8") as f:
            for line in f:
                for piece in line.split(";"):
                    yield from piece.split()
    with open(os.path.join(data, "kp20k_test_first1000", "test_src.txt"), encoding="utf-8") as f:
        for line in f:
            yield from line.split()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=os.environ.get("KPLAB_SHARED_DATA", "/work/shared/data"))
    ap.add_argument("--write-tokens", metavar="OUT")
    ap.add_argument("--tokens", metavar="FILE")
    ap.add_argument("--stems", metavar="OUT")
    a = ap.parse_args()

    if a.write_tokens:
        n = 0
        with open(a.write_tokens, "w", encoding="utf-8") as out:
            for tok in token_stream(a.data):
                out.write(tok)
                out.write("\n")
                n += 1
        print("tokens=%d" % n, file=sys.stderr)
        return
    if not a.tokens:
        ap.error("give --write-tokens OUT or --tokens FILE")

    from nltk.stem import PorterStemmer  # default mode NLTK_EXTENSIONS, to_lowercase=True

    with open(a.tokens, encoding="utf-8") as f:
        tokens = f.read().split("\n")
    if tokens and tokens[-1] == "":
        tokens.pop()

    stemmer = PorterStemmer()
    stem = stemmer.stem
    t0 = time.perf_counter()
    stems = [stem(t) for t in tokens]
    dt = time.perf_counter() - t0

    out = open(a.stems, "w", encoding="utf-8") if a.stems else sys.stdout
    out.write("\n".join(stems))
    out.write("\n")
    if a.stems:
        out.close()
    print("peer_stem tokens=%d seconds=%.6f tokens_per_s=%.1f" % (len(tokens), dt, len(tokens) / dt),
          file=sys.stderr)


if __name__ == "__main__":
    main()
