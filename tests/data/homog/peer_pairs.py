#!/usr/bin/python3
"""Independent reference for pair mining on a Meng-2017 gold file (tests/host/homog_test.cc).

Each line of word_<ds>_testing_allkeywords.txt is a document's gold, ';'-separated; a keyphrase is its
piece with whitespace runs collapsed and stripped (empty pieces dropped; the file is lower-cased and
tokenized already). Every pair of documents sharing a keyphrase (inverted index) is checked:
Jaccard = |A & B| / |A | B| >= theta, as exact fractions. Prints the pairs with Jaccard >= theta, the
pairs among them with identical sets, the pairs and unique documents without those, and the number of
distinct keyphrases shared by a kept pair.
Run: /usr/bin/python3 tests/data/homog/peer_pairs.py ../shared/data/kpg_testsets_meng2017/kp20k/word_kp20k_testing_allkeywords.txt 0.5
"""
import sys
from collections import defaultdict
from fractions import Fraction

path, theta = sys.argv[1], Fraction(sys.argv[2])
sets = []
for line in open(path, encoding="utf-8"):
    kps = {" ".join(p.split()) for p in line.rstrip("\n").split(";")}
    kps.discard("")
    sets.append(kps)
index = defaultdict(list)
for i, s in enumerate(sets):
    for k in s:
        index[k].append(i)
cands = set()
for docs in index.values():
    for x in range(len(docs)):
        for y in range(x + 1, len(docs)):
            cands.add((docs[x], docs[y]))
found = [(a, b) for a, b in cands if Fraction(len(sets[a] & sets[b]), len(sets[a] | sets[b])) >= theta]
kept = [(a, b) for a, b in found if sets[a] != sets[b]]
docs = {d for p in kept for d in p}
shared = set().union(*(sets[a] & sets[b] for a, b in kept)) if kept else set()
print(f"found {len(found)} identical {len(found) - len(kept)} kept {len(kept)} docs {len(docs)} shared {len(shared)}")
