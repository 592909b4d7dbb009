#!/usr/bin/python3
"""Independent reference for the reformulation filters of tests/host/homog_test.cc.

Reads reformulations.jsonl and prints, per pair: id, words of the original and of the reformulation,
present gold keyphrases of the original and how many are lost (neither Present nor Reordered in the
reformulation), WER and ROUGE-1 recall. Written from the paper (Houbre et al., section 3.3.1) and
docs/homogeneity.md with nltk only: sentences split after . ? ! followed by whitespace, nltk's
NLTKWordTokenizer, lower-cased; a word is a token with a letter or digit; keyphrases tokenized the
same way and matched on Porter stems; WER = nltk.edit_distance(reformulation, original) / |original|;
ROUGE-1 recall = clipped unigram overlap / |original|.
Run: /usr/bin/python3 tests/data/homog/peer_reformulations.py tests/data/homog/reformulations.jsonl
"""
import json
import re
import sys
from collections import Counter

import nltk
from nltk.stem import PorterStemmer
from nltk.tokenize import NLTKWordTokenizer

TOK = NLTKWordTokenizer()
STEM = PorterStemmer()


def tokens(text):
    out = []
    for sent in re.split(r"(?<=[.?!])\s+", text):
        out += [t.lower() for t in TOK.tokenize(sent)]
    return out


def is_word(t):
    return any(c.isalnum() for c in t)


def contiguous(seq, sub):
    return any(seq[i:i + len(sub)] == sub for i in range(len(seq) - len(sub) + 1))


for line in open(sys.argv[1], encoding="utf-8"):
    p = json.loads(line)
    o_tok, r_tok = tokens(p["original"]), tokens(p["reformulation"])
    o_st, r_st = [STEM.stem(t) for t in o_tok], [STEM.stem(t) for t in r_tok]
    present, lost = 0, 0
    for kp in p["keyphrases"]:
        ks = [STEM.stem(t) for t in tokens(kp)]
        if not contiguous(o_st, ks):
            continue
        present += 1
        if not (contiguous(r_st, ks) or all(s in r_st for s in ks)):
            lost += 1
    ow = [t for t in o_tok if is_word(t)]
    rw = [t for t in r_tok if is_word(t)]
    wer = nltk.edit_distance(rw, ow) / len(ow)
    rc, hc = Counter(ow), Counter(rw)
    rouge = sum(min(n, hc[w]) for w, n in rc.items()) / len(ow)
    keep = lost == 0 and abs(len(rw) - len(ow)) <= 0.1 * len(ow) + 1e-9
    print(p["id"], len(ow), len(rw), present, lost, f"{wer:.12f}", f"{rouge:.12f}", "keep" if keep else "drop")
