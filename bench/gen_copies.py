#!/usr/bin/env python3
"""Synthetic data for the million-document target: N documents of tagged copies of a Meng-2017 keyphrase set.

    gen_copies.py --gold KEYWORDS --predictions PREDS --docs N --out-dataset DIR --out-predictions FILE

Document j (0-based) is copy c = j // D of source document i = j % D (D = the source's line count):
copies 0, 1, 2, ... in turn until N documents are written, the last copy possibly partial. Every
keyphrase of copy c, in the gold line and in the prediction line alike, gets the token " copy<c>"
appended ("feedback vertex set" -> "feedback vertex set copy17"), so that a copy is not the same
document as another (no phrase is shared across copies: the corpus has as many distinct phrases as
real data of that size would roughly have) while matching inside a copy behaves as in the original:
appending the same token to both sides keeps exact (stem-key) equality and inequality, and a token
ending in a digit stems to itself under Porter (every suffix rule ends in a letter), so no other
token's stem changes.

The tag is "copy<c>", not the shorter "c<c>": KP20k has tokens c1, c4, c14, c63 ... of its own, and
a tag equal to a token inside a phrase changes word-level containment for that copy only ("x" is not
contained in "x c1 y" but "x c1" is contained in "x c1 y c1"), so copies would stop giving identical
numbers. The generator refuses inputs that have a token copy<digits> (any case) for the same reason.

What is not tagged, so that the document keeps its meaning under every profile:
  * empty or whitespace-only pieces (a trailing ";", an empty line): tagged they would become a
    keyphrase "c17" where the original has none;
  * the one2seq marker "<peos>" (compared stripped and lower-cased, as kplab's corpus does): tagged it
    would stop being the marker and become a (never matching) prediction.

Containment-based metrics (alpha-NDCG's word-level coverage, R-precision's substring / PARTOF /
INCLUDES rules) are not preserved: "vertex set" is contained in "feedback vertex set" but
"vertex set c0" is no longer contained in "feedback vertex set c0" when the shorter phrase is not a
suffix. bench/README.md ("Scale") says how much that moves the aggregates.

The dataset is written as DIR/<basename of KEYWORDS> (the Meng-2017 name, e.g.
word_kp20k_testing_allkeywords.txt, which `kplab eval --dataset DIR` recognises as the meng format);
the predictions as FILE, one line per document, aligned. --no-tags writes plain copies (for checks).
Inputs must be UTF-8 with LF line ends and the two files must have the same number of lines; any
problem is reported as FILE:LINE: what is wrong, exit 1, and nothing is left half-written.
Standard library only.
"""
import argparse
import os
import re
import sys

TAG_TOKEN = re.compile(r"(?:^|[\s;])copy[0-9]+(?=[\s;]|$)", re.IGNORECASE)


class InputError(Exception):
    pass


def read_lines(path):
    """Lines as kplab reads them (formats.md): split at LF, a final LF does not start a line."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError("%s:%d: invalid UTF-8 (expected a UTF-8 text file)" % (path, line))
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        if "\r" in line:
            raise InputError("%s:%d: carriage return (expected LF line ends)" % (path, n))
    for n, line in enumerate(lines, 1):
        m = TAG_TOKEN.search(line)
        if m:
            raise InputError("%s:%d: token %r has the form of a copy tag (expected no token "
                             "copy<digits>: tagged copies would collide with it)" % (path, n, m.group(0).strip(" ;\t")))
    return lines


def segments(line):
    """The line cut after every taggable piece: tag.join(segments) is the tagged line."""
    out = []
    start = 0
    pos = 0
    for piece in line.split(";"):
        end = pos + len(piece)
        stripped = piece.strip()
        if stripped and stripped.lower() != "<peos>":
            out.append(line[start:end])
            start = end
        pos = end + 1  # past the ';'
    out.append(line[start:])
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", required=True, help="Meng-2017 keywords file (kp1;kp2;... per line)")
    ap.add_argument("--predictions", required=True, help="aligned prediction lines")
    ap.add_argument("--docs", required=True, type=int, help="number of documents to write (>= 1)")
    ap.add_argument("--out-dataset", required=True, help="directory for the keywords file (created)")
    ap.add_argument("--out-predictions", required=True, help="predictions file to write")
    ap.add_argument("--no-tags", action="store_true", help="plain copies, no copy tag")
    a = ap.parse_args(argv)
    if a.docs < 1:
        ap.error("--docs must be >= 1 (kplab refuses a dataset without documents)")
    try:
        gold = read_lines(a.gold)
        preds = read_lines(a.predictions)
        if not gold:
            raise InputError("%s: no lines (expected one keyphrase line per document)" % a.gold)
        if len(preds) != len(gold):
            raise InputError("%s: %d lines but %s has %d (expected aligned files, one line per document)"
                             % (a.predictions, len(preds), a.gold, len(gold)))
    except InputError as e:
        print("gen_copies.py: %s" % e, file=sys.stderr)
        return 1

    gold_seg = [segments(l) for l in gold]
    pred_seg = [segments(l) for l in preds]
    os.makedirs(a.out_dataset, exist_ok=True)
    gold_out = os.path.join(a.out_dataset, os.path.basename(a.gold))
    written = []
    try:
        for path, segs in ((gold_out, gold_seg), (a.out_predictions, pred_seg)):
            tmp = path + ".part"
            written.append(tmp)
            with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                left, c = a.docs, 0
                while left > 0:
                    n = min(left, len(segs))
                    tag = "" if a.no_tags else " copy%d" % c
                    f.write("\n".join(tag.join(s) for s in segs[:n]))
                    f.write("\n")
                    left -= n
                    c += 1
        for path in (gold_out, a.out_predictions):
            os.replace(path + ".part", path)
    except OSError as e:
        for tmp in written:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        print("gen_copies.py: %s: %s" % (e.filename or "output", e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
