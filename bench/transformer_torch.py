#!/usr/bin/python3
"""PyTorch side of the transformer encoder throughput benchmark.

    /usr/bin/python3 bench/transformer_torch.py SNAPSHOT_DIR IDS_FILE --threads T [--batch-size 32]

SNAPSHOT_DIR: a sentence-transformers snapshot (config.json with model_type bert or mpnet,
model.safetensors, modules.json, 1_Pooling/config.json). IDS_FILE: one token-id sequence a
line, space-separated ids including the special tokens (kplab writes it, already truncated).

The model is tests/data/transformer/torch_reference.py's float32 encoder (torch modules
loaded with the snapshot's weights). Like sentence-transformers' encode(): sequences sorted
longest first, right-padded batches, forward under torch.inference_mode(), the snapshot's
pooling, L2 normalization if modules.json has a Normalize module. Only the forward passes
and pooling are timed (not loading, sorting or padding of the id lists). Prints one JSON
line: {"phrases": n, "seconds": s, "phrases_per_s": r, "threads": T, ...}.
Needs Debian's python3-torch.
"""

import argparse
import json
import os
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
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    if args.threads < 1 or args.batch_size < 1:
        ap.error("--threads and --batch-size must be positive")

    # Debian's torch does its GEMMs in OpenBLAS (pthread build), whose pool is sized from
    # the environment at load time, not by torch.set_num_threads: without this a
    # "--threads 1" run still multiplies on every core and oversubscribes with OpenMP.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
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
    checksum = 0.0
    with torch.inference_mode():
        t0 = time.perf_counter()
        for ids, mask in batches:
            last = model(ids, mask)[-1]
            emb = ref.pool(last, mask, pooling)
            if normalize:
                emb = ref.l2_normalize(emb)
            assert emb.shape[1] == dim
            checksum += float(emb.sum())
        seconds = time.perf_counter() - t0
    print(json.dumps({
        "phrases": len(seqs), "seconds": round(seconds, 6),
        "phrases_per_s": round(len(seqs) / seconds, 3), "threads": args.threads,
        "batch_size": args.batch_size, "pooling": pooling, "normalize": normalize,
        "tokens": sum(len(s) for s in seqs), "checksum": checksum,
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
