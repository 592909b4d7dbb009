#!/usr/bin/python3
"""Runs KPEval's own retrieval ("utility") metric classes on the shared data and prints every number.

The truth for tests/data/utility/peer/*.json (tests/host/utility_test.cc). Nothing of the peers is
committed; this script is the command that produced the numbers. Peers, checked out under PEERS
(default /work/peers/utility) from the snapshots named below:

  KPEval/          uclanlp/KPEval @ aead599fe02a72dcababd2d1230cd75e5d6b1262 (metrics/ unmodified)
  rank_bm25/       dorianbrown/rank_bm25 tag 0.2.2 (2550648), what KPEval's requirements.txt pins
  st-src/          UKPLab/sentence-transformers tag v2.2.2 (pinned by KPEval)
  tf-src/          huggingface/transformers tag v4.30.2 (pinned by KPEval; from a fork that carries the tag)
  hfhub-src/       huggingface/huggingface_hub tag v0.16.4 (pinned by KPEval)
  gin-src/         google/gin-config (KPEval's classes are @gin.configurable)
Debian (bookworm) gives the rest: python3-numpy 1.24.2, python3-sklearn 1.2.1 (the stop-word list),
python3-torch 1.13.1, python3-nltk 3.8, python3-tqdm.

What is stubbed, and why (no logic of the peers is changed):
  * KPEval's metrics/__init__.py imports every metric module (rouge, bert_score, evaluate, moverscore,
    UniEval, ...), whose packages are not here; the package `metrics` is made without running it, and
    metrics.metric / metrics.retrieval_metric(_v2) are imported from KPEval's files as they are.
    (retrieval_metric_v2 is not exported by that __init__ at all: run_evaluation.py's
    `from metrics import RetrievalMetricV2` fails at aead599 -- one of KPEval's quirks.)
  * There is no GPU: torch.Tensor.cuda is made the identity, so the dense path runs on the CPU.
  * transformers 4.30 imports two helpers of the `safetensors` package (Rust, not here) at import time:
    they are defined as safetensors defines them (safetensors_stub below); the model snapshots the peer
    loads carry pytorch_model.bin instead of model.safetensors (the same tensors, written by
    tests/data/utility/gen_models.py --peer-out) and vocab.txt for the slow BertTokenizer (no
    `tokenizers` package either).

Inputs, as a KPEval user makes them from the shared files (run_evaluation.py's --input-file /
--label-file / --output-file lines): source = a test_src.txt line with its `<eos>` replaced by KPEval's
title separator `[sep]`; target = the test_trg.txt line; prediction = the catSeqTG-2RF1 kp20k line with
its `<peos>` piece dropped (the convention of tests/reference/import_peer_outputs.py). KPEval asserts
more documents than queries (score_corpus: `assert len(source) > len(self.query_str_list)`) and then
keeps the first len(queries); with exactly 1000 documents it stops, so a 1001st document
("extra [sep] document", no keyphrases) is appended and dropped by KPEval's own truncation.
The extra corpus (corpus_src_file / corpus_tgt_file) is empty, or the distractors: the Meng-2017
inspec, krapivin and semeval context lines (`<eos>` -> `[sep]`) with their allkeywords lines, in that
order.

Usage:
  utility_peer.py --class v1|v2 --queries FILE --seed N [--distractors] [--bi-encoder DIR]
                  [--cross-encoder DIR] [--rerank N] [--first N] --out OUT.json
Writes {"aggregated": {...}, "per_doc": {...}, "inputs": {...}} with floats at full precision (repr).
"""
import argparse
import importlib
import json
import os
import sys
import tempfile
import time
import types

PEERS = os.environ.get("PEERS", "/work/peers/utility")
DATA = os.environ.get("KPLAB_SHARED_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                         "..", "..", "..", "shared", "data"))
for sub in ("tf-src/src", "hfhub-src/src", "st-src", "gin-src", "rank_bm25", "KPEval"):
    sys.path.insert(0, os.path.join(PEERS, sub))
sys.dont_write_bytecode = True

import gin  # noqa: E402
import torch  # noqa: E402

torch.Tensor.cuda = lambda self, *a, **k: self  # no GPU here (see the docstring)


def safetensors_stub():
    """transformers 4.30's pytorch_utils imports safetensors.torch's storage_ptr / storage_size
    unconditionally; the package (Rust) is not here. They are defined as safetensors 0.3 defines them;
    without package metadata transformers still reports safetensors unavailable and loads
    pytorch_model.bin."""
    st = types.ModuleType("safetensors")
    stt = types.ModuleType("safetensors.torch")
    stt.storage_ptr = lambda t: t.untyped_storage().data_ptr()
    stt.storage_size = lambda t: t.untyped_storage().nbytes()
    st.torch = stt
    import importlib.machinery
    st.__spec__ = importlib.machinery.ModuleSpec("safetensors", None, is_package=True)
    stt.__spec__ = importlib.machinery.ModuleSpec("safetensors.torch", None)
    sys.modules["safetensors"] = st
    sys.modules["safetensors.torch"] = stt


safetensors_stub()


def kpeval_metrics_package():
    """The package `metrics` without its __init__ (which imports every metric's dependencies)."""
    pkg = types.ModuleType("metrics")
    pkg.__path__ = [os.path.join(PEERS, "KPEval", "metrics")]
    sys.modules["metrics"] = pkg
    base = importlib.import_module("metrics.metric")
    pkg.KeyphraseMetric = base.KeyphraseMetric
    return pkg


def read_lines(path, n=None):
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    return lines[:n] if n else lines


def drop_peos(line):
    return ";".join(p for p in line.split(";") if p.strip() != "<peos>")


def write_extra_corpus(tmp, distractors):
    src, tgt = os.path.join(tmp, "corpus.src"), os.path.join(tmp, "corpus.tgt")
    with open(src, "w") as s, open(tgt, "w") as t:
        if distractors:
            for ds in ("inspec", "krapivin", "semeval"):
                d = os.path.join(DATA, "kpg_testsets_meng2017", ds)
                ctx = read_lines(os.path.join(d, "word_%s_testing_context.txt" % ds))
                kws = read_lines(os.path.join(d, "word_%s_testing_allkeywords.txt" % ds))
                assert len(ctx) == len(kws)
                for c, k in zip(ctx, kws):
                    assert c.count("<eos>") == 1
                    s.write(c.replace("<eos>", "[sep]") + "\n")
                    t.write(k + "\n")
    return src, tgt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--class", dest="cls", choices=["v1", "v2"], required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--distractors", action="store_true")
    ap.add_argument("--bi-encoder")
    ap.add_argument("--cross-encoder")
    ap.add_argument("--rerank", type=int, default=50)
    ap.add_argument("--no-sparse", action="store_true")
    ap.add_argument("--first", type=int, default=1000, help="documents evaluated (and queries kept)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    kpeval_metrics_package()
    mod = importlib.import_module("metrics.retrieval_metric" if a.cls == "v1" else "metrics.retrieval_metric_v2")
    cls = mod.RetrievalMetric if a.cls == "v1" else mod.RetrievalMetricV2
    name = cls.__name__

    n = a.first
    kp = os.path.join(DATA, "kp20k_test_first1000")
    inputs = [s.replace("<eos>", "[sep]") for s in read_lines(os.path.join(kp, "test_src.txt"), n)]
    refs = read_lines(os.path.join(kp, "test_trg.txt"), n)
    preds = [drop_peos(p) for p in read_lines(
        os.path.join(DATA, "predictions", "catSeqTG-2RF1", "kp20k", "seed%d.txt" % a.seed), n)]
    queries = read_lines(a.queries)[:n]
    with tempfile.TemporaryDirectory() as tmp:
        qfile = os.path.join(tmp, "queries.txt")
        with open(qfile, "w") as f:
            f.write("".join(q + "\n" for q in queries))
        src, tgt = write_extra_corpus(tmp, a.distractors)
        inputs.append("extra [sep] document")  # see the docstring: KPEval asserts len(source) > #queries
        refs.append("")
        preds.append("")
        gin.parse_config("\n".join([
            "import metrics.metric",
            "KeyphraseMetric.kp_sep = ';'",
            "KeyphraseMetric.title_sep = '[sep]'",
            "KeyphraseMetric.unk_word = '[unk]'",
            "KeyphraseMetric.invalidate_unk = True",
            "import %s" % mod.__name__,
            "%s.do_sparse_retrieval = %s" % (name, not a.no_sparse),
            "%s.corpus_src_file = '%s'" % (name, src),
            "%s.corpus_tgt_file = '%s'" % (name, tgt),
            "%s.query_file = '%s'" % (name, qfile),
            "%s.bi_encoder_name = %s" % (name, repr(a.bi_encoder) if a.bi_encoder else None),
            "%s.bi_encoder_corpus_cache_prefix = None" % name,
            "%s.cross_encoder_name = %s" % (name, repr(a.cross_encoder) if a.cross_encoder else None),
            "%s.docs_for_rerank = %d" % (name, a.rerank),
            "%s.ks = [1, 3, 5]" % name,
            "%s.utility_score_round_limit = 5" % name,
        ]))
        metric = cls()
        t0 = time.perf_counter()
        per_doc, agg = metric.evaluate(preds, refs, inputs)
        seconds = time.perf_counter() - t0
    out = {
        "peer": "uclanlp/KPEval@aead599 %s (rank_bm25 0.2.2, sentence-transformers 2.2.2, transformers 4.30.2)"
                % name,
        "inputs": {"class": a.cls, "queries": os.path.basename(a.queries), "seed": a.seed, "docs": n,
                   "distractors": a.distractors,
                   "bi_encoder": os.path.basename(a.bi_encoder.rstrip("/")) if a.bi_encoder else None,
                   "cross_encoder": os.path.basename(a.cross_encoder.rstrip("/")) if a.cross_encoder else None,
                   "rerank": a.rerank if a.cross_encoder else None},
        "aggregated": {k: float(v) for k, v in agg.items()},
        "per_doc": {k: [float(x) for x in v] for k, v in per_doc.items()},
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=None, sort_keys=True)
        f.write("\n")
    print(json.dumps(out["aggregated"], sort_keys=True), "(%.2f s)" % seconds, file=sys.stderr)


if __name__ == "__main__":
    main()
