#!/usr/bin/python3
"""PRMU reference: Present / Reordered / Mixed / Unseen of every reference keyphrase of a Hulth
(Inspec) directory, as boudinfl/redefining-absent-keyphrases `src/trec_to_prmu.py::pmru_uw` defines them.

boudinfl's procedure (read from the peer's code, not copied):
  * title, text and every keyphrase are tokenized with nltk's word_tokenize, each token lower-cased
    and Porter-stemmed (nltk PorterStemmer, default NLTK_EXTENSIONS mode);
  * Present  if the keyphrase's stem sequence occurs contiguously in the title or in the text
    (a match may not span the two); an empty keyphrase is Present (an empty slice is "contained");
  * otherwise Reordered if every stem occurs somewhere in title or text, Mixed if some do, Unseen
    if none.

Deviation forced by the environment (and identical to kplab's documented WordTokenize, docs/text.md):
`nltk.word_tokenize` needs the punkt model, which Debian does not ship, so sentences are split with
kplab's rule (after '.', '?' or '!' followed by whitespace) imported from scripts/gen_text_golden.py,
and each sentence goes through nltk's NLTKWordTokenizer. Tokenization happens on the original-case
text (as boudinfl does), lower-casing afterwards.

Input layout (docs/formats.md, "hulth"): physical lines starting with a tab continue the previous
logical line (the wrap becomes one space); the first logical line is the title, the others (joined
with '\\n') the text. Key file lines are joined with one space and split on ';'; pieces are stripped.
Empty pieces (none in Inspec Test .uncontr) are dropped, as kplab's profile drops them.

kplab deduplicates references by stem key (first occurrence wins); this script does the same with
its own key (the tuple of the word-tokenized stems), so the TSV lists each document's references as
kplab's corpus holds them. Categories do not depend on dedup (they are a function of the stems).

Usage:
  prmu_ref.py [--data DIR] [--out TSV] [--keys uncontr|contr]
Defaults: DIR = ../shared/data/inspec_hulth2003/Test, TSV = tests/conformance/expected_prmu/
inspec_test_uncontr.tsv. Prints the category totals and the count of keyphrases whose
word_tokenize tokens differ from Python .split() (what kplab uses for raw-text keyphrases).
"""

import argparse
import collections
import importlib.util
import hashlib
import os
import re
import sys

from nltk.stem import PorterStemmer

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

_spec = importlib.util.spec_from_file_location(
    "gen_text_golden", os.path.join(REPO, "scripts", "gen_text_golden.py"))
_golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_golden)
word_tokenize = _golden.kplab_word_tokenize   # sentence rule + nltk NLTKWordTokenizer

_stemmer = PorterStemmer()
_cache = {}


def lowercase_and_stem(words):
    out = []
    for w in words:
        w = w.lower()
        s = _cache.get(w)
        if s is None:
            s = _cache[w] = _stemmer.stem(w)
        out.append(s)
    return out


def contains(sub, seq):
    return any(seq[i:i + len(sub)] == sub for i in range(0, len(seq) - len(sub) + 1))


def prmu(title, text, kp):
    if contains(kp, title) or contains(kp, text):
        return "P"
    seen = sum(1 for w in kp if w in title or w in text)
    if seen == len(kp):
        return "R"
    return "M" if seen > 0 else "U"


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        data = f.read()
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l[:-1] if l.endswith("\r") else l for l in lines]


def logical_lines(lines):
    out = []
    for line in lines:
        if out and line.startswith("\t"):
            out[-1] = out[-1].rstrip(" \t") + " " + line.strip(" \t")
        else:
            out.append(line)
    return out


def read_keys(path):
    joined = ""
    for line in read_lines(path):
        joined = joined.rstrip(" \t")
        if joined:
            joined += " "
        joined += line.strip(" \t")
    if not joined:
        return []
    return [p.strip() for p in joined.split(";")]


def doc_ids(d):
    ids = [f[:-len(".abstr")] for f in os.listdir(d) if f.endswith(".abstr")]
    return sorted(ids, key=lambda x: (int(x) if x.isdigit() else float("inf"), x))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.normpath(
        os.path.join(REPO, "..", "shared", "data", "inspec_hulth2003", "Test")))
    ap.add_argument("--out", default=os.path.join(
        REPO, "tests", "conformance", "expected_prmu", "inspec_test_uncontr.tsv"))
    ap.add_argument("--keys", default="uncontr", choices=["uncontr", "contr"])
    a = ap.parse_args()

    totals = collections.Counter()
    totals_all = collections.Counter()      # before dedup (boudinfl's own counting)
    n_kp = n_kp_dedup = n_split_differs = n_split_differs_dedup = n_empty = 0
    n_cat_differs = 0
    differ_examples = []
    rows = []
    for doc_id in doc_ids(a.data):
        logical = logical_lines(read_lines(os.path.join(a.data, doc_id + ".abstr")))
        title_raw = logical[0] if logical else ""
        text_raw = "\n".join(logical[1:])
        title = lowercase_and_stem(word_tokenize(title_raw))
        text = lowercase_and_stem(word_tokenize(text_raw))
        seen = set()
        for piece in read_keys(os.path.join(a.data, doc_id + "." + a.keys)):
            if not piece:
                n_empty += 1
                continue
            toks = word_tokenize(piece)
            stems = lowercase_and_stem(toks)
            cat = prmu(title, text, stems)
            n_kp += 1
            totals_all[cat] += 1
            split_toks = piece.lower().split()
            differs = [t.lower() for t in toks] != split_toks
            n_split_differs += differs
            key = tuple(stems)
            if key in seen:
                continue
            seen.add(key)
            n_kp_dedup += 1
            n_split_differs_dedup += differs
            totals[cat] += 1
            # The keyphrase is stored as the first 16 hex digits of the SHA-256 of its lower-cased text,
            # so no benchmark text is copied into the repository.
            rows.append((doc_id, hashlib.sha256(piece.lower().encode("utf-8")).hexdigest()[:16], cat))
            if differs:
                # what a classification with .split() keyphrase tokens would give
                cat_split = prmu(title, text, lowercase_and_stem(split_toks))
                if cat_split != cat:
                    n_cat_differs += 1
                    if len(differ_examples) < 15:
                        differ_examples.append((doc_id, piece, toks, cat, cat_split))

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8", newline="\n") as f:
        f.write("# PRMU of the deduplicated references (tests/reference/prmu_ref.py on %s, .%s)\n"
                % ("inspec_hulth2003/" + os.path.basename(os.path.normpath(a.data)), a.keys))
        f.write("doc_id\tkeyphrase_sha256_16\tcategory\n")
        for r in rows:
            assert "\t" not in r[1] and "\n" not in r[1]
            f.write("\t".join(r) + "\n")

    print("wrote %s" % os.path.relpath(a.out, REPO))
    print("keyphrases: %d (empty pieces dropped: %d), after stem-key dedup: %d" % (n_kp, n_empty, n_kp_dedup))
    print("totals (dedup):    " + "  ".join("%s=%d" % (c, totals[c]) for c in "PRMU"))
    print("totals (no dedup): " + "  ".join("%s=%d" % (c, totals_all[c]) for c in "PRMU"))
    print("word_tokenize(kp) != kp.lower().split(): %d of %d (dedup: %d of %d)"
          % (n_split_differs, n_kp, n_split_differs_dedup, n_kp_dedup))
    print("  of which the PRMU category would change with .split() tokens: %d" % n_cat_differs)
    for ex in differ_examples:
        print("   %s\t%r\t%s\tref=%s split=%s" % ex)
    return 0


if __name__ == "__main__":
    sys.exit(main())
