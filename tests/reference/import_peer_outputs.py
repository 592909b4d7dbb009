#!/usr/bin/python3
"""Collect the numbers printed by the peers' OWN evaluation scripts into tests/conformance/peers/.

The conformance suite's expected values come from kpref.py, our reading of the peers. This file holds
the other check: numbers produced by running the peers' code itself, unmodified, on the shared data
(checked once by hand, then frozen). The test `PeerOutputs` in tests/conformance/conformance_test.cc
runs kplab under the matching profile and options and compares every number here to 1e-9.

How the peer outputs were made (2026-11-25; nothing of the peers is committed):
* uclanlp/KPEval @ aead599fe02a72dcababd2d1230cd75e5d6b1262, metrics/exact_matching_metric.py and
  metrics/approx_matching_metric.py unmodified, driven as run_evaluation.py does (read the JSONL, call
  metric.evaluate(preds, refs, inputs)); gin-config is not packaged for Debian, so a minimal stand-in read
  the shipped configs/sample_config_kp20k.gin, with ExactMatchingMetric.k_list = [1,3,5,10,50,'M','O'].
  Inputs built as a KPEval user does from the Meng-2017 line files: source = the context line with its
  `<eos>` replaced by `[sep]`, target = the keywords line, predictions = the prediction line with the
  `<peos>` piece dropped. kp20k_first1000: kp20k_test_first1000/test_src.txt + test_trg.txt with the
  first 1000 lines of the 20k prediction file.
* kenchan0226/keyphrase-generation-rl @ 1a3b20be236732fa20137690ce463cabc4b527e3, evaluate_prediction.py
  unmodified with the README's flags (-invalidate_unk -disable_extra_one_word_filter
  -prediction_separated, default -num_preds 200), with and without -target_already_stemmed, on SemEval;
  full-precision values recomputed from the script's own saved score dict with its own functions (torch
  stood in for by an empty Dataset class: the script imports it but never uses it).

Usage: import_peer_outputs.py DIR   (DIR holds out/kpeval/<ds>__seed<N>.json and
out/kenchan/semeval__seed<N>__{stemmed,notstemmed}.json); writes tests/conformance/peers/peer_outputs.tsv.
"""
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "conformance", "peers", "peer_outputs.tsv")
MENG = "kpg_testsets_meng2017"
# dataset -> (dataset path, format, max_docs, prediction dataset dir)
DATASETS = {
    "inspec": (MENG + "/inspec", "meng", 0, "inspec"),
    "krapivin": (MENG + "/krapivin", "meng", 0, "krapivin"),
    "semeval": (MENG + "/semeval", "meng", 0, "semeval"),
    "kp20k_first1000": ("kp20k_test_first1000", "one2set", 1000, "kp20k"),
}
KS = "1,3,5,10,50,M,O"


def kplab_name(peer_name):
    m = re.fullmatch(r"(micro|macro)_avg_(p|r|f1)@(\w+)_(all|present|absent)", peer_name)
    if m:
        avg, meas, k, s = m.groups()
        suffix = "macro_hm" if (avg == "macro" and meas == "f1") else avg
        return "%s.%s@%s.%s" % (s, meas, k, suffix)
    m = re.fullmatch(r"(MAP|avg_NDCG|AlphaNDCG)@(\w+)_(all|present|absent)", peer_name)
    if m:
        meas, k, s = m.groups()
        return "%s.%s@%s" % (s, {"MAP": "map", "avg_NDCG": "ndcg", "AlphaNDCG": "alpha_ndcg"}[meas], k)
    m = re.fullmatch(r"(all|present|absent)_(r-precision|substring_precision|substring_recall|substring_f1)",
                     peer_name)
    if m:
        s, meas = m.groups()
        return "%s.%s" % (s, {"r-precision": "rprec_substr", "substring_precision": "substr_precision",
                              "substring_recall": "substr_recall", "substring_f1": "substr_f1"}[meas])
    return None


def main():
    src = sys.argv[1]
    rows = []
    for ds, (path, fmt, max_docs, pred_ds) in DATASETS.items():
        for seed in (1234, 5678, 9527):
            f = os.path.join(src, "out", "kpeval", "%s__seed%d.json" % (ds, seed))
            d = json.load(open(f))
            pred = "predictions/catSeqTG-2RF1/%s/seed%d.txt" % (pred_ds, seed)
            opts = "max_docs=%d" % max_docs if max_docs else "-"
            for group in ("exact_matching", "approximate_matching"):
                for name, value in d[group].items():
                    k = kplab_name(name)
                    if k is not None:
                        rows.append(["KPEval@aead599", "kpeval", ds, path, fmt, pred, opts,
                                     "exact.ks=%s;rank.ks=%s" % (KS, KS), k, repr(float(value))])
    for seed in (1234, 5678, 9527):
        for variant, opts in (("stemmed", "refs_stemmed"), ("notstemmed", "-")):
            f = os.path.join(src, "out", "kenchan", "semeval__seed%d__%s.json" % (seed, variant))
            d = json.load(open(f))["full_precision_from_score_dict"]
            pred = "predictions/catSeqTG-2RF1/semeval/seed%d.txt" % seed
            for name, value in d.items():
                k = kplab_name(name)
                if k is not None:
                    rows.append(["kenchan0226@1a3b20b", "kenchan", "semeval", MENG + "/semeval", "meng", pred,
                                 opts, "exact.ks=5,M;rank.ks=5,M", k, repr(float(value))])
    with open(OUT, "w") as out:
        out.write("peer\tprofile\tdataset\tdataset_path\tdataset_format\tpredictions\toptions\tparams\tmetric\tvalue\n")
        for r in rows:
            out.write("\t".join(r) + "\n")
    print("wrote %d values to %s" % (len(rows), OUT))


if __name__ == "__main__":
    main()
