#!/usr/bin/env python3
"""A KPEval-style evaluation loop, and the same evaluation as one kplab.evaluate call.

Run from the repository root after building (scripts/setup.sh builds into build/):

    PYTHONPATH=build/python python3 examples/python/kpeval_loop.py

The first half is the loop evaluation repos write by hand: for each document, stem every word with
nltk's Porter stemmer, deduplicate, match predictions against references, compute P/R/F1@5 and
average. The second half replaces it with kplab.evaluate, which also gives ranking and semantic
metrics, per-document scores and a stored run. With sentence-transformers installed its model drives
the semantic metrics (registered with kplab.register_embedder); otherwise kplab's default model
(GloVe, installed by scripts/setup.sh) is used, or --toy-embedder uses a small hashing embedder that
needs nothing installed.
"""

import argparse
import hashlib
import math
import os
import sys

import kplab

HERE = os.path.dirname(os.path.abspath(__file__))
TINY = os.path.join(HERE, "..", "tiny")


def read_tiny():
    """examples/tiny as the Python lists an evaluation repo holds: documents and ranked predictions."""
    with open(os.path.join(TINY, "tiny_context.txt"), encoding="utf-8") as f:
        sources = f.read().splitlines()
    with open(os.path.join(TINY, "tiny_allkeywords.txt"), encoding="utf-8") as f:
        keywords = f.read().splitlines()
    with open(os.path.join(TINY, "predictions.txt"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    documents = [{"id": str(i + 1), "source": src, "keyphrases": kws.split(";")}
                 for i, (src, kws) in enumerate(zip(sources, keywords))]
    predictions = [line.split(";") for line in lines]
    return documents, predictions


def loop_f1_at_5(documents, predictions):
    """The hand-written loop (kplab profile conventions: strip + lower-case, drop empty pieces, the
    <peos> marker and predictions with an <unk> token, dedup by stem key, P@5 = hits / 5)."""
    from nltk.stem.porter import PorterStemmer

    stemmer = PorterStemmer()

    def key(phrase):
        return " ".join(stemmer.stem(w) for w in phrase.strip().lower().split())

    def dedup(keys):
        seen, out = set(), []
        for k in keys:
            if k not in seen:
                seen.add(k)
                out.append(k)
        return out

    ps, rs = [], []
    for doc, preds in zip(documents, predictions):
        refs = dedup(key(r) for r in doc["keyphrases"] if r.strip())
        cleaned = [p for p in preds if p.strip() and p.strip() != "<peos>" and "<unk>" not in p.lower().split()]
        ranked = dedup(key(p) for p in cleaned)
        hits = sum(1 for k in ranked[:5] if k in refs)
        ps.append(hits / 5 if ranked else 0.0)
        rs.append(hits / len(refs) if refs else 0.0)
    mp, mr = sum(ps) / len(ps), sum(rs) / len(rs)
    return 2 * mp * mr / (mp + mr) if mp + mr > 0 else 0.0


def toy_embedder(phrases):
    """Deterministic 64-d vectors from hashed character trigrams: phrases sharing trigrams are close."""
    out = []
    for p in phrases:
        v = [0.0] * 64
        s = f"  {p} "
        for i in range(len(s) - 2):
            h = hashlib.sha256(s[i:i + 3].encode()).digest()
            v[h[0] % 64] += 1.0 if h[1] % 2 else -1.0
        out.append(v)
    return out


def choose_model(toy):
    if toy:
        kplab.register_embedder("toy-trigrams", toy_embedder, dims=64, version="1")
        return "toy-trigrams"
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        return None  # kplab's default model
    name = "all-MiniLM-L6-v2"
    st = SentenceTransformer(name)
    # Bump version= when the model's weights change: cached vectors are keyed by name + version.
    kplab.register_embedder("st-minilm", lambda ps: st.encode(ps, batch_size=256), version=name)
    return "st-minilm"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--toy-embedder", action="store_true", help="a hashing embedder instead of a real model")
    ap.add_argument("--db", default=None, help="run store (default $KPLAB_DB or kplab.db)")
    args = ap.parse_args()
    documents, predictions = read_tiny()

    # 1. The loop.
    try:
        loop = loop_f1_at_5(documents, predictions)
        print(f"hand-written loop: F1@5 (macro) = {loop:.6f}")
    except ImportError:
        loop = None
        print("hand-written loop skipped (nltk is not installed)")

    # 2. kplab: the same number, and much more.
    model = choose_model(args.toy_embedder)
    metrics = ["exact", "rank", "semrp", "semantic"]
    try:
        result = kplab.evaluate(documents, predictions, metrics=metrics, model=model, system="example",
                                store=args.db or True)
    except kplab.InputError as e:
        if "is not installed" not in str(e):
            raise
        print(f"semantic metrics skipped: {e}")
        result = kplab.evaluate(documents, predictions, metrics=metrics[:2], system="example",
                                store=args.db or True)
    agg = result["aggregates"]
    for name in ["all.f1@5.macro_hm", "all.f1@10.macro_hm", "present.f1@5.micro", "all.map@M", "all.semrp",
                 "all.semf1"]:
        if name in agg:
            print(f"{name:22s} {agg[name]:.4f}")
    if result["embeddings"]:
        e = result["embeddings"]
        print(f"embeddings: model '{e['model']}': {e['phrases']} phrases, {e['hits']} from the cache, "
              f"{e['embedded']} embedded now")
    print("per document all.f1@5:", [round(float(x), 4) for x in result["per_document"]["all.f1@5"]])
    print(f"stored as run {result['run_id']} in {result['store']}")
    if loop is not None:
        if not math.isclose(loop, agg["all.f1@5.macro_hm"], abs_tol=1e-12):
            print(f"loop and kplab DISAGREE: {loop} vs {agg['all.f1@5.macro_hm']}")
            return 1
        print("loop and kplab agree on F1@5")

    # 3. The run store: every run is kept, with per-document scores.
    store = kplab.Store(result["store"])
    print("runs in the store:", [(r["run_id"], r["system"]) for r in store.runs()][:3])
    return 0


if __name__ == "__main__":
    sys.exit(main())
