#!/usr/bin/python3
"""SemR-p computed the way its authors' standalone code does, as a Python reference and yardstick.

    semrp_ref.py --table TABLE [--phrases FILE] --gold KEYWORDS --predictions PREDS [--k 3]
                 [--per-doc FILE]

Written from the paper (Venturini et al., /work/shared/seeds/002_*, section 3, Eq. 1-2) and the
standalone behaviour kplab documents for its `semrp-standalone` profile (docs/profiles.md section 8),
not from the authors' source. Per document, in a plain Python loop:

  * keyphrases: the line split on ';', each piece stripped; empty pieces dropped; in a prediction
    line the piece "<peos>" (a one2seq generator's present/absent marker) dropped. No dedup: a
    repeated reference counts in R, a repeated prediction takes a rank of its own. The phrase
    looked up in the table is the piece's whitespace tokens joined by single spaces, case kept
    (what kplab embeds for a pretokenized dataset under `semrp-standalone`);
  * stems of a phrase: nltk's PorterStemmer().stem on each token of phrase.lower().split(), joined
    by spaces (no memo: the authors stem every call);
  * R = number of references; the top R predictions are scored one by one (Eq. 2's range):
    1.0 if the prediction's stems equal some reference's stems (step 1), else the mean of its
    min(k, R) largest cosines to the R references (Eq. 1; k = 3 by default, as the paper's
    experiments), cosines kept negative;
  * SemR-p = the sum of those scores / min(#predictions, R) -- the standalone code's mean over
    the top-R list it has, which is Eq. 2's 1/R when there are at least R predictions; 0 when
    R = 0 or there is no prediction.

Cosine(u, v) = u.v / (|u| |v|) in float64 over the table's float32 values (the values kplab
stores); a phrase whose vector is all zeros has no direction and gets cosine 0 with everything,
as in kplab (docs/embeddings.md) and as the authors' normalize-then-multiply gives. A phrase the
document needs that is not in the table is an error, as in kplab.

TABLE is what `kplab model import NAME TABLE --backend precomputed` reads: JSONL
({"phrase": ..., "vector": [...]} a line), TSV (phrase TAB v1 TAB v2 ...) or a 2-D float32/float64
.npy with --phrases FILE (row i = line i). Prints "all.semrp MEAN" (mean over every document, the
aggregate `kplab eval` reports) and "docs N"; --per-doc writes one value a line, in document order
(repr, round-trips exactly). Needs numpy and nltk (Debian python3-numpy, python3-nltk).
"""
import argparse
import json
import sys

import numpy as np
from nltk.stem.porter import PorterStemmer


class InputError(Exception):
    pass


def read_lines(path):
    """Lines as kplab reads them: split at LF, a final LF does not start an extra line."""
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
        raise InputError("%s:%d: invalid UTF-8 (expected a UTF-8 text file)"
                         % (path, data[: e.start].count(b"\n") + 1))
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [l[:-1] if l.endswith("\r") else l for l in lines]


def load_table(path, phrases_path):
    """phrase -> float32 row of one matrix (first occurrence wins, as kplab's importer)."""
    if path.endswith(".npy"):
        if not phrases_path:
            raise InputError("%s: a .npy table needs --phrases FILE (row i = line i)" % path)
        try:
            m = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise InputError("%s: not a readable .npy file: %s" % (path, e))
        if m.ndim != 2 or m.dtype not in (np.float32, np.float64):
            raise InputError("%s: expected a 2-D float32/float64 array (got %s %s)" % (path, m.dtype, m.shape))
        phrases = read_lines(phrases_path)
        if len(phrases) != m.shape[0]:
            raise InputError("%s: %d phrases but %s has %d rows (expected one phrase per row)"
                             % (phrases_path, len(phrases), path, m.shape[0]))
        matrix = m.astype(np.float32)
    else:
        phrases, rows = [], []
        tsv = path.endswith(".tsv") or path.endswith(".txt")
        for n, line in enumerate(read_lines(path), 1):
            if not line.strip():
                continue
            try:
                if tsv:
                    phrase, _, rest = line.partition("\t")
                    if not _:
                        raise ValueError("no tab (expected phrase TAB v1 TAB v2 ...)")
                    vec = [float(x) for x in rest.replace('"', " ").split()]
                else:
                    obj = json.loads(line)
                    phrase, vec = obj["phrase"], [float(x) for x in obj["vector"]]
            except (ValueError, KeyError, TypeError) as e:
                raise InputError("%s:%d: %s (expected a phrase and its vector)" % (path, n, e))
            if rows and len(vec) != len(rows[0]):
                raise InputError("%s:%d: %d values (expected %d, as on the first line)"
                                 % (path, n, len(vec), len(rows[0])))
            phrases.append(phrase)
            rows.append(vec)
        if not rows:
            raise InputError("%s: no vectors" % path)
        matrix = np.array(rows, dtype=np.float32)
    index = {}
    for i, p in enumerate(phrases):
        index.setdefault(p, i)
    return index, matrix


def keyphrases(line, drop_peos):
    out = []
    for piece in line.split(";"):
        phrase = " ".join(piece.split())
        if not phrase or (drop_peos and phrase == "<peos>"):
            continue
        out.append(phrase)
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", required=True)
    ap.add_argument("--phrases", help="phrase list of a .npy table, one a line")
    ap.add_argument("--gold", required=True, help="keywords file, kp1;kp2;... a line")
    ap.add_argument("--predictions", required=True, help="aligned prediction lines")
    ap.add_argument("--k", type=int, default=3, help="largest cosines averaged (Eq. 1's k; default 3)")
    ap.add_argument("--per-doc", help="write each document's SemR-p here, one a line")
    a = ap.parse_args(argv)
    if a.k < 1:
        ap.error("--k must be >= 1")
    try:
        index, matrix = load_table(a.table, a.phrases)
        gold = read_lines(a.gold)
        preds = read_lines(a.predictions)
        if len(gold) != len(preds):
            raise InputError("%s: %d lines but %s has %d (expected one line per document)"
                             % (a.predictions, len(preds), a.gold, len(gold)))
    except InputError as e:
        print("semrp_ref.py: %s" % e, file=sys.stderr)
        return 1

    stemmer = PorterStemmer()

    def stem_phrases(phrases):
        return [" ".join(stemmer.stem(t) for t in p.lower().split()) for p in phrases]

    def vectors(phrases, doc):
        rows = []
        for p in phrases:
            i = index.get(p)
            if i is None:
                raise InputError("%s: document %d: phrase %r is not in the table %s"
                                 % (a.gold, doc, p, a.table))
            rows.append(i)
        return matrix[rows].astype(np.float64)

    scores = []
    try:
        for d, (gline, pline) in enumerate(zip(gold, preds), 1):
            references = keyphrases(gline, False)
            predictions = keyphrases(pline, True)
            stemmed_refs = stem_phrases(references)  # first, as the standalone function does
            num_refs = len(references)
            top = predictions[:num_refs]
            if num_refs == 0 or not top:
                scores.append(0.0)
                continue
            individual = []
            pending, pending_at = [], []
            for i, ps in enumerate(stem_phrases(top)):
                if ps in stemmed_refs:
                    individual.append(1.0)
                else:
                    individual.append(None)
                    pending.append(top[i])
                    pending_at.append(i)
            if pending:
                pv, rv = vectors(pending, d), vectors(references, d)
                pn = np.sqrt(np.einsum("ij,ij->i", pv, pv))
                rn = np.sqrt(np.einsum("ij,ij->i", rv, rv))
                denom = np.outer(pn, rn)
                with np.errstate(invalid="ignore", divide="ignore"):
                    sim = np.where(denom > 0, (pv @ rv.T) / denom, 0.0)
                sim = np.clip(sim, -1.0, 1.0)
                kk = min(a.k, num_refs)
                for row, at in enumerate(pending_at):
                    individual[at] = float(np.mean(np.sort(sim[row])[::-1][:kk]))
            scores.append(sum(individual) / len(individual))
    except InputError as e:
        print("semrp_ref.py: %s" % e, file=sys.stderr)
        return 1

    mean = sum(scores) / len(scores) if scores else 0.0
    if a.per_doc:
        with open(a.per_doc, "w", encoding="utf-8") as f:
            f.write("".join(repr(s) + "\n" for s in scores))
    print("all.semrp %r" % mean)
    print("docs %d" % len(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
