#!/usr/bin/env python3
"""kplab against the least-work program (issue 16), whole processes, interleaved.

    least_work_ratio.py --least-work BIN --kplab BIN --data DIR [--runs N]

Runs, N times in turn, bench/least_work.cc's program on KP20k gold x catSeqTG-2RF1 seed 1234 and
`kplab eval --no-store --output csv` on the same files with `--metrics exact` and with the default
metrics, each a fresh process, timed with time.perf_counter around it (the least-work program takes
some 65 ms: /usr/bin/time's 10 ms steps are too coarse for a ratio). Prints the median wall and CPU
seconds of each, the ratios against the targets (exact <= 2x, default <= 3x) and the machine load:
interleaving keeps a load change from favouring one side, but every number depends on the load.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--least-work", required=True)
    ap.add_argument("--kplab", required=True)
    ap.add_argument("--data", required=True, help="the shared data directory")
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    if a.runs < 1:
        sys.exit("least_work_ratio.py: --runs must be >= 1 (got %d)" % a.runs)
    gold_dir = os.path.join(a.data, "kpg_testsets_meng2017", "kp20k")
    pred = os.path.join(a.data, "predictions", "catSeqTG-2RF1", "kp20k", "seed1234.txt")
    ev = [a.kplab, "eval", "--dataset", gold_dir, "--predictions", pred, "--no-store", "--output", "csv"]
    cmds = {
        "least work": [a.least_work, os.path.join(gold_dir, "word_kp20k_testing_allkeywords.txt"), pred],
        "kplab --metrics exact": ev + ["--metrics", "exact"],
        "kplab (exact, rank, rprec)": ev,
    }
    load_start = open("/proc/loadavg").read().split()[:3]
    wall = {k: [] for k in cmds}
    cpu = {k: [] for k in cmds}
    for _ in range(a.runs):
        for name, cmd in cmds.items():
            t0, c0 = time.perf_counter(), os.times()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            t1, c1 = time.perf_counter(), os.times()
            if r.returncode != 0:
                sys.exit("least_work_ratio.py: %s failed (exit %d): %s" % (" ".join(cmd), r.returncode,
                                                                          r.stderr.decode(errors="replace")[:300]))
            wall[name].append(t1 - t0)
            cpu[name].append((c1.children_user - c0.children_user) + (c1.children_system - c0.children_system))
    med = {k: statistics.median(v) for k, v in wall.items()}
    mcpu = {k: statistics.median(v) for k, v in cpu.items()}
    lw = med["least work"]
    print("kplab against the least-work program (KP20k, 20,000 documents, catSeqTG-2RF1 seed 1234, whole process,"
          " %d interleaved runs, medians):" % a.runs)
    for name in cmds:
        print("  %-28s wall %.3f s  cpu %.3f s" % (name, med[name], mcpu[name]))
    ex, de = med["kplab --metrics exact"] / lw, med["kplab (exact, rank, rprec)"] / lw
    print("  exact: %.2fx (target <= 2x: %s); default metrics: %.2fx (target <= 3x: %s)"
          % (ex, "yes" if ex <= 2 else "NO", de, "yes" if de <= 3 else "NO"))
    print("  load average (1/5/15 min): %s at the start, %s at the end"
          % (" ".join(load_start), " ".join(open("/proc/loadavg").read().split()[:3])))


if __name__ == "__main__":
    main()
