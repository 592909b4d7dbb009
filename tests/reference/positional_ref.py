#!/usr/bin/python3
"""Independent reference for the positional analysis of seed 001 §5.5 (Table 3, Figure 4), written from
docs/calibration.md, for tests/host/calib_script_test.cc. Needs nltk (Debian's /usr/bin/python3).

For each Meng-2017 dataset: the source line lower-cased and split on whitespace; the "<eos>" token
separates the title from the body and is not part of the text. The text is the remaining tokens joined
by single spaces. A reference (kplab profile: pieces of the ';'-split line, stripped, lower-cased,
non-empty, Porter-stemmed token by token, deduplicated by stem sequence) is present when its stem
sequence occurs contiguously within the title or within the body; its position is the character offset
(code points) of its first occurrence in the text; its section is offset * bins // len(text). A
prediction (same normalisation, '<peos>' pieces and pieces with an '<unk>' token dropped) hits a
reference when their stem sequences are equal.

usage: positional_ref.py DATA_DIR SYSTEM FILE BINS DATASET... -> TSV like positional.lua's
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kpref import KplabProfile  # noqa: E402  (nltk Porter stemming and the kplab profile's pieces)


def first_occurrence(seq, fields):
    """Global token index of the first contiguous occurrence of seq inside one field, or None."""
    base = 0
    for f in fields:
        n = len(seq)
        for i in range(len(f) - n + 1):
            if f[i:i + n] == seq:
                return base + i
        base += len(f)
    return None


def main(argv):
    data, system, fname, bins = argv[0], argv[1], argv[2], int(argv[3])
    prof = KplabProfile("meng")
    print("dataset\tsection\tgold_present\tpredicted")
    for ds in argv[4:]:
        root = os.path.join(data, "kpg_testsets_meng2017", ds)
        kw_path = [os.path.join(root, f) for f in os.listdir(root) if f.endswith("_allkeywords.txt")][0]
        if ds == "kp20k":
            ctx_path = os.path.join(data, "kp20k_test_first1000", "test_src.txt")
        else:
            ctx_path = [os.path.join(root, f) for f in os.listdir(root) if f.endswith("_context.txt")][0]
        ctx = open(ctx_path, encoding="utf-8").read().split("\n")
        kws = open(kw_path, encoding="utf-8").read().split("\n")
        preds = open(os.path.join(data, "predictions", system, ds, fname), encoding="utf-8").read().split("\n")
        count = [0] * bins
        hit = [0] * bins
        for d, line in enumerate(ctx):
            if d >= len(kws) or (line == "" and d == len(ctx) - 1):
                continue
            raw_fields = [[]]
            for t in line.lower().split():
                if t == "<eos>":
                    raw_fields.append([])
                else:
                    raw_fields[-1].append(t)
            words = [t for f in raw_fields for t in f]
            text = " ".join(words)
            starts, pos = [], 0
            for w in words:
                starts.append(pos)
                pos += len(w) + 1
            stem_fields = prof.source(line)
            pred_keys = {k.key for k in prof.predictions(preds[d])}
            for ref in prof.references(kws[d]):
                if ref.is_empty():
                    continue
                i = first_occurrence(ref.toks, stem_fields)
                if i is None:
                    continue
                b = min(starts[i] * bins // len(text), bins - 1)
                count[b] += 1
                if ref.key in pred_keys:
                    hit[b] += 1
        for b in range(bins):
            print(f"{ds}\t{b + 1}\t{count[b]}\t{hit[b]}")


if __name__ == "__main__":
    main(sys.argv[1:])
