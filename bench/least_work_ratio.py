#!/usr/bin/env python3
"""kplab against the least-work program (the yardstick of the speed targets), whole processes, interleaved.

    least_work_ratio.py --least-work BIN --kplab BIN --data DIR [--runs N] [--docs N] [--rows FILE]

The job: KP20k's gold keyphrases x catSeqTG-2RF1 seed 1234's predictions (--docs N: N documents of
tagged copies of them, bench/gen_copies.py, the scale benchmark's generator, written to a temporary
directory). Five commands, each a fresh process, N rounds in turn (interleaving keeps a change of the
machine's load from favouring one side):
    bench/least_work.cc's program            KEYWORDS PREDICTIONS
    the same with --intern                   (every kept key also given a corpus-wide id, as kplab does)
    kplab eval --metrics exact               --dataset D --predictions P --no-store --output csv
    kplab eval (the default metrics: exact, rank, rprec), the same options
    kplab eval --metrics exact --threads 1  the same as the first kplab command, on one thread
each timed around the process: wall with time.perf_counter, CPU (user + system, all threads) from the
process's own rusage (os.wait4; /usr/bin/time and os.times count in 10 ms steps, and the least-work
program takes some tens of ms). Prints the medians, the ratios kplab / least work of the wall times and
of the CPU times beside their targets (--metrics exact: wall <= 2x, CPU <= 3x; default metrics: wall
<= 3x, CPU <= 4x), and the machine's load (bench/benchlib.py: no verdict on a loaded machine). The
ratios to the --intern run have no target: they are kplab's cost beyond the corpus-wide identity of
phrases that its design needs and this job does not (the difference of the two least-work runs).
Nor has the one-thread run: a ratio that a busy second core does not move, where the two-thread runs'
CPU ratios move with what that core costs on the machine at the time ("two at once": on a virtual
machine whose two cores slowed each other by 1.1x and by 1.5x within one hour, bench/README.md).
Each round also runs two copies of the least-work program at once, and two of the one-thread kplab run
(run_pair_timed: one a core), for what a busy second core costs each: the two-thread run's CPU over the
one-thread run's is printed as that cost for kplab's own work times what kplab's second thread adds
beyond it (its ranges' duplicated work, the fresh memory of a second range in flight, the thread's start
and join).
Under each target's line, the ratios round by round (each kplab run against the least-work run of its
own round, a few tens of ms before it): their median and quartiles, which say how far the machine's
drift moves the ratio of the medians, on which the verdict is given.

First, the numbers: the 12 values the least-work program prints, with and without --intern, must be the
text kplab's CSV gives for the same names, exactly (exit 1 otherwise).

--rows FILE appends the table's rows (bench/benchlib.py append_row) for scripts/bench_table.sh; the
least-work program's own times in the run are the row's yardstick of the machine's speed.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402

TARGETS = {"exact": (2.0, 3.0), "default": (3.0, 4.0)}  # wall, CPU


def round_ratios(num, den):
    """The ratios num[i] / den[i] of each round: (median, lower quartile, upper quartile)."""
    r = sorted(n / d for n, d in zip(num, den))
    if len(r) < 2:
        return r[0], r[0], r[0]
    q = statistics.quantiles(r, n=4, method="inclusive")
    return statistics.median(r), q[0], q[2]


def run(cmd, out=None):
    """Runs cmd; returns (wall seconds, CPU seconds of the process and its threads)."""
    return benchlib.run_timed(cmd, out)


def check_numbers(least_work_cmds, kplab_exact_cmd, tmp):
    """Each least-work command's 12 values against kplab's CSV (run once): the same text (so the same bits)."""
    with open(os.path.join(tmp, "kplab.csv"), "w") as f:
        run(kplab_exact_cmd, f)
    theirs = dict(line.strip().split(",", 1) for line in open(os.path.join(tmp, "kplab.csv")) if "," in line)
    for cmd in least_work_cmds:
        with open(os.path.join(tmp, "lw.out"), "w") as f:
            run(cmd, f)
        mine = dict(line.split() for line in open(os.path.join(tmp, "lw.out")) if line.strip())
        bad = [k for k, v in mine.items() if theirs.get(k) != v]
        if len(mine) != 12 or bad:
            for k in bad[:5]:
                print("  %s: least work %s, kplab %s" % (k, mine[k], theirs.get(k, "(missing)")), file=sys.stderr)
            sys.exit("least_work_ratio.py: the values of %s (%d) are not kplab's (%d differ)"
                     % (" ".join(cmd[:2]), len(mine), len(bad)))
    return len(mine)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--least-work", required=True)
    ap.add_argument("--kplab", required=True)
    ap.add_argument("--data", required=True, help="the shared data directory")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--docs", type=int, default=0, help="documents of tagged KP20k copies (0: KP20k itself)")
    ap.add_argument("--rows", help="append the table's rows here (scripts/bench_table.sh)")
    a = ap.parse_args()
    if a.runs < 1 or a.docs < 0:
        sys.exit("least_work_ratio.py: --runs must be >= 1 and --docs >= 0 (got %d, %d)" % (a.runs, a.docs))
    gold_dir = os.path.join(a.data, "kpg_testsets_meng2017", "kp20k")
    keywords = os.path.join(gold_dir, "word_kp20k_testing_allkeywords.txt")
    pred = os.path.join(a.data, "predictions", "catSeqTG-2RF1", "kp20k", "seed1234.txt")
    for f in (a.least_work, a.kplab, keywords, pred):
        if not os.path.exists(f):
            sys.exit("least_work_ratio.py: %s not found" % f)
    with tempfile.TemporaryDirectory(prefix="kplab-lw.") as tmp:
        name = "KP20k, 20,000 documents"
        if a.docs:
            gold_dir, keywords, pred = benchlib.tagged_copies(keywords, pred, a.docs, tmp)
            name = "%s documents (tagged KP20k copies)" % format(a.docs, ",")
        ev = [a.kplab, "eval", "--dataset", gold_dir, "--predictions", pred, "--no-store", "--output", "csv"]
        cmds = {"least work": [a.least_work, keywords, pred], "interned": [a.least_work, "--intern", keywords, pred],
                "exact": ev + ["--metrics", "exact"], "default": ev,
                "exact1": ev + ["--metrics", "exact", "--threads", "1"]}
        n_values = check_numbers([cmds["least work"], cmds["interned"]], cmds["exact"], tmp)
        machine = benchlib.Machine()
        wall = {k: [] for k in cmds}
        cpu = {k: [] for k in cmds}
        pair = []  # the least-work program's CPU when two run at once, one a core
        pair_kplab = []  # the same for kplab's one-thread run
        for _ in range(a.runs):
            for k, cmd in cmds.items():
                w, c = run(cmd)
                wall[k].append(w)
                cpu[k].append(c)
            pair.append(benchlib.run_pair_timed(cmds["least work"])[1])
            pair_kplab.append(benchlib.run_pair_timed(cmds["exact1"])[1])
        machine.stop()
    mw = {k: statistics.median(v) for k, v in wall.items()}
    mc = {k: statistics.median(v) for k, v in cpu.items()}
    print("kplab against the least-work program (%s; catSeqTG-2RF1 seed 1234; whole processes, %d interleaved "
          "runs, medians):" % (name, a.runs))
    print("  the least-work program's %d values are kplab's, digit for digit" % n_values)
    labels = {"least work": "least work (bench/least_work.cc)", "interned": "least work --intern",
              "exact": "kplab eval --metrics exact", "default": "kplab eval (exact, rank, rprec)",
              "exact1": "kplab eval --metrics exact --threads 1"}
    for k in cmds:
        print("  %-40s wall %.4f s  CPU %.4f s" % (labels[k], mw[k], mc[k]))
    rows = []

    def ratios(k, ref):
        """k's wall and CPU ratios to ref, and its table row (target text and verdict to be appended)."""
        rw, rc = mw[k] / mw[ref], mc[k] / mc[ref]
        ref_label = "least work --intern" if ref == "interned" else "least work"
        row = ["%s on %s vs %s" % (labels[k], name, ref_label), "%.4f" % mw[k], "%.4f" % mc[k],
               "%.4f" % mw[ref], "%.4f" % mc[ref], "%.2fx" % rw, "%.2fx" % rc]
        return rw, rc, row

    for k in ("exact", "default"):
        rw, rc, row = ratios(k, "least work")
        tw, tc = TARGETS[k]
        print("  %-40s wall %.2fx (target <= %gx: %s)   CPU %.2fx (target <= %gx: %s)"
              % (labels[k] + ":", rw, tw, machine.verdict(rw <= tw), rc, tc, machine.verdict(rc <= tc)))
        (w50, w25, w75), (c50, c25, c75) = (round_ratios(wall[k], wall["least work"]),
                                            round_ratios(cpu[k], cpu["least work"]))
        print("    round by round: wall %.2fx (quartiles %.2f-%.2fx)   CPU %.2fx (quartiles %.2f-%.2fx)"
              % (w50, w25, w75, c50, c25, c75))
        rows.append(row + ["kplab / least work: wall <= %gx, CPU <= %gx" % (tw, tc),
                           machine.verdict(rw <= tw and rc <= tc)])
    rw, rc, row = ratios("exact1", "least work")
    print("  %-40s wall %.2fx   CPU %.2fx (no target: one core, which a busy second core does not move)"
          % (labels["exact1"] + ":", rw, rc))
    rows.append(row + ["none: one thread, the second core's cost taken out", "-"])
    print("  %-40s CPU %.2fx its CPU alone (each of two at once, one a core: what a busy second core costs"
          % ("least work, two at once:", statistics.median(pair) / mc["least work"]))
    print("  %-40s a process here; kplab's two-thread phases pay it, the one-thread yardstick does not)" % "")
    kplab_pair = statistics.median(pair_kplab) / mc["exact1"]
    two_one = mc["exact"] / mc["exact1"]
    print("  %-40s CPU %.2fx its CPU alone (the same for kplab's own work, which reads more memory)"
          % ("kplab exact --threads 1, two at once:", kplab_pair))
    print("  %-40s CPU %.2fx = %.2fx (two at once) x %.2fx (kplab's second thread beyond it: its ranges'"
          % ("kplab exact, two threads / one:", two_one, kplab_pair, two_one / kplab_pair))
    print("  %-40s duplicated work, the fresh memory of a second range in flight, the thread's start and join)" % "")
    print("  %-40s wall %.2fx   CPU %.2fx (the cost of corpus-wide keys alone)"
          % ("least work --intern / least work:", mw["interned"] / mw["least work"], mc["interned"] / mc["least work"]))
    for k in ("exact", "default"):
        rw, rc, row = ratios(k, "interned")
        print("  %-40s wall %.2fx   CPU %.2fx (no target: kplab beyond that cost)" % (labels[k] + " / --intern:", rw, rc))
        rows.append(row + ["none: the keys' corpus-wide ids taken out", "-"])
    for line in machine.lines():
        print("  " + line)
    machine_cell = ("load %.2f -> %.2f, others %.2f cores; yardstick %.4f s wall %.4f s CPU, two at once %.2fx CPU"
                    " (kplab --threads 1: %.2fx)") % (
        machine.start["load"][0], machine.end["load"][0], machine.other_cores(), mw["least work"], mc["least work"],
        statistics.median(pair) / mc["least work"], kplab_pair)
    for r in rows:
        benchlib.append_row(a.rows, r + [machine_cell])


if __name__ == "__main__":
    main()
