#!/usr/bin/python3
"""nltk 3.8's WordNet synonym sets of every keyphrase word of the shared data, as hashes, for
WordNet.AgreesWithNltkOnSharedData (tests/core/textmetrics_test.cc).

The words: every distinct whitespace token of the `;`-pieces of
kpg_testsets_meng2017/{inspec,krapivin,kp20k,semeval}/word_*_testing_allkeywords.txt and
predictions/catSeqTG-2RF1/{inspec,krapivin,kp20k,semeval}/seed1234.txt, sorted (code point order); each
word, then its Porter stem (nltk's default mode). For each, what METEOR's synonym stage asks
(meteor_score._enum_wordnetsyn_match): the lemma names without '_' of wordnet.synsets(x), sorted, without
repeats. Line k of the output is the SHA-256 (first 16 hex digits) of the entries of words 100k to
100k + 99, each entry "x<TAB>name name ...<LF>" — only hashes, so no benchmark text is copied into the
repository.

nltk reads Debian's wordnet-base (/usr/share/wordnet) through a temporary nltk_data folder with the
`lexnames` file nltk wants and Debian lacks (written as kpeval_text_peers.py writes it).

Usage: gen_wordnet_golden.py [--shared DIR]   writes tests/data/wordnet/synonyms_sha256.txt
"""
import argparse
import glob
import hashlib
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import kpeval_text_peers  # noqa: E402  (install_nltk_data)

CHUNK = 100


def words(shared):
    files = sorted(glob.glob(os.path.join(shared, "kpg_testsets_meng2017", "*", "word_*_testing_allkeywords.txt")) +
                   glob.glob(os.path.join(shared, "predictions", "catSeqTG-2RF1", "*", "seed1234.txt")))
    assert len(files) == 8, files
    out = set()
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                for piece in line.rstrip("\n").split(";"):
                    out.update(piece.split())
    return sorted(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(REPO), "shared", "data"))
    args = ap.parse_args()
    kpeval_text_peers.install_nltk_data(tempfile.mkdtemp())
    from nltk.corpus import wordnet
    from nltk.stem.porter import PorterStemmer
    stemmer = PorterStemmer()
    entries = []
    for w in words(args.shared):
        for x in (w, stemmer.stem(w)):
            names = sorted(set(l.name() for s in wordnet.synsets(x) for l in s.lemmas() if l.name().find("_") < 0))
            entries.append(x + "\t" + " ".join(names) + "\n")
    out = os.path.join(REPO, "tests", "data", "wordnet", "synonyms_sha256.txt")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        for k in range(0, len(entries), 2 * CHUNK):
            f.write(hashlib.sha256("".join(entries[k:k + 2 * CHUNK]).encode("utf-8")).hexdigest()[:16] + "\n")
    print("%d words, %d entries, %d hashes -> %s" % (len(entries) // 2, len(entries), (len(entries) + 2 * CHUNK - 1) // (2 * CHUNK), out))


if __name__ == "__main__":
    main()
