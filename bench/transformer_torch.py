#!/usr/bin/python3
"""PyTorch side of the transformer encoder throughput benchmark, with PyTorch's best CPU settings.

    /usr/bin/python3 bench/transformer_torch.py SNAPSHOT_DIR IDS_FILE --threads T [--procs P]
                     [--batch-size 32] [--dump FILE.npy]

SNAPSHOT_DIR: a sentence-transformers snapshot (config.json with model_type bert or mpnet,
model.safetensors, modules.json, 1_Pooling/config.json). IDS_FILE: one token-id sequence a
line, space-separated ids including the special tokens (kplab writes it, already truncated).

The model is tests/data/transformer/torch_reference.py's float32 encoder (torch modules
loaded with the snapshot's weights). Like sentence-transformers' encode(): sequences sorted
longest first (which keeps the padding of a batch small), right-padded batches, forward under
torch.inference_mode(), the snapshot's pooling, L2 normalization if modules.json has a
Normalize module. PyTorch's CPU best practice on top of that:
  * OMP_WAIT_POLICY=PASSIVE (unless set): Debian's torch runs its element-wise work in a libgomp
    pool whose idle threads otherwise spin, and its matrix products in OpenBLAS' own pthread pool,
    so at 2 threads a spinning OpenMP thread takes the core an OpenBLAS thread needs;
  * OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS = T, read when the libraries load
    (torch.set_num_threads does not size OpenBLAS' pool);
  * --procs P: P worker processes of T threads each, forked after the weights are loaded, each
    embedding every P-th batch (sentence-transformers' start_multi_process_pool / encode_multi_process,
    the data-parallel way to use several CPU cores; kplab does the same with its threads).
Only the embedding is timed (not loading, sorting or padding the id lists, nor starting the workers):
wall from the first batch to the last vector; CPU = user + system time of every thread of the
process(es) over the embedding (each worker's own with --procs). Prints one JSON line: {"phrases": n,
"seconds": wall, "cpu_seconds": cpu, "tokens": real tokens, "padded_tokens": tokens the network ran
(real + padding), ...}. --dump FILE.npy writes the vectors (rows in the ids file's order) for the
benchmark's agreement check. Needs Debian's python3-torch.
"""

import argparse
import json
import os
import pickle
import sys
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "data", "transformer"))

# torch and ref are imported in main(), after the thread environment is set.
torch = ref = None


def read_ids(path, pad_id, vocab_size, max_len):
    seqs = []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                sys.exit(f"{path}:{lineno}: empty line; expected space-separated token ids")
            try:
                ids = [int(x) for x in fields]
            except ValueError:
                sys.exit(f"{path}:{lineno}: expected space-separated integer token ids, "
                         f"got {line.strip()[:60]!r}")
            bad = [i for i in ids if not 0 <= i < vocab_size]
            if bad:
                sys.exit(f"{path}:{lineno}: token id {bad[0]} outside the vocabulary "
                         f"[0, {vocab_size})")
            if len(ids) > max_len:
                sys.exit(f"{path}:{lineno}: {len(ids)} tokens, more than the model's "
                         f"{max_len} positions")
            seqs.append(ids)
    if not seqs:
        sys.exit(f"{path}: no sequences")
    return seqs


def main():
    ap = argparse.ArgumentParser(description="PyTorch transformer encoder throughput")
    ap.add_argument("snapshot")
    ap.add_argument("ids_file")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--procs", type=int, default=1, help="worker processes of --threads threads each")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--dump", help="write the vectors (float32 .npy, rows in the ids file's order) here")
    args = ap.parse_args()
    if args.threads < 1 or args.batch_size < 1 or args.procs < 1:
        ap.error("--threads, --procs and --batch-size must be positive")

    # Debian's torch does its GEMMs in OpenBLAS (pthread build), whose pool is sized from
    # the environment at load time, not by torch.set_num_threads: without this a
    # "--threads 1" run still multiplies on every core and oversubscribes with OpenMP.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    global torch, ref
    import torch
    import torch_reference as ref
    torch.set_num_threads(args.threads)
    with open(os.path.join(args.snapshot, "config.json")) as f:
        cfg = json.load(f)
    model, pooling, normalize = ref.load_snapshot(args.snapshot, torch.float32)
    pad_id = cfg.get("pad_token_id", 0)
    max_len = cfg["max_position_embeddings"] - (2 if cfg["model_type"] == "mpnet" else 0)
    seqs = read_ids(args.ids_file, pad_id, cfg["vocab_size"], max_len)

    # sentence-transformers sorts by length, longest first, then batches in that order.
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    batches = []
    for start in range(0, len(order), args.batch_size):
        chunk = [seqs[i] for i in order[start:start + args.batch_size]]
        n = max(len(s) for s in chunk)
        ids = torch.full((len(chunk), n), pad_id, dtype=torch.long)
        mask = torch.zeros(len(chunk), n, dtype=torch.bool)
        for row, s in enumerate(chunk):
            ids[row, :len(s)] = torch.tensor(s)
            mask[row, :len(s)] = True
        batches.append((ids, mask))

    dim = cfg["hidden_size"]

    def embed(mine):  # the vectors of batches[i] for i in mine, in that order
        outs = []
        with torch.inference_mode():
            for i in mine:
                ids, mask = batches[i]
                emb = ref.pool(model(ids, mask)[-1], mask, pooling)
                if normalize:
                    emb = ref.l2_normalize(emb)
                assert emb.shape[1] == dim
                outs.append(emb)
        return outs

    # One untimed pass over the shortest batch first, in each process that embeds: PyTorch's first
    # forward pays one-off costs (allocator, OpenBLAS buffers; in a forked worker, copy-on-write faults)
    # that a long-running encoder pays once. kplab's timed calls get no such warm-up.
    if args.procs == 1:
        embed([len(batches) - 1])
        cpu0, t0 = time.process_time(), time.perf_counter()
        outs = embed(range(len(batches)))
        seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    else:
        # sentence-transformers' pool: the workers are started first (forked after loading, so they share
        # the weights' pages) and wait; the clock starts when they are told to go and stops when the last
        # vectors are back, so process start and exit are not timed (the pool is started once, before
        # encoding). Worker w embeds batches w, w+P, ... (longest first: the slices are balanced) and
        # sends its vectors and the CPU seconds it spent on them through a pipe.
        workers = []
        for w in range(args.procs):
            go_r, go_w = os.pipe()
            out_r, out_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(go_w)
                os.close(out_r)
                embed([len(batches) - 1])
                os.write(out_w, b"r")  # ready
                os.read(go_r, 1)
                cpu0 = time.process_time()
                vecs = [e.numpy() for e in embed(range(w, len(batches), args.procs))]
                data = pickle.dumps((vecs, time.process_time() - cpu0))
                with os.fdopen(out_w, "wb") as f:
                    f.write(data)
                os._exit(0)
            os.close(go_r)
            os.close(out_w)
            workers.append((pid, go_w, out_r))
        for _, _, out_r in workers:
            if os.read(out_r, 1) != b"r":
                sys.exit("transformer_torch.py: a worker failed before embedding")
        t0 = time.perf_counter()
        for _, go_w, _ in workers:
            os.write(go_w, b"g")
        parts, cpu = [], 0.0
        for _, _, out_r in workers:
            with os.fdopen(out_r, "rb") as f:
                vecs, c = pickle.loads(f.read())
            parts.append(vecs)
            cpu += c
        seconds = time.perf_counter() - t0
        for pid, go_w, _ in workers:
            os.close(go_w)
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit("transformer_torch.py: worker %d failed" % pid)
        outs = [None] * len(batches)
        for w, part in enumerate(parts):
            for k, e in enumerate(part):
                outs[w + k * args.procs] = torch.from_numpy(e)
    checksum = float(sum(float(e.sum()) for e in outs))
    if args.dump:
        import numpy as np
        table = np.zeros((len(seqs), outs[0].shape[1] if outs else dim), dtype=np.float32)
        table[order] = torch.cat(outs).numpy() if outs else table[order]
        np.save(args.dump, table)
    print(json.dumps({
        "phrases": len(seqs), "seconds": round(seconds, 6), "cpu_seconds": round(cpu, 6),
        "phrases_per_s": round(len(seqs) / seconds, 3), "threads": args.threads, "procs": args.procs,
        "batch_size": args.batch_size, "pooling": pooling, "normalize": normalize,
        "tokens": sum(len(s) for s in seqs), "padded_tokens": sum(int(ids.numel()) for ids, _ in batches),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"), "checksum": checksum,
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
