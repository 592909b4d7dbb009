#!/usr/bin/python3
"""Collects the numbers KPEval's MoverScoreMetric printed (run_reference.py's JSON files) into
kpeval_mover.tsv, the file tests/host/mover_test.cc compares kplab with.

    /usr/bin/python3 tests/data/mover/import_reference.py OUT_DIR > tests/data/mover/kpeval_mover.tsv

(and likewise kpeval_mover_f64.tsv from the runs made with run_reference.py --f64-distances).

OUT_DIR holds v1_<dataset>_<seed>.json (moverscore.py, KPEval's batch size 128), v2b1_<dataset>_<seed>.json
(moverscore_v2.py, batch size 1) and v2b128_<dataset>_1234.json (moverscore_v2.py, KPEval's batch size 128).
Rows: run (v1, v2b1, v2b128), dataset, seed, doc (1-based; "mean" for KPEval's aggregate), subset, value
(repr: every bit of the double KPEval computed).
"""
import json
import os
import re
import sys


def main():
    out = sys.argv[1]
    print("run\tdataset\tseed\tdoc\tsubset\tvalue")
    for name in sorted(os.listdir(out)):
        m = re.fullmatch(r"(v1|v2b1|v2b128)_(\w+?)_(\d+)\.json", name)
        if not m:
            continue
        run, ds, seed = m.groups()
        with open(os.path.join(out, name)) as f:
            d = json.load(f)
        for subset in ("all", "present", "absent"):
            key = "mover_score_" + subset
            for i, v in enumerate(d["per_doc"][key]):
                print(f"{run}\t{ds}\t{seed}\t{i + 1}\t{subset}\t{v!r}")
            print(f"{run}\t{ds}\t{seed}\tmean\t{subset}\t{d['aggregate'][key]!r}")


if __name__ == "__main__":
    main()
