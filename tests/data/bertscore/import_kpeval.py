#!/usr/bin/python3
"""Collects what KPEval's BertScoreMetric printed (run_kpeval_bertscore.py's JSON files, without and with
--idf) into kpeval_bertscore.tsv, the file tests/host/bertscore_test.cc
(BertscoreTransformer.MatchesKpevalsBertScoreMetricOnRepeatedReferences) compares kplab with.

    /usr/bin/python3 tests/data/bertscore/import_kpeval.py DATASET SEED LAYER NO_IDF.json IDF.json \\
        > tests/data/bertscore/kpeval_bertscore.tsv

Rows: dataset, seed, layer, idf (0, 1), doc (1-based; "mean" for KPEval's aggregate), subset, column (p, r,
f1), value (repr: every bit of the double KPEval computed).
"""
import json
import sys


def main():
    dataset, seed, layer = sys.argv[1:4]
    print("dataset\tseed\tlayer\tidf\tdoc\tsubset\tcolumn\tvalue")
    for idf, path in enumerate(sys.argv[4:6]):
        with open(path) as f:
            d = json.load(f)
        assert d["config"]["idf"] == bool(idf), path
        for subset in ("all", "present", "absent"):
            for name, col in (("precision", "p"), ("recall", "r"), ("f1", "f1")):
                key = "bert_score_%s_%s" % (subset, name)
                for i, v in enumerate(d["per_doc"][key]):
                    print(f"{dataset}\t{seed}\t{layer}\t{idf}\t{i + 1}\t{subset}\t{col}\t{v!r}")
                print(f"{dataset}\t{seed}\t{layer}\t{idf}\tmean\t{subset}\t{col}\t{d['aggregate'][key]!r}")


if __name__ == "__main__":
    main()
