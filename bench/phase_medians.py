#!/usr/bin/env python3
"""kplab's own phases (KPLAB_TIMING=1), medians over interleaved runs of several binaries or options.

    phase_medians.py --data DIR [--runs N] [--docs N] VARIANT...

A VARIANT is [NAME=VALUE ...] BINARY::OPTIONS, e.g. `build/host/kplab::--metrics exact --threads 1`: that
binary runs `eval --dataset KP20k --predictions catSeqTG-2RF1 seed 1234 --no-store --output csv OPTIONS`,
with the NAME=VALUE words in front, if any, added to its environment (an A/B of a setting that only the
environment reaches, e.g. `MIMALLOC_LARGE_OS_PAGES=0 build/host/kplab::--metrics exact`). The
variants run in turn, N rounds (interleaving keeps a change of the machine's speed from favouring one),
each a fresh process. Prints, per variant, the median wall and CPU of the whole process (rusage of the
process and its threads; its system time also apart, "process sys") and of each phase KPLAB_TIMING
reports (dataset, corpus, lua setup, validate, each metric; nan where a variant has no such phase: a
run whose metrics are resolved while its corpus is built has no lua setup of its own), and the load
average before and after. For A/B comparisons of a change below the benchmarks' whole-process ratios
(bench/least_work_ratio.py), e.g. the corpus phase on one thread.
--docs N evaluates N documents of tagged copies of KP20k instead (bench/gen_copies.py, as
least_work_ratio.py --docs does), e.g. --docs 1 for what a process costs beyond its documents (start-up).
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the shared data directory")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--docs", type=int, default=0, help="N documents of tagged KP20k copies (0: KP20k itself)")
    ap.add_argument("variants", nargs="+", help="BINARY::OPTIONS")
    a = ap.parse_args()
    if a.runs < 1 or a.docs < 0:
        sys.exit("phase_medians.py: --runs must be >= 1 and --docs >= 0 (got %d, %d)" % (a.runs, a.docs))
    gold = os.path.join(a.data, "kpg_testsets_meng2017", "kp20k")
    pred = os.path.join(a.data, "predictions", "catSeqTG-2RF1", "kp20k", "seed1234.txt")
    name = "KP20k"
    variants = benchlib.parse_variants(a.variants, "phase_medians.py")
    results = [{} for _ in variants]
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        err_path = os.path.join(tmp, "stderr")
        if a.docs:
            keywords = os.path.join(gold, "word_kp20k_testing_allkeywords.txt")
            gold, _, pred = benchlib.tagged_copies(keywords, pred, a.docs, tmp)
            name = "%s documents (tagged KP20k copies)" % format(a.docs, ",")
        for _ in range(a.runs):
            for i, (_, binary, opts, settings) in enumerate(variants):
                cmd = [binary, "eval", "--dataset", gold, "--predictions", pred, "--no-store", "--output", "csv"] + opts
                env = dict(os.environ, **settings)
                env["KPLAB_TIMING"] = "1"  # the phases are what this script reads
                with open(err_path, "wb") as err:
                    try:
                        code, wall, ru = benchlib.spawn_timed(cmd, env=env, stderr=err)
                    except OSError as e:
                        sys.exit("phase_medians.py: cannot run %s: %s" % (binary, e.strerror))
                if code != 0:
                    sys.exit("phase_medians.py: %s failed: %s" % (" ".join(cmd), open(err_path).read()[-500:]))
                r = results[i]
                r.setdefault("process wall", []).append(1000 * wall)
                r.setdefault("process cpu", []).append(1000 * (ru.ru_utime + ru.ru_stime))
                r.setdefault("process sys", []).append(1000 * ru.ru_stime)
                for line in open(err_path):
                    m = re.match(r"\[timing\] (\S.*?)\s+([\d.]+) ms\s+cpu\s+([\d.]+) ms", line)
                    if m:
                        r.setdefault(m.group(1) + " wall", []).append(float(m.group(2)))
                        r.setdefault(m.group(1) + " cpu", []).append(float(m.group(3)))
    print("%s, %d interleaved runs each, medians in ms" % (name, a.runs))
    for i, (label, _, _, _) in enumerate(variants):
        print("  [%d] %s" % (i, label))
    print("  %-20s" % "" + "".join("%10s" % ("[%d]" % i) for i in range(len(variants))))
    keys = []  # every variant's phases, in the order they first appear (a build may have other phases)
    for r in results:
        keys += [k for k in r if k not in keys]
    for key in keys:
        print("  %-20s" % key + "".join("%10.1f" % statistics.median(r.get(key, [float("nan")])) for r in results))
    print("  load average (1/5/15 min): %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end"
          % (load_before + os.getloadavg()))


if __name__ == "__main__":
    main()
