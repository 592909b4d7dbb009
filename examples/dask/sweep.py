#!/usr/bin/env python3
"""A sweep on worker processes: every system's predictions (and every seed) for one dataset, one
kplab.evaluate per task, each task writing its own store; the runs are read back and tabulated.

Run from the repository root (see README.md here):

    PYTHONPATH=build/python /usr/bin/python3 examples/dask/sweep.py                    # inspec
    PYTHONPATH=build/python /usr/bin/python3 examples/dask/sweep.py --dataset-name semeval

The tasks are found under PREDICTIONS/SYSTEM/DATASET/: `predictions.txt` (one run, no seed) and
`seedNNNN.txt` (one run per seed), e.g. /work/shared/data/predictions/catSeqTG-2RF1/inspec/seed1234.txt.
Each task stores its run in WORKDIR/SYSTEM-SEED.db: one SQLite writer per file, so workers never
contend for a store (on a cluster, WORKDIR is a shared directory). Exit 0 when every task succeeded, 1
when one failed (its error printed), 2 for bad arguments.
"""

import argparse
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import schedulers  # noqa: E402

DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data"))
SHOWN = ("all.f1@5.macro_doc", "all.f1@M.macro_doc", "present.f1@5.macro_doc", "absent.r@10.macro")


def find_tasks(predictions_root, dataset_name):
    """[(system, seed or None, predictions path)] in name order."""
    tasks = []
    for system in sorted(os.listdir(predictions_root)):
        d = os.path.join(predictions_root, system, dataset_name)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            m = re.fullmatch(r"seed(\d+)\.txt", name)
            if m or name == "predictions.txt":
                tasks.append((system, int(m.group(1)) if m else None, os.path.join(d, name)))
    return tasks


def evaluate_one(system, seed, predictions, dataset, workdir, metrics=None, threads=1):
    """One task, on a worker: the whole dataset against one predictions file, in its own store."""
    import kplab

    store = os.path.join(workdir, f"{system}-{seed if seed is not None else 'noseed'}.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(store + suffix):
            os.remove(store + suffix)  # this task's store from an earlier sweep
    try:
        r = kplab.evaluate(dataset, predictions, store=store, system=system, seed=seed, metrics=metrics,
                           dataset=os.path.basename(os.path.normpath(dataset)), threads=threads)
    except kplab.Error as e:
        label = system if seed is None else f"{system} seed {seed}"
        raise RuntimeError(f"{label} ({predictions}): kplab.{type(e).__name__}: {e}") from None
    return {"system": system, "seed": seed, "store": store, "run_id": r["run_id"], "pid": os.getpid(),
            "aggregates": {k: r["aggregates"][k] for k in SHOWN if k in r["aggregates"]}}


def sweep(run_map, tasks, dataset, workdir, metrics=None, threads=1):
    return run_map(evaluate_one, [(s, seed, p, dataset, workdir, metrics, threads) for s, seed, p in tasks])


def print_table(results):
    """Each run read back from its store, and per system the mean and sd over its seeds."""
    import kplab

    cols = sorted({k for r in results for k in r["aggregates"]}, key=SHOWN.index)
    print(f"{'system':16} {'seed':>5}  " + "  ".join(f"{c:>22}" for c in cols) + "  store")
    by_system = {}
    for r in results:
        with kplab.Store(r["store"]) as st:  # the stored run, not the task's return value
            agg = st.run(r["run_id"])["aggregates"]
        by_system.setdefault(r["system"], []).append(agg)
        seed = "-" if r["seed"] is None else str(r["seed"])
        print(f"{r['system']:16} {seed:>5}  " + "  ".join(f"{agg.get(c, float('nan')):22.4f}" for c in cols)
              + f"  {r['store']}:{r['run_id']}")
    print()
    for system, aggs in by_system.items():
        if len(aggs) > 1:
            cells = []
            for c in cols:
                xs = [a[c] for a in aggs]
                cells.append(f"{statistics.mean(xs):.4f} ± {statistics.stdev(xs):.4f}".rjust(22))
            print(f"{system:16} {'mean':>5}  " + "  ".join(cells) + f"  ({len(aggs)} seeds, mean ± sd)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=DATA, help="the shared data folder (default: %(default)s)")
    p.add_argument("--dataset-name", default="inspec", help="a folder of DATA/kpg_testsets_meng2017 and of "
                   "each system's predictions (default: %(default)s)")
    p.add_argument("--dataset", default=None, help="dataset path (default: DATA/kpg_testsets_meng2017/NAME)")
    p.add_argument("--predictions-root", default=None, help="default: DATA/predictions")
    p.add_argument("--metrics", default=None, help="comma-separated plugins (default: kplab's, exact,rank,rprec)")
    p.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    p.add_argument("--scheduler", choices=schedulers.CHOICES, default=schedulers.default_scheduler(),
                   help="default: distributed if installed, else Dask's processes, else the stdlib pool "
                        "(now: %(default)s)")
    p.add_argument("--address", default=None, help="with --scheduler distributed: a running Dask scheduler "
                   "(tcp://host:8786) instead of a local cluster")
    p.add_argument("--threads", type=int, default=1, help="kplab threads per task (default 1)")
    p.add_argument("--workdir", default="kplab-dask-sweep", help="where the stores go (default: %(default)s)")
    args = p.parse_args(argv)
    dataset = args.dataset or os.path.join(args.data, "kpg_testsets_meng2017", args.dataset_name)
    root = args.predictions_root or os.path.join(args.data, "predictions")
    if not os.path.isdir(root):
        p.error(f"--predictions-root {root}: not a directory")
    tasks = find_tasks(root, args.dataset_name)
    if not tasks:
        p.error(f"no predictions for '{args.dataset_name}' under {root} (expected SYSTEM/{args.dataset_name}/"
                "predictions.txt or seedNNNN.txt)")
    # Absolute, as the workers see them: a worker's current directory need not be this one.
    dataset, args.workdir = os.path.abspath(dataset), os.path.abspath(args.workdir)
    tasks = [(s, seed, os.path.abspath(path)) for s, seed, path in tasks]
    os.makedirs(args.workdir, exist_ok=True)
    print(f"{len(tasks)} runs of {dataset} on {schedulers.describe(args.scheduler, args.workers, args.address)}", flush=True)
    t = time.perf_counter()
    try:
        with schedulers.open_scheduler(args.scheduler, args.workers, args.address) as run_map:
            results = sweep(run_map, tasks, dataset, args.workdir, args.metrics, args.threads)
    except Exception as e:
        print(f"{os.path.basename(__file__)}: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"{len(results)} runs in {time.perf_counter() - t:.2f} s (with workers' start-up), "
          f"on {len({r['pid'] for r in results})} worker processes\n")
    print_table(results)
    print(f"\nEach store is a run store: kplab runs list --db {results[0]['store']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
