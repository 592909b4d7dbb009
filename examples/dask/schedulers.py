"""Where the examples' tasks run: Dask (distributed or its local process scheduler) or, without Dask,
the standard library's process pool. kplab schedules nothing itself; each of these maps a task
function over argument tuples on worker processes and returns the results in order, raising the
first task's exception in the calling process.

    with open_scheduler("processes", workers=4) as run_map:
        results = run_map(fn, [(a1, b1), (a2, b2)])

The task functions must be importable module-level functions (they are pickled to the workers).
Worker processes find the kplab module as this process does: through PYTHONPATH (the examples are
run with PYTHONPATH=build/python) or an installed module.
"""

import contextlib
import importlib.util

CHOICES = ("distributed", "processes", "pool")


def dask_available():
    return importlib.util.find_spec("dask") is not None


def distributed_available():
    return dask_available() and importlib.util.find_spec("distributed") is not None


def default_scheduler():
    """distributed when dask.distributed is installed, else Dask's process scheduler, else the pool."""
    if distributed_available():
        return "distributed"
    if dask_available():
        return "processes"
    return "pool"


def describe(name, workers, address=None):
    if name == "distributed" and address:
        return f"the dask.distributed scheduler at {address}"
    return {
        "distributed": f"dask.distributed LocalCluster, {workers} worker processes x 1 thread",
        "processes": f"dask's local process scheduler, {workers} worker processes",
        "pool": f"concurrent.futures.ProcessPoolExecutor, {workers} worker processes (no Dask)",
    }[name]


@contextlib.contextmanager
def open_scheduler(name, workers, address=None):
    """address: a running dask.distributed scheduler (tcp://host:8786) to use instead of a LocalCluster."""
    if name not in CHOICES:
        raise ValueError(f"scheduler '{name}' (expected one of {', '.join(CHOICES)})")
    if workers < 1:
        raise ValueError(f"workers: {workers} (expected at least 1)")
    if name == "pool":
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            def run_map(fn, calls):
                futures = [pool.submit(fn, *call) for call in calls]
                return [f.result() for f in futures]

            yield run_map
    elif name == "processes":
        import dask

        def run_map(fn, calls):
            tasks = [dask.delayed(fn, pure=False)(*call) for call in calls]
            return list(dask.compute(*tasks, scheduler="processes", num_workers=workers))

        yield run_map
    else:
        from dask.distributed import Client, LocalCluster

        def run_on(client):
            def run_map(fn, calls):
                futures = [client.submit(fn, *call, pure=False) for call in calls]
                return client.gather(futures)  # raises the first failed task's exception
            return run_map

        if address:
            with Client(address) as client:
                yield run_on(client)
        else:
            # One thread per worker: each task is one kplab.evaluate using the worker's core.
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                yield run_on(client)
