#!/usr/bin/python3
"""kpref -- independent Python reference for kplab's evaluation profiles.

Written from docs/profiles.md (which was written from ANCHORS.md and a reading of the
peers' evaluation scripts).  No peer code was copied.  Readable over clever.

Usage:
  kpref.py --profile {kplab,kpeval,kenchan,exhird} [--one2set]
           --dataset-format {meng,one2set,kpeval}
           [--context FILE | --no-text] --keywords FILE --predictions FILE
           [--max-docs N]

Prints one JSON object: {"profile", "options", "n_docs", "n_docs_with_text", "aggregates"}.
Floats are printed with full precision (Python repr).
"""

import argparse
import json
import math
import sys

from nltk.stem import PorterStemmer

K_EXACT = [5, 10, "M", "O"]
K_RANK = [5, 10, "M"]
SUBSETS = ["all", "present", "absent"]
ALPHA = 0.5

# --------------------------------------------------------------------------------------
# stemming (nltk 3.8 PorterStemmer, default mode NLTK_EXTENSIONS), memoised
# --------------------------------------------------------------------------------------
_stemmer = PorterStemmer()
_stem_cache = {}


_no_stem = [False]   # references released stemmed (--refs-stemmed): matched as given


def stem(word):
    if _no_stem[0]:
        return word
    s = _stem_cache.get(word)
    if s is None:
        s = _stemmer.stem(word)
        _stem_cache[word] = s
    return s


# --------------------------------------------------------------------------------------
# keyphrase item
# --------------------------------------------------------------------------------------
class KP:
    """One keyphrase after a profile's preprocessing.

    toks: stemmed token sequence (used for present/absent and word-level matching)
    s:    the match string (exact matching = string equality; KPEval substring tests)
    key:  the dedup key
    """
    __slots__ = ("toks", "s", "key")

    def __init__(self, toks, s, key):
        self.toks = toks
        self.s = s
        self.key = key

    def is_empty(self):
        return all(t == "" for t in self.toks)


def dedup(items):
    seen = set()
    out = []
    for it in items:
        if it.key in seen:
            continue
        seen.add(it.key)
        out.append(it)
    return out


def occurs_in(seq, hay):
    """True if token list seq occurs contiguously in token list hay (seq non-empty)."""
    n, m = len(seq), len(hay)
    if n == 0 or n > m:
        return False
    first = seq[0]
    for i in range(m - n + 1):
        if hay[i] == first and hay[i:i + n] == seq:
            return True
    return False


# --------------------------------------------------------------------------------------
# profiles: source / keyphrase preprocessing
# --------------------------------------------------------------------------------------
def title_separator(fmt):
    return "[sep]" if fmt == "kpeval" else "<eos>"


class Profile:
    name = None
    # metric families
    pk_exhird = False          # P@k denominator k for every document (ExHiRD micro/macro)
    ap_den_min_rk = False      # AP@k denominator min(R, k) (kplab) instead of R
    ndcg_standard = False      # NDCG ideal = min(R,k) relevant items (else: own sorted vector)
    alpha_standard = False     # alpha-NDCG word-level relevance + ideal over refs+preds pool
    rprec_present_first = False

    def __init__(self, fmt, one2set=False, keywords_path="", refs_stemmed=False):
        self.fmt = fmt
        self.one2set = one2set
        self.keywords_path = keywords_path
        self.refs_stemmed = refs_stemmed

    def refs(self, line):
        """references(line), with stemming off when they are released stemmed (kenchan0226's
        -target_already_stemmed: the target tokens are used as split, everything else as usual)."""
        _no_stem[0] = self.refs_stemmed
        try:
            return self.references(line)
        finally:
            _no_stem[0] = False

    # returns list of fields (each a list of stemmed tokens); a match may not span fields
    def source(self, line):
        raise NotImplementedError

    def predictions(self, line):
        raise NotImplementedError

    def references(self, line):
        raise NotImplementedError

    def is_present(self, kp, fields):
        if kp.is_empty():
            return False
        return any(occurs_in(kp.toks, f) for f in fields)


class KplabProfile(Profile):
    name = "kplab"
    ap_den_min_rk = True
    ndcg_standard = True
    alpha_standard = True

    def source(self, line):
        sep = title_separator(self.fmt)
        toks = line.lower().split()
        fields = [[]]
        for t in toks:
            if t == sep:
                fields.append([])
            else:
                fields[-1].append(stem(t))
        return fields

    def _kp(self, piece):
        toks = [stem(t) for t in piece.split()]
        s = " ".join(toks)
        return KP(toks, s, tuple(toks))

    def _pieces(self, line):
        out = []
        for p in line.split(";"):
            p = p.strip().lower()
            if p:
                out.append(p)
        return out

    def predictions(self, line):
        items = []
        for p in self._pieces(line):
            if p == "<peos>":
                continue
            if "<unk>" in p.split():
                continue
            items.append(self._kp(p))
        return dedup(items)

    def references(self, line):
        return dedup([self._kp(p) for p in self._pieces(line)])


class KpevalProfile(Profile):
    name = "kpeval"
    rprec_present_first = True

    def source(self, line):
        sep = title_separator(self.fmt)
        src = line.strip().lower()
        if sep in src:
            parts = src.strip().split(sep)
            if len(parts) != 2:
                raise ValueError("kpeval profile: more than one title separator %r" % sep)
            title, body = parts
        else:
            title, body = "", src
        toks = title.strip().split(" ") + body.strip().split(" ")
        return [[stem(t.strip().lower()) for t in toks]]

    def _kps(self, line):
        items = []
        for r in line.strip().lower().split(";"):
            r = r.strip()
            r = r.replace(" ##", "")
            r = r.replace("[ digit ]", "[digit]")
            toks = [stem(t.strip().lower()) for t in r.split(" ")]
            items.append(KP(toks, " ".join(toks), "_".join(toks)))
        return items

    def predictions(self, line):
        # KPEval reads JSONL; a user converting a one2seq line file to it drops the generator's
        # present/absent marker '<peos>' (it is not a keyphrase). Line files only reach this reference.
        # KPEval passes invalidate_unk=True into disable_valid_filter: no validity filter.
        return dedup([kp for kp in self._kps(line) if kp.s != "<peos>"])

    def references(self, line):
        return dedup(self._kps(line))


class KenchanProfile(Profile):
    name = "kenchan"
    NUM_PREDS = 200

    def source(self, line):
        parts = line.strip().split("<eos>")
        if len(parts) != 2:
            raise ValueError("kenchan profile: source line needs exactly one '<eos>'")
        title, body = parts
        toks = title.strip().split(" ") + body.strip().split(" ")
        return [[stem(t.strip().lower()) for t in toks]]

    def _kp(self, piece):
        toks = [stem(t.strip().lower()) for t in piece.strip().split(" ")]
        return KP(toks, " ".join(toks), "_".join(toks))

    def predictions(self, line):
        pieces = line.strip().split(";")
        if self.one2set and pieces == [""]:
            pieces = []
        pieces = pieces[:self.NUM_PREDS]
        items = [self._kp(p) for p in pieces]
        # README: files with <peos> are evaluated with -prediction_separated, which drops
        # every piece whose first (stemmed) token is the segmenter; a no-op without <peos>.
        items = [it for it in items if it.toks[0] != "<peos>"]
        kept = []
        seen = set()
        for it in items:
            unique = it.key not in seen
            seen.add(it.key)
            valid = len(it.toks) > 0 and not any(t in ("<unk>", ",", ".") for t in it.toks)
            if unique and valid:
                kept.append(it)
        return kept

    def references(self, line):
        return dedup([self._kp(p) for p in line.strip().split(";")])


class ExhirdProfile(Profile):
    name = "exhird"
    pk_exhird = True
    ndcg_standard = True
    alpha_standard = True

    AP_SPLITTER = "<absent_end>"

    def source(self, line):
        return [[stem(w) for w in line.strip().split()]]

    @staticmethod
    def _pieces(line):
        line = line.replace("/", ";")
        line = line.replace("<eokp>", "")
        line = line.replace("<p_start>", ";")
        line = line.replace("<a_start>", ";")
        line = line.replace("<blank>", "")
        line = line.replace("<p_end>", ";")
        line = line.replace("<a_end>", ";")
        out = []
        for p in line.split(";"):
            if len(p.strip()) != 0:
                out.append(p.strip())
        return [p for p in out if p != ExhirdProfile.AP_SPLITTER]

    @staticmethod
    def _stemmed(piece):
        return " ".join(stem(w) for w in piece.split())

    def predictions(self, line):
        strs = [self._stemmed(p) for p in self._pieces(line)]
        strs = [s for s in strs if "<unk>" not in s]
        return dedup([KP(s.split(), s, s) for s in strs])

    def references(self, line):
        if "semeval" in self.keywords_path.lower():
            strs = self._pieces(line)          # SemEval gold is already stemmed
        else:
            strs = [self._stemmed(p) for p in self._pieces(line)]
        return dedup([KP(s.split(), s, s) for s in strs])


PROFILES = {
    "kplab": KplabProfile,
    "kpeval": KpevalProfile,
    "kenchan": KenchanProfile,
    "exhird": ExhirdProfile,
}


# --------------------------------------------------------------------------------------
# metrics for one (document, subset)
# --------------------------------------------------------------------------------------
def resolve_k(k, n, R):
    if k == "M":
        return n
    if k == "O":
        return R
    return k


def dcg(gains, cutoff):
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains[:cutoff]))


def alpha_gains(cover_cols, n_refs):
    """cover_cols: list (ranked) of sets of reference indices covered by each item."""
    counts = [0] * n_refs
    gains = []
    for col in cover_cols:
        g = 0.0
        for t in col:
            g += (1.0 - ALPHA) ** counts[t]
        for t in col:
            counts[t] += 1
        gains.append(g)
    return gains


def greedy_ideal_gains(pool, n_refs, depth):
    """Greedy alpha-DCG ideal: repeatedly take the unpicked candidate with the largest gain
    (lowest index on ties).  pool: list of sets of covered reference indices."""
    counts = [0] * n_refs
    picked = [False] * len(pool)
    gains = []
    for _ in range(min(depth, len(pool))):
        best, best_g = -1, None
        for j, col in enumerate(pool):
            if picked[j]:
                continue
            g = 0.0
            for t in col:
                g += (1.0 - ALPHA) ** counts[t]
            if best_g is None or g > best_g:
                best, best_g = j, g
        picked[best] = True
        for t in pool[best]:
            counts[t] += 1
        gains.append(best_g)
    return gains


def zg_match(p, g):
    if p.is_empty() or g.is_empty():
        return False
    return p.toks == g.toks or occurs_in(g.toks, p.toks) or occurs_in(p.toks, g.toks)


def substr_match(p, g):
    return g.s in p.s or p.s in g.s


def score_subset(prof, preds, refs, rprec_order):
    n, R = len(preds), len(refs)
    ref_strings = set(g.s for g in refs)
    r = [1 if p.s in ref_strings else 0 for p in preds]
    out = {}   # measure -> value ; plus counts for micro
    cnt = {}

    # ---- exact matching @k
    for k in K_EXACT:
        kk = resolve_k(k, n, R)
        if prof.pk_exhird:
            den = kk
            hits = sum(r[:kk])
            P = hits / den if den > 0 else 0.0
        elif n == 0:
            den, hits, P = 0, 0, 0.0
        else:
            den = kk
            hits = sum(r[:kk])
            P = hits / den if den > 0 else 0.0
        Rc = hits / R if R > 0 else 0.0
        F = 2 * P * Rc / (P + Rc) if P + Rc > 0 else 0.0
        out["p@%s" % k] = float(P)
        out["r@%s" % k] = float(Rc)
        out["f1@%s" % k] = float(F)
        cnt["hits@%s" % k] = hits
        cnt["pden@%s" % k] = den
    cnt["R"] = R

    # ---- ranking
    for k in K_RANK:
        kk = resolve_k(k, n, R)
        cut = min(kk, n)
        # AP@k
        if n == 0 or R == 0:
            ap = 0.0
        else:
            s, h = 0.0, 0
            for i in range(cut):
                if r[i]:
                    h += 1
                    s += h / (i + 1)
            ap = s / (min(R, kk) if prof.ap_den_min_rk else R)
        out["ap@%s" % k] = float(ap)

        # NDCG@k
        if n == 0:
            nd = 0.0
        elif prof.ndcg_standard:
            if R == 0:
                nd = 0.0
            else:
                idcg = dcg([1] * min(R, kk), min(R, kk))
                nd = dcg(r, cut) / idcg if idcg > 0 else 0.0
        else:
            ideal = sorted(r, reverse=True)
            idcg = dcg(ideal, cut)
            nd = dcg(r, cut) / idcg if idcg > 0 else 0.0
        out["ndcg@%s" % k] = float(nd)

        # alpha-NDCG@k
        if n == 0 or (prof.alpha_standard and R == 0):
            an = 0.0
        elif prof.alpha_standard:
            cols = [set(t for t, g in enumerate(refs) if not p.is_empty() and occurs_in(p.toks, g.toks))
                    for p in preds]
            ref_cols = [set(t for t, g in enumerate(refs) if occurs_in(c.toks, g.toks))
                        for c in refs]
            # pool = refs ++ the predictions whose stem sequence is not a reference's
            ref_seqs = set(tuple(g.toks) for g in refs)
            extra = [c for p, c in zip(preds, cols) if tuple(p.toks) not in ref_seqs]
            gains = alpha_gains(cols, R)
            igains = greedy_ideal_gains(ref_cols + extra, R, kk)
            idcg = dcg(igains, kk)
            an = dcg(gains, cut) / idcg if idcg > 0 else 0.0
        else:
            cols = [set(t for t, g in enumerate(refs) if p.s in g.s) for p in preds]
            gains = alpha_gains(cols, R)
            igains = greedy_ideal_gains(cols, R, n)
            idcg = dcg(igains, cut)
            an = dcg(gains, cut) / idcg if idcg > 0 else 0.0
        out["alpha_ndcg@%s" % k] = float(an)

    # ---- MRR
    mrr = 0.0
    for i, x in enumerate(r):
        if x:
            mrr = 1.0 / (i + 1)
            break
    out["mrr"] = mrr

    # ---- R-precision
    top = rprec_order[:R]
    if R == 0 or len(top) == 0:
        out["rprec_substr"] = 0.0
        out["rprec_zg"] = 0.0
    else:
        out["rprec_substr"] = sum(1 for p in top if any(substr_match(p, g) for g in refs)) / R
        out["rprec_zg"] = sum(1 for p in top if any(zg_match(p, g) for g in refs)) / R

    # ---- KPEval's substring precision / recall / F1 (approx_matching_metric.py::evaluate_single_example)
    sp = sum(1 for p in preds if any(substr_match(p, g) for g in refs)) / n if n else 0.0
    sr = sum(1 for g in refs if any(substr_match(p, g) for p in preds)) / R if R else 0.0
    out["substr_precision"] = sp
    out["substr_recall"] = sr
    out["substr_f1"] = 2 * sp * sr / (sp + sr) if sp * sr != 0 else 0.0
    return out, cnt


# --------------------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------------------
def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [l.rstrip("\n").rstrip("\r") for l in f]


def evaluate(prof, ctx_lines, kw_lines, pred_lines):
    per = {s: [] for s in SUBSETS}   # list of (out, cnt)
    for i in range(len(kw_lines)):
        preds = prof.predictions(pred_lines[i])
        refs = prof.refs(kw_lines[i])
        if ctx_lines is None:
            per["all"].append(score_subset(prof, preds, refs, preds))
            continue
        fields = prof.source(ctx_lines[i])
        pmask = [prof.is_present(p, fields) for p in preds]
        gmask = [prof.is_present(g, fields) for g in refs]
        pp = [p for p, m in zip(preds, pmask) if m]
        pa = [p for p, m in zip(preds, pmask) if not m]
        gp = [g for g, m in zip(refs, gmask) if m]
        ga = [g for g, m in zip(refs, gmask) if not m]
        order_all = pp + pa if prof.rprec_present_first else preds
        per["all"].append(score_subset(prof, preds, refs, order_all))
        per["present"].append(score_subset(prof, pp, gp, pp))
        per["absent"].append(score_subset(prof, pa, ga, pa))
    return per


def aggregate(per):
    agg = {}
    for s in SUBSETS:
        docs = per[s]
        if not docs:
            continue
        nd = len(docs)

        def mean(name):
            return sum(d[0][name] for d in docs) / nd

        for k in K_EXACT:
            hits = sum(d[1]["hits@%s" % k] for d in docs)
            pden = sum(d[1]["pden@%s" % k] for d in docs)
            rden = sum(d[1]["R"] for d in docs)
            mp = hits / pden if pden > 0 else 0.0
            mr = hits / rden if rden > 0 else 0.0
            agg["%s.p@%s.micro" % (s, k)] = float(mp)
            agg["%s.r@%s.micro" % (s, k)] = float(mr)
            agg["%s.f1@%s.micro" % (s, k)] = float(2 * mp * mr / (mp + mr)) if mp + mr > 0 else 0.0
            P = mean("p@%s" % k)
            R = mean("r@%s" % k)
            agg["%s.p@%s.macro" % (s, k)] = P
            agg["%s.r@%s.macro" % (s, k)] = R
            agg["%s.f1@%s.macro_hm" % (s, k)] = 2 * P * R / (P + R) if P + R > 0 else 0.0
            agg["%s.f1@%s.macro_doc" % (s, k)] = mean("f1@%s" % k)
        for k in K_RANK:
            agg["%s.map@%s" % (s, k)] = mean("ap@%s" % k)
            agg["%s.ndcg@%s" % (s, k)] = mean("ndcg@%s" % k)
            agg["%s.alpha_ndcg@%s" % (s, k)] = mean("alpha_ndcg@%s" % k)
        agg["%s.mrr" % s] = mean("mrr")
        agg["%s.rprec_substr" % s] = mean("rprec_substr")
        agg["%s.rprec_zg" % s] = mean("rprec_zg")
        for m in ("substr_precision", "substr_recall", "substr_f1"):
            agg["%s.%s" % (s, m)] = mean(m)
    return agg



# --------------------------------------------------------------------------------------
# hand-computed checks of the specification (run: kpref.py --self-test)
# --------------------------------------------------------------------------------------
def _run(profile, ctx, kws, preds, fmt="meng", one2set=False, kw_path="x.txt"):
    prof = PROFILES[profile](fmt, one2set=one2set, keywords_path=kw_path)
    return aggregate(evaluate(prof, ctx, kws, preds))


def self_test():
    L = math.log2
    close = lambda a, b: abs(a - b) < 1e-12
    # 1. kplab vs kpeval: title/body spanning, P@k denominators, AP, NDCG, MRR
    ctx, kws, prd = ["a b <eos> c d"], ["a b;c d;x y;b c"], ["b c;a b;zz;c d"]
    a = _run("kplab", ctx, kws, prd)
    assert close(a["all.p@5.macro"], 3 / 5) and close(a["all.p@M.macro"], 3 / 4)
    assert close(a["all.r@10.macro"], 3 / 4) and close(a["all.p@10.micro"], 3 / 10)
    assert close(a["all.map@5"], (1 + 1 + 3 / 4) / 4)
    idcg4 = 1 + 1 / L(3) + 1 / L(4) + 1 / L(5)
    assert close(a["all.ndcg@5"], (1 + 1 / L(3) + 1 / L(5)) / idcg4)
    assert close(a["all.mrr"], 1.0)
    # kplab: 'b c' spans the boundary -> absent; present refs {a b, c d}; present preds {a b, c d}
    assert close(a["present.p@M.macro"], 1.0) and close(a["present.r@M.macro"], 1.0)
    assert close(a["absent.r@M.macro"], 1 / 2)       # absent refs {x y, b c}, absent preds {b c, zz}
    b = _run("kpeval", ctx, kws, prd)
    assert close(b["present.r@M.macro"], 1.0) and close(b["present.p@M.macro"], 1.0)
    assert close(b["absent.r@M.macro"], 0.0)         # 'b c' is present for kpeval
    assert close(b["all.ndcg@M"], (1 + 1 / L(3) + 1 / L(5)) / (1 + 1 / L(3) + 1 / L(4)))
    assert close(b["all.map@M"], (1 + 1 + 3 / 4) / 4)
    # 2. exhird micro P@5: 5 x every document, also with no prediction
    e = _run("exhird", ["a <eos> b", "c <eos> d"], ["a", "c"], ["a", ""])
    assert close(e["all.p@5.micro"], 1 / 10) and close(e["all.p@M.micro"], 1.0)
    k = _run("kenchan", ["a <eos> b", "c <eos> d"], ["a", "c"], ["a", ""])
    assert close(k["all.p@5.micro"], 1 / 10)         # empty pred kept: den 5 for doc 2 too
    k1 = _run("kenchan", ["a <eos> b", "c <eos> d"], ["a", "c"], ["a", ""], one2set=True)
    assert close(k1["all.p@5.micro"], 1 / 5)         # one2set: no keyphrase, den 0
    kp = _run("kplab", ["a <eos> b", "c <eos> d"], ["a", "c"], ["a", ""])
    assert close(kp["all.p@5.micro"], 1 / 5)
    # 3. kpeval: an empty prediction matches every reference in rprec_substr, not in rprec_zg
    v = _run("kpeval", ["t <eos> u"], ["x y"], [""])
    assert close(v["all.rprec_substr"], 1.0) and close(v["all.rprec_zg"], 0.0)
    assert close(v["all.p@5.macro"], 0.0)
    # 4. <peos> in a line file: dropped by kplab, kenchan and kpeval, an absent keyphrase for exhird
    for prof, m in (("kplab", 2), ("kenchan", 2), ("kpeval", 2), ("exhird", 3)):
        r = _run(prof, ["a b <eos> c"], ["a;zz"], ["a;<peos>;zz"])
        assert close(r["all.p@M.macro"], 2 / m), prof
    # 5. alpha-NDCG: peer substring coverage, greedy ideal over predictions
    r = _run("kpeval", ["q <eos> r"], ["neural network;network"], ["network;neural network"])
    assert close(r["all.alpha_ndcg@M"], 1.0)
    # kplab: word-level coverage, ideal over refs ++ preds; preds (network, neural network):
    # network covers {network, neural network}: gain 2; neural network covers {neural network}: 0.5
    r = _run("kplab", ["q <eos> r"], ["neural network;network"], ["network;neural network"])
    assert close(r["all.alpha_ndcg@M"], 1.0)
    r = _run("kplab", ["q <eos> r"], ["neural network;network;deep learning"], ["network"])
    assert close(r["all.alpha_ndcg@M"], 2 / 2)        # depth 1: ideal takes 'network' (gain 2)
    assert close(r["all.alpha_ndcg@5"], 2 / (2 + 1 / L(3) + 0.5 / L(4)))
    # 6. exhird semeval rule: references not stemmed when the path names semeval
    r1 = _run("exhird", ["networks <eos> x"], ["networks"], ["networks"], kw_path="semeval/k.txt")
    r2 = _run("exhird", ["networks <eos> x"], ["networks"], ["networks"], kw_path="inspec/k.txt")
    assert close(r1["all.p@M.macro"], 0.0) and close(r2["all.p@M.macro"], 1.0)
    # 7. rprec present-first (kpeval) vs model order (kplab)
    ctx, kws, prd = ["a b <eos> c"], ["zz;a"], ["yy;ww;a"]
    assert close(_run("kpeval", ctx, kws, prd)["all.rprec_zg"], 0.5)   # order a, yy, ww -> top2 a, yy
    assert close(_run("kplab", ctx, kws, prd)["all.rprec_zg"], 0.0)    # top2 yy, ww
    print("self-test passed")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True, choices=sorted(PROFILES))
    ap.add_argument("--one2set", action="store_true",
                    help="kenchan only: kg_one2set behaviour (empty prediction line = no keyphrase)")
    ap.add_argument("--dataset-format", default="meng", choices=["meng", "one2set", "kpeval"])
    ap.add_argument("--context")
    ap.add_argument("--keywords", required=True)
    ap.add_argument("--predictions", required=True)
    ap.add_argument("--no-text", action="store_true", help="no source text: only the 'all' subset")
    ap.add_argument("--max-docs", type=int, default=None,
                    help="use only the first N lines of every input file")
    ap.add_argument("--refs-stemmed", action="store_true",
                    help="references are released stemmed: matched as given (not stemmed again)")
    ap.add_argument("--self-test", action="store_true", help="run the hand-computed checks")
    if argv is None and "--self-test" in sys.argv[1:]:
        self_test()
        return
    a = ap.parse_args(argv)

    if a.one2set and a.profile != "kenchan":
        ap.error("--one2set applies to the kenchan profile only")
    if not a.no_text and not a.context:
        ap.error("--context is required unless --no-text")

    kw = read_lines(a.keywords)
    pr = read_lines(a.predictions)
    ctx = None if a.no_text else read_lines(a.context)
    if a.max_docs is not None:
        for name, lines in (("keywords", kw), ("predictions", pr), ("context", ctx)):
            if lines is not None and len(lines) < a.max_docs:
                sys.exit("%s: only %d lines, --max-docs %d" % (name, len(lines), a.max_docs))
        kw, pr = kw[:a.max_docs], pr[:a.max_docs]
        ctx = ctx[:a.max_docs] if ctx is not None else None
    if len(kw) != len(pr) or (ctx is not None and len(ctx) != len(kw)):
        sys.exit("line counts differ: keywords %d, predictions %d, context %s"
                 % (len(kw), len(pr), "-" if ctx is None else len(ctx)))

    prof = PROFILES[a.profile](a.dataset_format, one2set=a.one2set, keywords_path=a.keywords,
                               refs_stemmed=a.refs_stemmed)
    per = evaluate(prof, ctx, kw, pr)
    result = {
        "profile": a.profile,
        "options": {"one2set": a.one2set, "dataset_format": a.dataset_format, "refs_stemmed": a.refs_stemmed,
                    "no_text": ctx is None, "max_docs": a.max_docs},
        "n_docs": len(kw),
        "n_docs_with_text": 0 if ctx is None else len(ctx),
        "aggregates": aggregate(per),
    }
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
