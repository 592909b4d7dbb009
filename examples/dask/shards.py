#!/usr/bin/env python3
"""A sharded KP20k evaluation on worker processes, merged, and checked against one process.

Run from the repository root (see README.md here):

    PYTHONPATH=build/python /usr/bin/python3 examples/dask/shards.py            # 4 shards, 4 workers

Each of N tasks runs kplab.evaluate(dataset, predictions, shard=(i, N), store=WORKDIR/part{i}.db) on a
worker; kplab.merge then rebuilds the one run into WORKDIR/merged.db, the same evaluation runs in this
process into WORKDIR/single.db, and every aggregate (and every per-document value) of the two is
compared bit for bit. Exit 0 when all are equal, 1 when a task fails (its error printed) or a value
differs, 2 for bad arguments.

The schedulers (Dask distributed, Dask's process scheduler, or the standard library's process pool)
all drive the same functions, evaluate_shard and sharded_evaluation; tests/python/test_dask_example.py
imports this file and runs them without Dask when Dask is not installed.
"""

import argparse
import glob
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import schedulers  # noqa: E402

# The shared data beside the repository: /work/main -> /work/shared/data.
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data"))
DATASET = os.path.join(DATA, "kpg_testsets_meng2017", "kp20k")
PREDICTIONS = os.path.join(DATA, "predictions", "catSeqTG-2RF1", "kp20k", "seed1234.txt")


def _kplab():
    try:
        import kplab
    except ImportError as e:
        raise SystemExit(f"{__file__}: cannot import kplab ({e}); build it (scripts/setup.sh) and run with "
                         "PYTHONPATH=build/python, or install it (cmake --install build)") from None
    return kplab


def evaluate_shard(i, n, dataset, predictions, workdir, metrics=None, system=None, seed=None, threads=1):
    """One task: shard i (from 0) of n, stored in WORKDIR/part{i}.db. Runs on a worker process.

    A kplab error becomes a RuntimeError naming the shard (plain exceptions cross every scheduler's
    process boundary unchanged)."""
    kplab = _kplab()
    store = os.path.join(workdir, f"part{i}.db")
    try:
        r = kplab.evaluate(dataset, predictions, shard=(i, n), store=store, metrics=metrics,
                           system=system, seed=seed, dataset=os.path.basename(os.path.normpath(dataset)),
                           threads=threads)
    except kplab.Error as e:
        raise RuntimeError(f"shard {i}/{n}: kplab.{type(e).__name__}: {e}") from None
    return {"shard": i, "store": store, "run_id": r["run_id"], "begin": r["shard"]["begin"],
            "end": r["shard"]["end"], "pid": os.getpid(), "seconds": r["elapsed_seconds"]}


def merge_shards(stores, out):
    """kplab.merge of the shards' stores into OUT (not created when the shards do not make one run)."""
    return _kplab().merge(list(stores), out=out)


def sharded_evaluation(run_map, n, dataset, predictions, workdir, metrics=None, system=None, seed=None,
                       threads=1):
    """The N shards through run_map (a scheduler from schedulers.open_scheduler), then the merge.
    Returns (the shards' task results, the merged run as kplab.merge returns it)."""
    calls = [(i, n, dataset, predictions, workdir, metrics, system, seed, threads) for i in range(n)]
    parts = run_map(evaluate_shard, calls)
    merged = merge_shards([p["store"] for p in parts], os.path.join(workdir, "merged.db"))
    return parts, merged


def single_evaluation(dataset, predictions, workdir, metrics=None, system=None, seed=None, threads=0):
    """The same evaluation in this process, unsharded, into WORKDIR/single.db."""
    return _kplab().evaluate(dataset, predictions, store=os.path.join(workdir, "single.db"), metrics=metrics,
                             system=system, seed=seed, dataset=os.path.basename(os.path.normpath(dataset)),
                             threads=threads)


def _bits(x):
    return float(x).hex() if not math.isnan(x) else "nan"


def differences(merged, single):
    """Every way the merged run differs from the single one: aggregate names and values (bit for bit,
    NaN equal to NaN), document ids, and per-document values. Empty when they are equal."""
    out = []
    a, b = merged["aggregates"], single["aggregates"]
    for k in sorted(set(a) ^ set(b)):
        out.append(f"aggregate {k} only in the {'merged' if k in a else 'single'} run")
    for k in sorted(set(a) & set(b)):
        if _bits(a[k]) != _bits(b[k]):
            out.append(f"aggregate {k}: merged {a[k]!r} != single {b[k]!r}")
    if list(merged["doc_ids"]) != list(single["doc_ids"]):
        out.append("document ids differ")
    pa, pb = merged["per_document"], single["per_document"]
    for k in sorted(set(pa) ^ set(pb)):
        out.append(f"per-document column {k} only in the {'merged' if k in pa else 'single'} run")
    for k in sorted(set(pa) & set(pb)):
        xs, ys = list(pa[k]), list(pb[k])
        bad = [j for j, (x, y) in enumerate(zip(xs, ys)) if _bits(x) != _bits(y)]
        if len(xs) != len(ys) or bad:
            out.append(f"per-document {k}: {len(bad)} documents differ" + (f" (first: #{bad[0] + 1})" if bad else ""))
    return out


def clear_outputs(workdir):
    """Removes the files this script writes in WORKDIR, so old shards are not merged with new ones."""
    names = ["merged.db", "single.db"] + [os.path.basename(p) for p in glob.glob(os.path.join(workdir, "part*.db"))]
    for name in names:
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = os.path.join(workdir, name + suffix)
            if os.path.exists(path):
                os.remove(path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default=DATASET, help="dataset path (default: %(default)s)")
    p.add_argument("--predictions", default=PREDICTIONS, help="predictions file (default: %(default)s)")
    p.add_argument("--system", default="catSeqTG-2RF1", help="system name stored with the runs")
    p.add_argument("--seed", type=int, default=1234, help="the system's seed stored with the runs")
    p.add_argument("--metrics", default=None, help="comma-separated plugins (default: kplab's, exact,rank,rprec)")
    p.add_argument("--shards", type=int, default=4, help="N, the number of shards (default 4)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: one per shard)")
    p.add_argument("--scheduler", choices=schedulers.CHOICES, default=schedulers.default_scheduler(),
                   help="default: distributed if installed, else Dask's processes, else the stdlib pool "
                        "(now: %(default)s)")
    p.add_argument("--address", default=None, help="with --scheduler distributed: a running Dask scheduler "
                   "(tcp://host:8786) instead of a local cluster")
    p.add_argument("--threads", type=int, default=1, help="kplab threads per shard task (default 1)")
    p.add_argument("--workdir", default="kplab-dask-shards",
                   help="where part{i}.db, merged.db and single.db are written, replacing earlier ones "
                        "(default: %(default)s)")
    p.add_argument("--mode", choices=("check", "sharded", "single"), default="check",
                   help="check: shards, merge and single run, compared (default); sharded or single: only "
                        "that half (for timing)")
    args = p.parse_args(argv)
    if args.shards < 1:
        p.error(f"--shards {args.shards}: expected at least 1")
    workers = args.workers or args.shards
    # Absolute, as the workers see them: a worker's current directory need not be this one.
    args.dataset, args.predictions, args.workdir = map(os.path.abspath, (args.dataset, args.predictions, args.workdir))
    os.makedirs(args.workdir, exist_ok=True)
    clear_outputs(args.workdir)
    common = dict(metrics=args.metrics, system=args.system, seed=args.seed)

    merged = single = None
    try:
        if args.mode in ("check", "sharded"):
            print(f"{args.shards} shards on {schedulers.describe(args.scheduler, workers, args.address)}", flush=True)
            t = time.perf_counter()
            with schedulers.open_scheduler(args.scheduler, workers, args.address) as run_map:
                parts, merged = sharded_evaluation(run_map, args.shards, args.dataset, args.predictions,
                                                   args.workdir, threads=args.threads, **common)
            for part in parts:
                print(f"  shard {part['shard']}/{args.shards}: documents {part['begin'] + 1}-{part['end']}, "
                      f"run {part['run_id']} in {part['store']} (worker pid {part['pid']}, {part['seconds']:.2f} s)")
            print(f"merged: run {merged['run_id']} in {merged['store']}, {merged['n_docs']} documents, "
                  f"{len(merged['aggregates'])} aggregates ({time.perf_counter() - t:.2f} s with workers' start-up)")
        if args.mode in ("check", "single"):
            t = time.perf_counter()
            single = single_evaluation(args.dataset, args.predictions, args.workdir, **common)
            print(f"single process: run {single['run_id']} in {single['store']} ({single['elapsed_seconds']:.2f} s in "
                  f"kplab, {time.perf_counter() - t:.2f} s with the import)")
    except Exception as e:  # a task's failure (raised again here by the scheduler) or kplab's
        print(f"{os.path.basename(__file__)}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if args.mode != "check":
        return 0
    diffs = differences(merged, single)
    if diffs:
        print(f"{os.path.basename(__file__)}: the merged run differs from the single-process run:", file=sys.stderr)
        for d in diffs:
            print("  " + d, file=sys.stderr)
        return 1
    print(f"equal: all {len(single['aggregates'])} aggregates and {len(single['per_document'])} per-document "
          f"columns x {single['n_docs']} documents, bit for bit")
    for k in ("all.f1@5.macro_doc", "all.f1@M.macro_doc", "all.f1@5.micro", "all.mrr"):
        if k in single["aggregates"]:
            print(f"  {k:24} {single['aggregates'][k]:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
